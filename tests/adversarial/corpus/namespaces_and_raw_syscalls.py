# attack: raw syscalls through ctypes: unshare(CLONE_NEWUSER), bpf, perf_event_open, io_uring, userfaultfd, keyctl
# category: kernel
# expect: RE
# expect-message: forbidden system call
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
# x86_64 numbers: unshare, bpf, perf_event_open, io_uring_setup, userfaultfd, keyctl
CALLS = [(272, 0x10000000), (321, 0), (298, 0), (425, 8), (323, 0), (250, 0)]


def double(x):
    for nr, arg in CALLS:
        libc.syscall(nr, arg, 0, 0, 0, 0)
    return (2 * x).reshape(-1)
