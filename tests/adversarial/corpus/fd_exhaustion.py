# attack: open file descriptors until the kernel refuses, then answer
# category: resources
# expect: AC|RE
import os


def double(x):
    held = []
    try:
        while True:
            held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    for fd in held[:8]:
        os.close(fd)
    return (2 * x).reshape(-1)
