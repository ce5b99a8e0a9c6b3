# attack: 64 threads burning CPU while the main thread sleeps
# category: time
# expect: TLE|RE
import threading
import time


def spin():
    while True:
        pass


def double(x):
    for _ in range(64):
        threading.Thread(target=spin, daemon=True).start()
    time.sleep(3600)
