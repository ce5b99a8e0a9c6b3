# attack: NaN and Inf, hoping a comparison treats them as equal or skips them
# category: cheating
# expect: WA
import numpy as np

calls = []


def double(x):
    calls.append(1)
    out = (2 * x).reshape(-1).astype(np.float64)
    out[0] = [np.nan, np.inf, -np.inf][len(calls) % 3]
    return out
