"""PID 1 of a sandbox container (run as `python -I -S -B -c THIS RUNNER MAX_LIFE_S`).

A container gives the judge two output streams; a sandbox needs three (the submission's stdout
and stderr, and the runner's result channel). This process starts the runner with each on a
pipe of its own (the channel as fd 3, where bubblewrap's sandboxes have it too) and forwards
what comes out as records on its own stdout: one byte naming the stream, four bytes of length,
the bytes. stdin is the runner's, untouched. It exits with the runner's status (128 + N for a
signal, as a shell would), and ends a runner still alive after MAX_LIFE_S, so a container whose
judge died does not wait for a job forever. It holds nothing the submission does not already
have: forging a record only garbles the submission's own result.
"""

import contextlib
import ctypes
import os
import select
import signal
import struct
import sys
import time

OUT, ERR, CHAN = 1, 2, 3


def main() -> None:
    runner, max_life = sys.argv[1], float(sys.argv[2])
    # No /proc/1/mem or ptrace for processes of the same uid.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    pipes = {OUT: os.pipe(), ERR: os.pipe(), CHAN: os.pipe()}
    pid = os.fork()
    if pid == 0:
        os.dup2(pipes[OUT][1], 1)
        os.dup2(pipes[ERR][1], 2)
        os.dup2(pipes[CHAN][1], 3)
        os.closerange(4, 1024)
        os.execv(sys.executable, [sys.executable, "-I", "-S", "-B", "-c", runner])
    readers = {}
    for stream, (r, w) in pipes.items():
        os.close(w)
        readers[r] = stream
    end = time.monotonic() + max_life
    status = None
    drain_until = None
    while readers:
        now = time.monotonic()
        if status is None and now >= end:
            os.kill(pid, signal.SIGKILL)
        if drain_until is not None and now >= drain_until:
            break  # the runner is gone; a grandchild holding a pipe does not keep us
        ready, _, _ = select.select(list(readers), [], [], 0.5)
        for fd in ready:
            data = os.read(fd, 1 << 16)
            if not data:
                del readers[fd]
                continue
            record = struct.pack(">BI", readers[fd], len(data)) + data
            view = memoryview(record)
            while view:
                view = view[os.write(1, view):]
        while True:  # PID 1 reaps every orphan
            try:
                done, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                break
            if done == pid:
                status = st
                drain_until = time.monotonic() + 0.5
    if status is None:
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


main()
