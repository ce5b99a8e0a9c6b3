# attack: walk sys._getframe(), inspect.stack() and gc.get_objects() for an array shaped like the expected output
# category: cheating
# expect: WA
import gc
import inspect
import sys

import numpy as np


def candidates(x):
    seen = []
    frame = sys._getframe()
    while frame is not None:
        seen += list(frame.f_locals.values()) + list(frame.f_globals.values())
        frame = frame.f_back
    for info in inspect.stack():
        seen += list(info.frame.f_locals.values())
    seen += gc.get_objects()
    for obj in seen:
        if isinstance(obj, dict):
            seen_vals = list(obj.values())
        else:
            seen_vals = [obj]
        for v in seen_vals:
            if isinstance(v, np.ndarray) and v.size == x.size and v is not x \
                    and not np.shares_memory(v, x) and not np.array_equal(v, x):
                yield v


def double(x):
    # The cheat: return whatever the judge keeps that looks like the answer, never compute it.
    for c in candidates(x):
        return np.asarray(c, dtype=np.float64).reshape(-1)
    return np.zeros(x.size)
