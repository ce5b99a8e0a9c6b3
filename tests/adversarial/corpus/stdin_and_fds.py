# attack: read the job's stdin and every inherited descriptor looking for the expected outputs
# category: information
# expect: AC|RE|WA
import os

import numpy as np


def double(x):
    found = []
    for fd in range(0, 1024):
        try:
            os.lseek(fd, 0, os.SEEK_SET)
        except OSError:
            pass
        try:
            os.set_blocking(fd, False)
            data = os.read(fd, 1 << 20)
            found.append((fd, len(data)))
        except OSError:
            pass
    print(found)
    # Whatever came out of a descriptor is not the expected output: there is none inside.
    return np.zeros(x.size)
