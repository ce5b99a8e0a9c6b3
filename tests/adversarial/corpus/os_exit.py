# attack: os._exit(0) in the middle of a test, without a result
# category: crash
# expect: RE
import os


def double(x):
    os._exit(0)
