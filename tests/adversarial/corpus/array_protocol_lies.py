# attack: a non-array object whose __array__, __len__, __iter__ and __getitem__ disagree with each other
# category: cheating
# expect: WA|RE
import numpy as np


class Shapeshifter:
    calls = 0

    def __init__(self, n):
        self.n = n

    def __array__(self, dtype=None, copy=None):
        Shapeshifter.calls += 1
        return np.full(self.n, float(Shapeshifter.calls), dtype=dtype)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return 0.0

    def __eq__(self, other):
        return True

    def __float__(self):
        return 0.0


def double(x):
    return Shapeshifter(x.size)
