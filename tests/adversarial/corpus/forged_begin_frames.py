# attack: sleeps for ever, forging well-ordered frames (`result` then `begin` of the next test, each just before the deadline) to push the time limit back
# category: time
# expect: TLE
import json
import os
import struct
import time


def frame(header):
    body = json.dumps(dict(header, nbytes=0)).encode()
    return struct.pack(">I", len(body)) + body


def pipes():
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if int(fd) > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                out.append(int(fd))
        except OSError:
            pass
    return out


def double(x):
    fds = pipes()
    test = 0
    while True:
        time.sleep(1.2)
        forged = [{"ev": "begin", "test": 0}] if test >= 3 else [
            {"ev": "result", "test": test}, {"ev": "begin", "test": test + 1}]
        for fd in fds:
            for header in forged:
                try:
                    os.write(fd, frame(header))
                except OSError:
                    pass
        test += 1
