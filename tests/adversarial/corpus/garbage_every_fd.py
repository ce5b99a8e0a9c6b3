# attack: garbage written to every descriptor 3..1023 (the private result channel among them)
# category: channel
# expect: RE
import os


def double(x):
    for fd in range(3, 1024):
        try:
            os.write(fd, b"\xff\xff\xff\xffgarbage" * 100)
        except OSError:
            pass
    return (2 * x).reshape(-1)
