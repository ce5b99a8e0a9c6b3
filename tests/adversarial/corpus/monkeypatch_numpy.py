# attack: monkeypatch NumPy's comparisons (allclose, isclose, array_equal, testing) to always agree
# category: cheating
# expect: WA
import numpy as np
import numpy.testing

np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.testing.assert_array_almost_equal = lambda *a, **k: None
np.abs = np.absolute = lambda a, *r, **k: np.zeros(np.shape(a))
np.core = getattr(np, "core", None)


def double(x):
    return np.zeros(x.size)
