# attack: thread bomb (sleeping threads until the system refuses more)
# category: processes
# expect: TLE|RE|MLE
import threading
import time


def double(x):
    while True:
        try:
            threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
        except RuntimeError:
            pass
