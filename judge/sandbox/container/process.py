"""The streams of one sandbox container, as the judge's I/O loop needs them.

The engine gives one attach socket per container: its stdin, and its stdout and stderr
multiplexed (8-byte frame headers). The container's PID 1 (container_init.py) carries three
streams in its stdout as records (1 byte stream, 4 bytes length); a thread here splits them
back onto three pipes, so the loop reads a container exactly as it reads a local process. A
fourth kind of record says what the container's memory cgroup showed: whether it is pressing
its limit, and at the end the runner's exit status and whether the OOM killer struck.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from typing import IO, Any

from judge.sandbox.container.host_cgroups import HostCgroups

STATE = 4  # container_init's own records


class _Stdin:
    """The container's stdin, a half of the attach socket. Closing it does not end the
    container's input: that end of file tells the container its judge is gone
    (container_init.py), so it comes only when the whole socket is closed."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self.closed = False

    def write(self, data: bytes) -> int:
        self._sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class ContainerProcess:
    """The container's main process as the I/O loop sees it: stdin, stdout and stderr, plus
    the result channel, demultiplexed from the attach stream by a thread of its own."""

    def __init__(self, api: Any, cid: str, sock: socket.socket):
        self.api, self.cid, self._sock = api, cid, sock
        self.pid = 0
        self.returncode: int | None = None
        self.cpu_s: float | None = None
        # From container_init's records: the memory cgroup at its limit and faulting now,
        # the OOM killer's work, and the exit status when it reported one.
        self.pressing = False
        self.oom_killed = False
        self.reported_exit: int | None = None
        self._groups: HostCgroups | None = None
        out_r, self._out_w = os.pipe()
        err_r, self._err_w = os.pipe()
        self.chan_r, self._chan_w = os.pipe()
        self.stdin: IO[bytes] | None = _Stdin(sock)  # type: ignore[assignment]
        self.stdout: IO[bytes] | None = os.fdopen(out_r, "rb", buffering=0)
        self.stderr: IO[bytes] | None = os.fdopen(err_r, "rb", buffering=0)
        self.ended = threading.Event()  # the container is gone (its stream ended)
        # Its runner is gone: container_init reported its status (and then waits for the
        # judge to be done with the container), or the container itself is.
        self.exited = threading.Event()
        # Set once the run is over: what still comes is dropped, so a reader that stopped
        # reading (output over the limit, say) never blocks the thread that must see the end.
        self.stopped = threading.Event()
        for fd in (self._out_w, self._err_w, self._chan_w):
            os.set_blocking(fd, False)
        self._thread = threading.Thread(target=self._demux, daemon=True,
                                        name=f"tj-container-{cid[:12]}")
        self._thread.start()

    def _demux(self) -> None:
        """Engine frames (8-byte headers: stream, size) hold container_init's records
        (1 byte stream, 4 bytes size). Only its stdout carries records; its stderr (Python
        failing before the runner starts) is the submission's stderr as well."""
        sinks = {1: self._out_w, 2: self._err_w, 3: self._chan_w}
        engine = bytearray()
        records = bytearray()
        try:
            while True:
                try:
                    data = self._sock.recv(1 << 16)
                except OSError:
                    break
                if not data:
                    break
                engine += data
                for stream, chunk in _records(engine, 8):
                    if stream == 2:
                        if 2 in sinks:
                            self._write(sinks[2], chunk)
                        continue
                    records += chunk
                    for kind, payload in _records(records, 5):
                        if kind == STATE:
                            self._state(payload)
                            if self.reported_exit is not None:
                                # All the runner wrote came before: its streams end here.
                                _close_all(sinks)
                                self.exited.set()
                            continue
                        sink = sinks.get(kind)
                        if sink is not None:
                            self._write(sink, payload)
        finally:
            _close_all(sinks)
            self.ended.set()
            self.exited.set()

    def _state(self, payload: bytes) -> None:
        try:
            state = json.loads(payload)
        except ValueError:
            return
        if not isinstance(state, dict):
            return
        if "pressing" in state:
            self.pressing = bool(state["pressing"])
        if isinstance(state.get("exit"), int):
            self.oom_killed = bool(state.get("oom_killed"))
            self.reported_exit = state["exit"]

    def _write(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.stopped.is_set():
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                select.select([], [fd], [], 0.1)
            except OSError:
                return  # the reader is gone: the run is over

    @property
    def groups(self) -> HostCgroups:
        """Its cgroups as this host shows them, looked up once (they exist from its start)."""
        if self._groups is None:
            self._groups = HostCgroups.find(self.cid)
        return self._groups

    def cpu_seconds(self) -> float | None:
        """The container's CPU time, from its cgroup where this host shows it; None
        elsewhere: its limits are then on the wall clock."""
        return self.groups.cpu_seconds()

    def computing(self) -> bool:
        return self.groups.computing()

    def memory_bytes(self) -> int | None:
        """Memory charged to the container now, where this host shows it; None elsewhere."""
        return self.groups.memory_bytes()

    def poll(self) -> int | None:
        if self.returncode is None and self.exited.is_set():
            self._take_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Until its runner is gone (the container may stay until the judge is done with it:
        end_input)."""
        if not self.exited.wait(timeout):
            raise subprocess.TimeoutExpired("sandbox container", timeout or 0)
        self._take_status()
        assert self.returncode is not None
        return self.returncode

    def _take_status(self) -> None:
        code = self.reported_exit
        if code is None:  # killed whole (by the judge, or the OOM killer took PID 1)
            try:
                code = int(self.api.wait(self.cid, timeout=5)["StatusCode"])
            except Exception:  # noqa: BLE001 - removed already (auto-remove): killed
                code = 128 + 9
        # As a Popen says it: -N for a death by signal N (container_init exits 128 + N).
        self.returncode = -(code - 128) if code > 128 else code

    def end_input(self) -> None:
        """The end of the container's input (its output still comes): for container_init,
        the judge is done with it."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        for f in (self.stdout, self.stderr):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()
        with contextlib.suppress(OSError):
            os.close(self.chan_r)


def _close_all(fds: dict[int, int]) -> None:
    """Close the pipe ends and forget them (an fd number closed once may be another's next)."""
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


def _records(buf: bytearray, head: int) -> Iterator[tuple[int, bytes]]:
    """Take the complete records off the front of `buf`: a `head`-byte header that starts
    with the record's kind and ends with its size (4 bytes, big-endian), then the payload."""
    while len(buf) >= head:
        size = struct.unpack(">I", buf[head - 4:head])[0]
        if len(buf) < head + size:
            return
        kind, payload = buf[0], bytes(buf[head:head + size])
        del buf[:head + size]
        yield kind, payload
