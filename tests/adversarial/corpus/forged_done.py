# attack: a forged `done` frame before any test reported, to leave the run with nothing judged
# category: channel
# expect: RE
import json
import os
import struct
import time


def double(x):
    body = json.dumps({"ev": "done", "nbytes": 0}).encode()
    for fd in range(3, 1024):
        try:
            os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            pass
    time.sleep(5)
