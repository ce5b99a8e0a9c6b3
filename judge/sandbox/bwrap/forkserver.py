"""The judge's side of a fork server (`zygote.py`): starts it inside bubblewrap, asks it for
sandboxes, and stands in for the sandbox's process where the judge would hold a Popen.

Used only where a sandbox from it is as confined as one bubblewrap starts: the judge runs as
root (so each sandbox gets its own host uid) and cgroups work (so the judge can kill a
sandbox whose first process is not its child).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from judge.sandbox.base import host_env
from judge.sandbox.bwrap.cgroups import Cgroup
from judge.sandbox.job import Kind
from judge.sandbox.priority import CpuPriority
from judge.sandbox.sources import BOOTSTRAP, ZYGOTE_SOURCE, source_descriptor
from judge.sandbox.turns import Turn

CHANNEL_FD = 3  # where the zygote puts a sandbox's result channel
log = logging.getLogger("tensorjudge.sandbox")


class ForkServerError(RuntimeError):
    """The fork server cannot give a sandbox; the caller starts one with bubblewrap instead."""


class ForkedProcess:
    """A sandbox's first process, forked by the zygote: the Popen-like face the judge's
    I/O loop needs. Exit status and CPU time come from its status pipe."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes],
                 status_fd: int):
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.returncode: int | None = None
        self.cpu_s: float | None = None
        self._status_fd: int | None = status_fd
        self._status = b""

    def _take_status(self, timeout: float) -> None:
        fd = self._status_fd
        if fd is None:
            return
        ready, _, _ = select.select([fd], [], [], max(timeout, 0.0))
        if not ready:
            return
        data = os.read(fd, 4096)
        if data and len(self._status) < 4096:
            self._status += data
            return
        os.close(fd)
        self._status_fd = None
        try:
            report = json.loads(self._status)
            self.returncode = int(report["returncode"])
            self.cpu_s = float(report["cpu_s"])
        except (ValueError, KeyError, TypeError):
            self.returncode = -9  # killed before it could report

    def poll(self) -> int | None:
        if self.returncode is None:
            self._take_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = 3600.0 if end is None else end - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired("sandbox", timeout or 0.0)
            self._take_status(left)
        return self.returncode

    def close(self) -> None:
        if self._status_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._status_fd)
            self._status_fd = None
            if self.returncode is None:
                self.returncode = -9


