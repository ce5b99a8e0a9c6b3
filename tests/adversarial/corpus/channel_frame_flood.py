# attack: millions of tiny valid frames on the result channel (the host keeping every one)
# category: channel
# expect: RE
import json
import os
import struct


def double(x):
    body = json.dumps({"ev": "log", "nbytes": 0}).encode()
    blob = (struct.pack(">I", len(body)) + body) * 4096
    fds = [int(f) for f in os.listdir("/proc/self/fd") if int(f) > 2]
    while True:
        for fd in fds:
            try:
                os.write(fd, blob)
            except OSError:
                pass
