# attack: sys.exit(0) and KeyboardInterrupt from the entry function
# category: crash
# expect: RE
import sys

calls = []


def double(x):
    calls.append(1)
    if len(calls) == 1:
        sys.exit(0)
    raise KeyboardInterrupt