class ForkServer:
    """One zygote, for one set of libraries to import ahead."""

    def __init__(self, bwrap_path: str, args_r: int, exe: str, config: dict[str, Any],
                 env: dict[str, str], startup_timeout_s: float = 120.0, *,
                 group: Cgroup | None = None):
        """`args_r`: a pipe with bubblewrap's options, closed here; `config`: what the zygote
        loads (site folders, libraries, the runner's source; `background`: it prepares
        niced, restored here once it is ready); `group`: its own CPU group (weighed by its
        caller), which its launcher joins before it starts bubblewrap, removed when it
        ends."""
        self._lock = threading.Lock()
        self.group = group
        self._tail = ""
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fd = theirs.fileno()
        source = source_descriptor(ZYGOTE_SOURCE)
        try:
            self.proc = subprocess.Popen(
                launcher(group.procs_files if group is not None else [],
                         [bwrap_path, "--args", str(args_r), "--", exe, "-I", "-S", "-B",
                          "-c", BOOTSTRAP, str(source), str(fd)]),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(fd, args_r, source), env=env, cwd="/", start_new_session=True)
        except OSError as e:
            self._sock.close()
            if group is not None:
                group.remove()
            raise ForkServerError(f"cannot start the fork server: {e}") from e
        finally:
            theirs.close()
            os.close(args_r)
            os.close(source)
        try:
            self._sock.send(json.dumps(config).encode())
            self._sock.settimeout(startup_timeout_s)
            reply = self._reply()
        except (OSError, ForkServerError) as e:
            self.close()
            raise ForkServerError(f"the fork server did not start: {e}; {self._tail}") from e
        self.pid = int(reply.get("pid", 0))
        self.warmed = bool(config.get("warm"))
        if config.get("background"):
            _restore_priority(self.pid)
        if reply.get("threads") != 1 and not self.warmed:
            self.close()
            raise ForkServerError(f"the fork server has {reply.get('threads')} threads after "
                                  "its imports: forking it would not be safe")


    def _reply(self) -> dict[str, Any]:
        data = self._sock.recv(1 << 16)
        if not data:
            raise ForkServerError("the fork server exited")
        reply = json.loads(data)
        if "error" in reply:
            raise ForkServerError(reply["error"])
        return reply

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, uid: int, cgroup: Cgroup, tmpfs_bytes: int, unmount: list[str],
             background: bool) -> tuple[ForkedProcess, int]:
        """A new sandbox, waiting for its preparation frame on stdin; returns it and the
        read end of its result channel."""
        pipes = [os.pipe() for _ in range(5)]  # stdin, stdout, stderr, channel, status
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1], pipes[4][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0], pipes[3][0], pipes[4][0]]
        req = {"uid": uid, "cgroup_procs": [str(p) for p in cgroup.procs_files],
               "tmpfs_bytes": tmpfs_bytes, "unmount": unmount, "background": background}
        try:
            with self._lock:
                self._sock.settimeout(30.0)
                socket.send_fds(self._sock, [json.dumps(req).encode()], theirs)
                pid = int(self._reply()["pid"])
        except (OSError, ValueError, ForkServerError) as e:
            for fd in ours:
                os.close(fd)
            raise ForkServerError(f"the fork server gave no sandbox: {e}") from e
        finally:
            for fd in theirs:
                os.close(fd)
        proc = ForkedProcess(pid, os.fdopen(ours[0], "wb"), os.fdopen(ours[1], "rb"),
                             os.fdopen(ours[2], "rb"), ours[4])
        return proc, ours[3]

    def memory_bytes(self) -> int:
        """Its own memory: anonymous and shared-memory pages. Its libraries' file pages are
        the page cache every sandbox reads too, charged where they were first read."""
        total = 0
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith(("RssAnon:", "RssShmem:")):
                        total += int(line.split()[1]) << 10
        except (OSError, ValueError):
            return 0
        return total

    def close(self) -> None:
        """Closing the socket ends the zygote; sandboxes it forked live on until destroyed."""
        with contextlib.suppress(OSError):
            self._sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            # What it said before it ended: why it could not start, if it could not.
            with contextlib.suppress(OSError, ValueError):
                self._tail = self.proc.stderr.read()[-2000:].decode(errors="replace").strip()
            self.proc.stderr.close()
        if self.group is not None:
            self.group.remove()


def _restore_priority(pid: int) -> None:
    """Undo the zygote's `_lower_priority`: every thread's niceness and its session's
    autogroup's back to 0, so that what it forks starts at normal priority. Best effort."""
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, int(tid), 0)
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text("0")


def launcher(joins: Sequence[Path], command: list[str]) -> list[str]:
    """`command`, run by a shell that first joins the cgroups whose `cgroup.procs` files are
    `joins`: whatever it starts is in them from its first instruction, and no pre-exec
    Python hook is needed in a threaded judge."""
    if not joins:
        return command
    writes = "; ".join(f"echo $$ > {shlex.quote(str(f))}" for f in joins)
    return ["/bin/sh", "-c", f"set -e; {writes}; exec \"$@\"", "tensorjudge-sandbox"] + command


def options_pipe(options: list[str]) -> int:
    """The read end of a pipe holding bubblewrap's options, for `--args FD` (~1 KB: fits the
    pipe buffer, no reader needed)."""
    args_r, args_w = os.pipe()
    with os.fdopen(args_w, "wb") as f:
        f.write(b"\0".join(a.encode() for a in options) + b"\0")
    return args_r


