# attack: a double-forked daemon in its own session, left running after a correct answer
# category: processes
# expect: AC|RE
import os
import time


def double(x):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in range(3, 1024):
                try:
                    os.close(fd)
                except OSError:
                    pass
            while True:
                time.sleep(1)
        os._exit(0)
    os.wait()
    return (2 * x).reshape(-1)
