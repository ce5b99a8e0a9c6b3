# attack: fill the private /tmp (a 64 MiB tmpfs) until the device is full, in files under the 16 MiB file-size limit
# category: disk
# expect: RE|MLE
import itertools


def double(x):
    chunk = b"x" * (1 << 20)
    for i in itertools.count():
        with open(f"/tmp/tj-plant-fill-{i}", "wb") as f:
            for _ in range(8):
                f.write(chunk)
                f.flush()
