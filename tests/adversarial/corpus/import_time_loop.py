# attack: infinite loop at import time, before the entry function exists
# category: time
# expect: TLE
while True:
    pass


def double(x):
    return (2 * x).reshape(-1)
