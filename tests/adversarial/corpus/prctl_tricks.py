# attack: prctl: child subreaper, parent-death signal, dumpable, drop no_new_privs, seccomp mode 0; os.setsid
# category: kernel
# expect: AC|RE
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
PR_SET_SECCOMP, PR_SET_CHILD_SUBREAPER, PR_CAPBSET_DROP = 22, 36, 24


def double(x):
    out = {}
    for name, args in (("subreaper", (PR_SET_CHILD_SUBREAPER, 1)), ("pdeathsig", (PR_SET_PDEATHSIG, 0)),
                       ("dumpable", (PR_SET_DUMPABLE, 1)), ("nnp-off", (PR_SET_NO_NEW_PRIVS, 0)),
                       ("seccomp-off", (PR_SET_SECCOMP, 0)), ("capbset", (PR_CAPBSET_DROP, 0))):
        out[name] = libc.prctl(*args, 0, 0, 0)
    try:
        os.setsid()
    except OSError as e:
        out["setsid"] = str(e)
    status = open("/proc/self/status").read()
    print(out, [ln for ln in status.splitlines() if ln.startswith(("NoNewPrivs", "Seccomp", "Cap"))])
    return (2 * x).reshape(-1)
