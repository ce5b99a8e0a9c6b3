# attack: read the environment: its own, /proc/1/environ, /proc/1/cmdline and every visible process's
# category: information
# expect: AC
import os


def double(x):
    seen = repr(dict(os.environ))
    for pid in os.listdir("/proc"):
        if pid.isdigit() or pid in ("self", "thread-self"):
            for what in ("environ", "cmdline", "status", "maps", "mountinfo"):
                try:
                    seen += open(f"/proc/{pid}/{what}", "rb").read().decode(errors="replace")
                except OSError:
                    pass
    print(seen[:12000])
    return (2 * x).reshape(-1)