@dataclass(frozen=True)
class ZygoteLaunch:
    """What starting a zygote takes of the bubblewrap sandbox it serves."""

    bwrap_path: str
    exe: str
    layout: Callable[[], list[str]]  # the sandbox's files and environment, as bwrap options
    site_dirs: list[str]
    cgroup_parents: list[Path]
    # A CPU group of its own for a zygote (CgroupManager.cpu_group), or None: it stays in
    # its judge's.
    cpu_group: Callable[[], Cgroup | None]
    tmpfs_bytes: int
    runner_source: str


def warmable(kind: Kind) -> bool:
    """Whether sandboxes of this kind are forked from a warmed server: the kinds whose
    warm-up runs JAX (Flax, or eager jax.numpy), where preparing costs seconds. NumPy and
    PyTorch sandboxes prepare in milliseconds; jitted JAX compiles its own code anyway."""
    return kind.warmup is not None and ("flax.linen" in kind.preload or kind.eager_jax)


class ForkServers:
    """A sandbox host's zygotes, started on first use: one per set of libraries imported
    ahead, and one per warmable kind (warmable()) that has also run the kind's preparation.
    Any failure means None: the caller starts that sandbox another way."""

    RETRY_AFTER_S = 60.0

    def __init__(self, launch: ZygoteLaunch, warm: bool = True):
        self.launch = launch
        self.warm = warm
        self._servers: dict[tuple[str, ...], ForkServer] = {}
        self._lock = threading.Lock()
        self._starting: dict[tuple[str, ...], threading.Lock] = {}
        # A starting server's CPU group, the weight it starts at, and the jobs' turns
        # waiting for it: it weighs as the foremost of them (turns.py), or at its own.
        self._groups: dict[tuple[str, ...], Cgroup] = {}
        self._own: dict[tuple[str, ...], CpuPriority] = {}
        self._waiters: dict[tuple[str, ...], list[Turn]] = {}
        self._broken_until: dict[tuple[str, ...], float] = {}
        self.forked = 0  # sandboxes forked
        self.forked_warm = 0  # of which from a warmed server
        self.fallbacks = 0  # sandboxes bubblewrap had to start instead

    def _args(self) -> list[str]:
        """The zygote's bubblewrap: root without a user namespace (its children take their
        own uids and namespaces), the sandbox's layout, the cgroup folders writable."""
        a = ["--unshare-ipc", "--unshare-net", "--unshare-uts", "--new-session",
             "--cap-add", "ALL"] + self.launch.layout()
        for d in self.launch.cgroup_parents:
            a += ["--bind", str(d), str(d)]
        return a

    def _live(self, key: tuple[str, ...]) -> ForkServer | None:
        with self._lock:
            server = self._servers.get(key)
            if server is not None and not server.alive():
                server.close()
                del self._servers[key]
                server = None
            return server

    def _server(self, key: tuple[str, ...], config: dict[str, Any],
                background: bool = False, turn: Turn | None = None) -> ForkServer | None:
        server = self._live(key)
        if server is not None:
            return server
        with self._lock:
            starting = self._starting.setdefault(key, threading.Lock())
        # One start per key at a time; a warmed server takes seconds, other keys go on.
        with self._waiting(key, turn), starting:
            return self._start(key, config, background)

    @contextlib.contextmanager
    def _waiting(self, key: tuple[str, ...], turn: Turn | None) -> Iterator[None]:
        """While a job (`turn`) waits for the server of `key`, the server weighs as the
        foremost job waiting."""
        if turn is None:
            yield
            return
        with self._lock:
            self._waiters.setdefault(key, []).append(turn)
        unfollow = turn.follow(lambda _p: self._weigh(key))
        try:
            yield
        finally:
            unfollow()
            with self._lock:
                self._waiters[key].remove(turn)
            self._weigh(key)

    def _start(self, key: tuple[str, ...], config: dict[str, Any],
               background: bool) -> ForkServer | None:
        """Called holding the key's start lock."""
        server = self._live(key)
        if server is not None:
            return server
        if time.monotonic() < self._broken_until.get(key, 0.0):
            return None
        launch = self.launch
        config = {"site_dirs": launch.site_dirs, "runner_source": launch.runner_source,
                  "background": background, **config}
        group = launch.cpu_group()
        if group is not None:
            with self._lock:
                self._groups[key] = group
            self._weigh(key, CpuPriority.BACKGROUND if background else CpuPriority.NORMAL)
        try:
            server = ForkServer(launch.bwrap_path, options_pipe(self._args()), launch.exe,
                                config, host_env(), group=group)
        except ForkServerError as e:
            log.warning("no fork server for %s, sandboxes start another way: %s",
                        ",".join(key) or "python", e)
            self._broken_until[key] = time.monotonic() + self.RETRY_AFTER_S
            return None
        finally:
            # Ready (or gone): what it forks has weights of its own; it weighs as a job.
            self._weigh(key, CpuPriority.NORMAL)
        with self._lock:
            self._servers[key] = server
        return server

    def _weigh(self, key: tuple[str, ...], own: CpuPriority | None = None) -> None:
        """A server's group at the weight of the foremost job waiting for it, or at its own
        while none waits (`own`: its own from now on)."""
        with self._lock:
            if own is not None:
                self._own[key] = own
            group = self._groups.get(key)
            if group is None:
                return
            waiters = self._waiters.get(key)
            group.set_priority(max(t.priority for t in waiters) if waiters
                               else self._own.get(key, CpuPriority.NORMAL))

    def import_ahead(self, preload: tuple[str, ...]) -> bool:
        """The server that imports `preload` (the one `fork` uses for a kind importing it
        ahead and not forked warm), started now unless it runs already: whether it runs."""
        libs = Kind(preload).libraries
        return self._server(libs, {"preload": list(libs)}) is not None

    def fork(self, kind: Kind, full: dict, cgroup: Cgroup, uid: int,
             background: bool, turn: Turn | None = None
             ) -> tuple[ForkedProcess, int, bool] | None:
        """A sandbox forked from a warmed server for its kind if it has one and the kind is
        not `self_prepared` (then the last item is True), else from the server that imported
        its libraries."""
        attempts: list[tuple[tuple[str, ...], dict[str, Any], bool]] = []
        # A warm fork needs the library patches (judge/inside/library_patches.py).
        if (not kind.self_prepared and self.warm and warmable(kind)
                and full.get("library_patches", True)):
            assert kind.warmup is not None
            key = ("warm", kind.warmup.key, *sorted(kind.preload))
            attempts.append((key, {"preload": full["preload"], "warm": full}, True))
        libs = kind.libraries
        attempts.append((libs, {"preload": list(libs)}, False))
        unmount = ["/proc", "/tmp"] + [str(d) for d in self.launch.cgroup_parents]
        for key, config, warmed in attempts:
            # A warmed server started for a spare runs its warm-up in the background (the
            # jobs of a fresh machine run meanwhile in sandboxes that prepare themselves).
            server = self._server(key, config, background and warmed, turn)
            if server is None:
                continue
            try:
                proc, chan_r = server.fork(uid, cgroup, self.launch.tmpfs_bytes, unmount,
                                           background)
            except ForkServerError as e:
                log.warning("fork server failed, starting another way: %s", e)
                continue
            self.forked += 1
            self.forked_warm += warmed
            return proc, chan_r, warmed
        self.fallbacks += 1
        return None

    def memory_bytes(self) -> int:
        with self._lock:
            return sum(s.memory_bytes() for s in self._servers.values())

    def close(self) -> None:
        with self._lock:
            for server in self._servers.values():
                server.close()
            self._servers.clear()

