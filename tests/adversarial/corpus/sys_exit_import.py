# attack: sys.exit(0) at import time
# category: crash
# expect: RE
import sys

sys.exit(0)


def double(x):
    return (2 * x).reshape(-1)
