# attack: subprocess writing marker files on host paths
# category: kernel
# expect: RE|AC
import json
import subprocess

MARKERS = json.loads('__TJ_MARKERS__')


def double(x):
    for m in MARKERS:
        try:
            subprocess.run(["/bin/sh", "-c", f"echo escaped > {m}"], timeout=5)
        except Exception:
            pass
    return (2 * x).reshape(-1)
