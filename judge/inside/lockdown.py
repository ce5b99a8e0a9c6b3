"""The limits the runner puts on itself once its preparation is done, before it touches the
user's code: rlimits (the CPU limit counted from the CPU already spent) and a seccomp filter
that kills the process at any syscall a submission has no business making (networking,
tracing, namespaces, mounts, kernel modules...). The filter is built while the sandbox waits
and loaded at the job.

Part of the runner: its source comes before the runner's in the one source a sandbox runs
(`judge.sandbox.sources.RUNNER_SOURCE`); pyseccomp is imported only when the filter is built.
"""

import contextlib
import resource


def _limit(res, soft, hard=None):
    hard = soft if hard is None else hard
    try:
        cur_soft, cur_hard = resource.getrlimit(res)
        if cur_hard != resource.RLIM_INFINITY:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(res, (soft, hard))
    except (ValueError, OSError):
        pass


def apply_rlimits(job):
    lim = job["rlimits"]
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    cpu = int(spent + lim["cpu_s"]) + 1
    # SIGXCPU at the soft limit, SIGKILL one second later for code that ignores it.
    _limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    _limit(resource.RLIMIT_FSIZE, lim["fsize"])
    _limit(resource.RLIMIT_NOFILE, lim["nofile"])
    _limit(resource.RLIMIT_CORE, 0)
    if lim.get("nproc"):
        _limit(resource.RLIMIT_NPROC, lim["nproc"])
    if lim.get("as_bytes"):
        _limit(resource.RLIMIT_AS, lim["as_bytes"])


KILLED_SYSCALLS = (
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "execve", "execveat",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "mount_setattr", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init", "syslog",
    "settimeofday", "clock_settime", "ioperm", "iopl", "vhangup", "personality",
)

CLONE_NS_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)


def build_seccomp():
    """The filter, built ahead (compiling it takes a few milliseconds); loaded at the job."""
    import errno

    import pyseccomp as sc

    f = sc.SyscallFilter(defaction=sc.ALLOW)
    # Every thread, not only this one: the libraries' threads (XLA's pools, started while
    # preparing) exist already, and a filter loaded without TSYNC would leave them free.
    f.set_attr(sc.Attr.CTL_TSYNC, 1)
    for name in KILLED_SYSCALLS:
        with contextlib.suppress(Exception):  # a syscall this architecture lacks
            f.add_rule(sc.KILL_PROCESS, name)
    for flag in CLONE_NS_FLAGS:
        f.add_rule(sc.KILL_PROCESS, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 hides its flags behind a pointer; ENOSYS makes libc fall back to clone().
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    return f
