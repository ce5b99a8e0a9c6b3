# attack: write marker files to host paths (/tmp, the data directory, the cache, the repository, /root)
# category: isolation
# expect: AC
import json
import os

MARKERS = json.loads('__TJ_MARKERS__')


def double(x):
    for m in MARKERS:
        try:
            os.makedirs(os.path.dirname(m), exist_ok=True)
            with open(m, "w") as f:
                f.write("escaped")
        except OSError:
            pass
    return (2 * x).reshape(-1)
