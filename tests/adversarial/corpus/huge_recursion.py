# attack: unbounded recursion through C code with the recursion limit lifted (C stack overflow)
# category: crash
# expect: RE
import sys

sys.setrecursionlimit(10**9)


def down(n):
    # Python-to-Python calls no longer use the C stack; going through map() does, every level.
    return sum(map(down, (n + 1,))) + 1


def double(x):
    return down(0)
