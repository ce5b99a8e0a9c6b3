# attack: fork bomb
# category: processes
# expect: TLE|RE|MLE
import os


def double(x):
    while True:
        try:
            os.fork()
        except OSError:
            pass
