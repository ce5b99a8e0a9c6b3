# attack: a gigantic result (10^9 float64 elements)
# category: output
# expect: MLE|RE|WA
import numpy as np


def double(x):
    return np.broadcast_to(np.float64(1.0), (10**9,))
