# attack: forged result frames (all zeros) printed on stdout
# category: channel
# expect: WA
import json
import struct
import sys

import numpy as np


def double(x):
    for i in range(3):
        h = json.dumps({"ev": "result", "test": i, "time_ms": 1, "dtype": "<f8",
                        "shape": [x.size], "nbytes": 8 * x.size}).encode()
        sys.stdout.buffer.write(struct.pack(">I", len(h)) + h + bytes(8 * x.size))
    h = json.dumps({"ev": "done", "nbytes": 0}).encode()
    sys.stdout.buffer.write(struct.pack(">I", len(h)) + h)
    sys.stdout.flush()
    return np.zeros(x.size)
