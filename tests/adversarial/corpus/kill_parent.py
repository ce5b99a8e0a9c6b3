# attack: SIGKILL to the parent, to pid 1 and to the process group, then answer
# category: processes
# expect: AC|RE
import os
import signal


def double(x):
    for pid in {os.getppid(), 1}:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except OSError:
        pass
    return (2 * x).reshape(-1)
