# attack: allocate and touch 40 GiB at once
# category: memory
# expect: MLE|RE
import numpy as np


def double(x):
    a = np.ones(40 * 2**30 // 8)
    return a[: x.size]
