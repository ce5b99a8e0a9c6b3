# attack: zero the runner's master copies of every test's inputs (found through gc), then answer for zeros
# category: cheating
# expect: WA
import gc

import numpy as np


def double(x):
    for obj in gc.get_objects():
        if isinstance(obj, dict) and isinstance(obj.get("x"), np.ndarray):
            try:
                obj["x"][...] = 0
            except ValueError:
                pass
    x[...] = 0
    return (2 * x).reshape(-1)
