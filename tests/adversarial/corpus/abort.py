# attack: abort() (SIGABRT, core dumps disabled)
# category: crash
# expect: RE
import os


def double(x):
    os.abort()
