# attack: result-channel headers that are deeply nested JSON, non-numeric sizes and a 1 TiB payload claim
# category: channel
# expect: RE
import json
import os
import struct

HEADERS = [b"[" * 500000 + b"]" * 500000,
           json.dumps({"ev": "result", "test": 0, "nbytes": [1]}).encode(),
           json.dumps({"ev": "result", "test": 0, "nbytes": 1e400}).encode(),
           json.dumps({"ev": "result", "test": 0, "dtype": "<f8", "nbytes": 1 << 40}).encode()]
calls = []


def double(x):
    calls.append(1)
    body = HEADERS[(len(calls) - 1) % len(HEADERS)]
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            pass
    return (2 * x).reshape(-1)
