# attack: fill /dev/shm (on the sandbox's own /dev tmpfs, no size cap of its own) in files under the file-size limit
# category: disk
# expect: MLE|RE
import itertools
import os


def double(x):
    os.makedirs("/dev/shm", exist_ok=True)
    chunk = b"x" * (1 << 20)
    for i in itertools.count():
        with open(f"/dev/shm/tj-plant-shm-{i}", "wb") as f:
            for _ in range(8):
                f.write(chunk)
                f.flush()
