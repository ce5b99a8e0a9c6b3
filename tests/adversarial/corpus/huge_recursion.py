# attack: unbounded recursion with the recursion limit lifted (C stack overflow)
# category: crash
# expect: RE|MLE
import sys

sys.setrecursionlimit(10**9)


def down(n):
    return down(n + 1) + 1


def double(x):
    return down(0)
