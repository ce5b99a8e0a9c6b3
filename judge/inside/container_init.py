"""PID 1 of a sandbox container (run as `python -I -S -B -c THIS RUNNER MAX_LIFE_S`).

A container gives the judge two output streams; a sandbox needs three (the submission's stdout
and stderr, and the runner's result channel). This process starts the runner with each on a
pipe of its own (the channel as fd 3, where bubblewrap's sandboxes have it too) and forwards
what comes out as records on its own stdout: one byte naming the stream, four bytes of length,
the bytes. A fourth kind of record is its own: what the container's memory cgroup says (the
judge may not see that cgroup: a judge in a container of its own does not), as JSON.

stdin is the judge's attach connection, forwarded to the runner through a pipe (the runner
reads its two messages and closes its end). The judge never closes it; its end of file means
the judge is gone (or has destroyed the sandbox): the runner is killed and this process exits,
so the engine removes the container (it is started with auto-remove) at once rather than
when MAX_LIFE_S is up. Once the runner has ended, this process reports its status (128 + N
for a signal, as a shell would) and waits for that end of file before it exits with that
status: the engine's teardown of the container then comes when the judge is done with it
(after the verdict is out), not beside the verdict's last steps. It holds nothing the
submission does not already have: forging a record only garbles the submission's own result.
"""

import contextlib
import ctypes
import json
import os
import select
import signal
import struct
import sys
import time

OUT, ERR, CHAN, STATE = 1, 2, 3, 4
SAMPLE_S = 0.25  # how often the memory cgroup is looked at while the runner lives
# cgroup v1 (the container's own memory group mounted there) or v2 (its own namespace).
V1 = "/sys/fs/cgroup/memory/"
V2 = "/sys/fs/cgroup/"


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _number(path):
    text = _read(path).strip()
    return int(text) if text.isdigit() else None


def _stat(path, key):
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


class Memory:
    """The container's memory cgroup. `pressing()` is the test of the bubblewrap backend's
    Cgroup.pressing_limit, spread over two samples: usage within an eighth of the limit and
    pages read back from disk (major faults) since the last sample, i.e. a process stalled
    at its limit rather than computing near it."""

    def __init__(self):
        if os.path.exists(V1 + "memory.limit_in_bytes"):
            d, names = V1, ("memory.limit_in_bytes", "memory.usage_in_bytes", "memory.oom_control")
        else:
            d, names = V2, ("memory.max", "memory.current", "memory.events")
        self.limit, self.usage, self.events = (d + n for n in names)
        self.stat = d + "memory.stat"
        self.faults = _stat(self.stat, "pgmajfault")

    def pressing(self):
        faults = _stat(self.stat, "pgmajfault")
        before, self.faults = self.faults, faults
        limit, usage = _number(self.limit), _number(self.usage)
        if None in (limit, usage, faults, before):
            return False
        return usage >= limit - limit // 8 and faults > before

    def oom_kills(self):
        return _stat(self.events, "oom_kill")


def _send(kind, data):
    view = memoryview(struct.pack(">BI", kind, len(data)) + data)
    while view:
        view = view[os.write(1, view):]


def _state(**fields):
    _send(STATE, json.dumps(fields).encode())


def main() -> None:
    runner, max_life = sys.argv[1], float(sys.argv[2])
    # No /proc/1/mem or ptrace for processes of the same uid.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    pipes = {OUT: os.pipe(), ERR: os.pipe(), CHAN: os.pipe()}
    stdin_r, stdin_w = os.pipe()
    to_runner = [stdin_w]  # until the runner closes its end
    # The runner's end wakes the loop at once (not at its next sample): a byte on this pipe.
    child_r, child_w = os.pipe()
    for fd in (child_r, child_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(child_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pid = os.fork()
    if pid == 0:
        os.dup2(stdin_r, 0)
        os.dup2(pipes[OUT][1], 1)
        os.dup2(pipes[ERR][1], 2)
        os.dup2(pipes[CHAN][1], 3)
        os.closerange(4, 1024)
        os.execv(sys.executable, [sys.executable, "-I", "-S", "-B", "-c", runner])
    os.close(stdin_r)
    os.set_blocking(stdin_w, False)
    pending = bytearray()  # of stdin, not yet taken by the runner
    readers = {}
    for stream, (r, w) in pipes.items():
        os.close(w)
        readers[r] = stream
    memory = Memory()
    oom_before = memory.oom_kills() or 0
    end = time.monotonic() + max_life
    status = None
    drain_until = None
    judge_gone = False
    sampled, pressing = time.monotonic(), False
    while readers:
        now = time.monotonic()
        if status is None and (now >= end or judge_gone):
            os.kill(pid, signal.SIGKILL)
        if drain_until is not None and now >= drain_until:
            break  # the runner is gone; a grandchild holding a pipe does not keep us
        if status is None and now - sampled >= SAMPLE_S:
            sampled = now
            if memory.pressing() != pressing:
                pressing = not pressing
                _state(pressing=pressing)
        watched = [*readers, child_r] + ([] if judge_gone else [0])
        ready, can_write, _ = select.select(watched, to_runner if pending else [], [],
                                            SAMPLE_S)
        if can_write:
            try:
                del pending[:os.write(stdin_w, pending)]
            except BlockingIOError:
                pass
            except OSError:  # the runner has read its job and closed its end
                os.close(stdin_w)
                to_runner.clear()
                pending.clear()
        for fd in ready:
            if fd == child_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(child_r, 256)
                continue
            data = os.read(fd, 1 << 16)
            if fd == 0:
                if not data:
                    judge_gone = True
                elif to_runner:
                    pending += data
                continue
            if not data:
                del readers[fd]
                continue
            _send(readers[fd], data)
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
                # Whatever the runner left running ends with it, as it would with the
                # container; its pipes then close once what was written is read.
                with contextlib.suppress(OSError):
                    os.kill(-1, signal.SIGKILL)
    if status is None:
        _, status = os.waitpid(pid, 0)
    code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    with contextlib.suppress(OSError):
        _state(exit=code, oom_killed=(memory.oom_kills() or 0) > oom_before)
    while not judge_gone and time.monotonic() < end:
        ready, _, _ = select.select([0], [], [], end - time.monotonic())
        if ready and not os.read(0, 1 << 16):
            judge_gone = True
    os._exit(code)


main()
