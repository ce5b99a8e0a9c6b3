# attack: gigabytes on stdout
# category: output
# expect: OLE
import os


def double(x):
    block = b"A" * (1 << 20)
    for _ in range(4096):
        os.write(1, block)
