# attack: an ndarray subclass whose comparisons, __array__, tolist and __float__ all claim success
# category: cheating
# expect: WA
import numpy as np


class Liar(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(other), dtype=bool)

    __le__ = __ge__ = __eq__

    def __ne__(self, other):
        return np.zeros(np.shape(other), dtype=bool)

    def __lt__(self, other):
        return self.__eq__(other)

    __gt__ = __lt__

    def __sub__(self, other):
        return np.zeros(np.shape(other))

    __rsub__ = __sub__

    def __abs__(self):
        return np.zeros(self.shape)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.__dict__.get("claim", np.zeros(self.shape)), dtype=dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(np.broadcast_shapes(*(np.shape(i) for i in inputs)), dtype=bool) \
            if ufunc in (np.not_equal, np.greater) else np.ones(np.broadcast_shapes(
                *(np.shape(i) for i in inputs)), dtype=bool)

    def tolist(self):
        return [0.0] * self.size

    def __float__(self):
        return 0.0


def double(x):
    return np.zeros(x.size).view(Liar)
