# attack: ptrace attach to pid 1 (to read or steer the sandbox's init)
# category: kernel
# expect: RE
# expect-message: forbidden system call
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def double(x):
    libc.ptrace(16, 1, 0, 0)  # PTRACE_ATTACH
    return (2 * x).reshape(-1)
