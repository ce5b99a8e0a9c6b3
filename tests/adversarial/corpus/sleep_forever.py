# attack: sleeping hang (no CPU used, so only the wall clock can stop it)
# category: time
# expect: TLE
import time


def double(x):
    time.sleep(10**6)
