# attack: complex, string, datetime and structured outputs of the right size
# category: cheating
# expect: WA
import numpy as np

calls = []


def double(x):
    calls.append(1)
    n = x.size
    kinds = [np.zeros(n, dtype=np.complex128) + 2 * x.reshape(-1),
             np.array(["0"] * n), np.zeros(n, dtype="datetime64[s]"),
             np.zeros(n, dtype=[("a", "f8")])]
    return kinds[(len(calls) - 1) % len(kinds)]
