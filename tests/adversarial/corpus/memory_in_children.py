# attack: memory spread over forked children, each below the limit on its own
# category: memory
# expect: MLE|RE|TLE
import os
import time


def double(x):
    for _ in range(16):
        if os.fork() == 0:
            b = bytearray(100 << 20)
            for i in range(0, len(b), 4096):
                b[i] = 1
            time.sleep(3600)
    time.sleep(3600)
