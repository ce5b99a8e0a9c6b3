# attack: gigabytes on stderr, at import time
# category: output
# expect: OLE
import sys

block = "E" * (1 << 20)
for _ in range(4096):
    sys.stderr.write(block)


def double(x):
    return (2 * x).reshape(-1)
