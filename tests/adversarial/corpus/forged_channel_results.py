# attack: forged result frames (zeros for every test) and `done` on every descriptor 3..1023
# category: channel
# expect: WA|RE
import json
import os
import struct


def frame(header, data=b""):
    body = json.dumps(dict(header, nbytes=len(data))).encode()
    return struct.pack(">I", len(body)) + body + data


def double(x):
    for fd in range(3, 1024):
        for i in range(3):
            try:
                os.write(fd, frame({"ev": "result", "test": i, "time_ms": 1, "dtype": "<f8",
                                    "shape": [x.size]}, bytes(8 * 40)))
            except OSError:
                pass
        try:
            os.write(fd, frame({"ev": "done"}))
        except OSError:
            pass
    return (2 * x).reshape(-1)
