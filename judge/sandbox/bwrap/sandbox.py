"""The bubblewrap sandbox: one single-use sandbox per submission.

Layers, outside in: a private cgroup (memory, pids) joined before anything else runs; an
unprivileged host uid of its own; bubblewrap's namespaces (no network, own pids, own mounts
with read-only binds of only the Python runtime and site-packages, a size-capped private
/tmp); rlimits and a seccomp filter installed by the runner once the libraries are imported;
wall time enforced from here by killing the whole group.
"""

from __future__ import annotations

import collections
import itertools
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from judge import wire
from judge.sandbox import base, xla_cache
from judge.sandbox.base import (
    XLA_CACHE_IN_SANDBOX,
    Acquire,
    CpuPriority,
    Retire,
    SandboxUnavailable,
    host_env,
    sandbox_env,
)
from judge.sandbox.bwrap.cgroups import Cgroup, CgroupManager
from judge.sandbox.bwrap.forkserver import (
    CHANNEL_FD,
    ForkServers,
    ZygoteLaunch,
    launcher,
    options_pipe,
)
from judge.sandbox.bwrap.spawned import Process, Spawned
from judge.sandbox.bwrap.warm import WarmRouting, hand_back
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.sandbox.job import Job, Kind
from judge.sandbox.sources import BOOTSTRAP, RUNNER_SOURCE, source_descriptor
from judge.sandbox.turns import Turn

__all__ = ["BwrapConfig", "BwrapSandbox", "SandboxUnavailable", "python_runtime"]

SITE_IN_SANDBOX = "/opt/tensorjudge/site-packages"
_uid_counter = itertools.count()
UIDS_PER_PROCESS = 256
PID_SPACE = 1 << 22  # Linux's largest pid_max
# Tears down sandboxes whose job is over, off the path to the verdict.
_uid_lock = threading.Lock()
FILL_UID_OFFSET = -1  # uid_base + this: the one uid allowed to write the compilation cache


@dataclass
class BwrapConfig:
    bwrap: str = "bwrap"
    uid_base: int = 200_000
    uid_span: int = (1 << 22) * 256  # PID_SPACE blocks of UIDS_PER_PROCESS
    tmpfs_bytes: int = 64 << 20
    max_pids: int = 256
    startup_timeout_s: float = 90.0
    use_cgroups: bool = True
    seccomp: bool = True
    # A judge-filled JAX compilation cache, bound read-only into every sandbox (None: off).
    xla_cache_dir: Path | None = None
    # Fork sandboxes from a server that has imported the libraries (root with cgroups only).
    fork_server: bool = True
    # And, for the kinds whose warm-up runs JAX, from one that has also run the warm-up.
    fork_warmed: bool = True
    # The sandbox's patches of JAX's and Flax's internals (judge/inside/library_patches.py).
    library_patches: bool = True


def python_runtime() -> tuple[Path, list[Path]]:
    """The real interpreter and the site-packages directories the judge itself runs with."""
    exe = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    dirs = [Path(p).resolve() for p in site.getsitepackages() if Path(p).is_dir()]
    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    if purelib.is_dir() and purelib not in dirs:
        dirs.insert(0, purelib)
    return exe, dirs


class BwrapSandbox:
    name = "bwrap"
    upkeep_after_judgement = False  # a fork and a kill, at a spare's weight

    def __init__(self, config: BwrapConfig | None = None):
        self.config = config or BwrapConfig()
        name = self.config.bwrap
        path = shutil.which(name)
        if path is None:
            where = "" if "/" in name else " on PATH"
            raise SandboxUnavailable(
                f"the sandbox binary {name!r} (bubblewrap) was not found{where}: run the "
                "set-up (`apt-get install bubblewrap` as root) before judging"
            )
        try:
            probe = subprocess.run([path, "--version"], capture_output=True, timeout=10,
                                   env=host_env())
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxUnavailable(f"the sandbox binary {path} cannot run: {e}") from e
        if probe.returncode != 0 or b"bubblewrap" not in probe.stdout:
            raise SandboxUnavailable(f"{path} is not a working bubblewrap (`{path} --version` "
                                     f"exited with {probe.returncode})")
        self.bwrap_path = path
        self.cgroups = CgroupManager() if self.config.use_cgroups else None
        if self.cgroups is not None and self.cgroups.available:
            self.cgroups.reap_stale()  # left by judges that were killed
        self.exe, self.site_dirs = python_runtime()
        self.is_root = os.geteuid() == 0
        self.setpriv = shutil.which("setpriv") if self.is_root else None
        # Host uids recently given to sandboxes, so checks can look for anything left behind.
        self.recent_uids: collections.deque[int] = collections.deque(maxlen=256)
        if self.is_root and self.setpriv is None:
            raise SandboxUnavailable("setpriv (util-linux) is needed to drop to a sandbox uid")
        self.fork_servers: ForkServers | None = None
        self.warm_routing = WarmRouting()
        self.handovers = 0  # jobs a warm-forked sandbox handed back (warm.hand_back)
        self.hang_reruns = 0  # of those, the ones that waited out their time instead
        if (self.config.fork_server and self.is_root and self.cgroups is not None
                and self.cgroups.available):
            self.fork_servers = ForkServers(ZygoteLaunch(
                bwrap_path=path, exe=str(self.exe), layout=self.layout_args,
                site_dirs=[dst for _, dst in self.site_binds()],
                cgroup_parents=self.cgroups.parents(), cpu_group=self.cgroups.cpu_group,
                tmpfs_bytes=self.config.tmpfs_bytes,
                runner_source=RUNNER_SOURCE),
                # A warm fork hands compilations back through the library patches only.
                warm=self.config.fork_warmed and self.config.library_patches)

    def close(self) -> None:
        """Ends the fork servers; sandboxes already started are not affected."""
        if self.fork_servers is not None:
            self.fork_servers.close()

    @property
    def cgroup_status(self) -> str:
        if self.cgroups is None:
            return "disabled"
        if self.cgroups.available:
            return f"cgroup v{self.cgroups.version}"
        return f"unavailable ({self.cgroups.reason}); RLIMIT_AS fallback"

    def _uid(self) -> int:
        """A host uid no other live sandbox on this host has: the judge's pid picks a block
        of UIDS_PER_PROCESS uids (pids are unique on the host), a counter the uid within it
        (far more than the sandboxes one judge process ever has alive at once)."""
        with _uid_lock:
            n = next(_uid_counter)
            block = os.getpid() % PID_SPACE
            uid = self.config.uid_base + block * UIDS_PER_PROCESS + n % UIDS_PER_PROCESS
            self.recent_uids.append(uid)
        return uid

    def site_binds(self) -> list[tuple[Path, str]]:
        return [(d, f"{SITE_IN_SANDBOX}/{i}") for i, d in enumerate(self.site_dirs)]

    @property
    def xla_cache_dir(self) -> Path | None:
        d = self.config.xla_cache_dir
        return d if d is not None and d.is_dir() else None

    def bwrap_args(self, uid: int | None, cache_writable: bool = False) -> list[str]:
        """bubblewrap's options; passed through a pipe (`--args FD`), not argv, so nothing of
        the host's paths shows in the sandbox's /proc/1/cmdline."""
        a = ["--unshare-all", "--die-with-parent", "--new-session"]
        if not self.is_root or uid is not None:
            a += ["--unshare-user", "--disable-userns"]
        return a + ["--uid", "1000", "--gid", "1000"] + self.layout_args(cache_writable)

    def layout_args(self, cache_writable: bool = False) -> list[str]:
        """What a sandbox sees: its environment and files."""
        a = ["--hostname", "sandbox", "--clearenv"]
        for k, v in sandbox_env().items():
            a += ["--setenv", k, v]
        a += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            p = Path(top)
            if p.is_symlink():
                a += ["--symlink", os.readlink(p), top]
            elif p.is_dir():
                a += ["--ro-bind", top, top]
        a += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        prefix = Path(sys.base_prefix).resolve()
        if not str(prefix).startswith("/usr"):
            a += ["--ro-bind", str(prefix), str(prefix)]
        for src, dst in self.site_binds():
            a += ["--ro-bind", str(src), dst]
        if self.xla_cache_dir is not None:
            bind = "--bind" if cache_writable else "--ro-bind"
            a += [bind, str(self.xla_cache_dir), XLA_CACHE_IN_SANDBOX]
        a += ["--proc", "/proc", "--dev", "/dev"]
        a += ["--size", str(self.config.tmpfs_bytes), "--tmpfs", "/tmp", "--chdir", "/tmp"]
        return a

    def fill_compile_cache(self, kind: Kind, memory_bytes: int) -> bool:
        """The judge's compilation cache holds `kind`'s warm-up (filled now if need be)."""
        cache = self.xla_cache_dir
        if cache is None:
            return True
        return xla_cache.fill(kind, memory_bytes, xla_cache.MarkerFiles(cache),
                              self._spawn_filler)

    def compile_cache_holds(self, kind: Kind) -> bool:
        cache = self.xla_cache_dir
        return cache is not None and xla_cache.MarkerFiles(cache).holds(kind)

    def _spawn_filler(self, kind: Kind, memory_bytes: int) -> Spawned:
        """A sandbox that only runs `kind`'s warm-up, as the one uid that may write the cache.
        Niced: no job waits for a fill (one that finds the cache empty compiles for itself)."""
        cache = self.xla_cache_dir
        fill_uid = self.config.uid_base + FILL_UID_OFFSET
        if cache is not None and os.geteuid() == 0:
            for d, _dirs, files in os.walk(cache):
                os.chown(d, fill_uid, fill_uid)
                for f in files:
                    os.chown(Path(d) / f, fill_uid, fill_uid)
        return self.spawn(kind, memory_bytes, background=True, cache_writable=True,
                          uid=fill_uid)

    def shared_memory_bytes(self) -> int:
        """Memory the sandboxes share: the fork servers' own."""
        return self.fork_servers.memory_bytes() if self.fork_servers is not None else 0

    def command(self, cgroup: Cgroup | None, uid: int, args_fd: int,
                source_fd: int) -> list[str]:
        inner = [self.bwrap_path, "--args", str(args_fd), "--",
                 str(self.exe), "-I", "-S", "-B", "-c", BOOTSTRAP, str(source_fd)]
        if self.is_root:
            assert self.setpriv is not None
            inner = [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                     "--inh-caps=-all", "--"] + inner
        # The launcher joins the group itself before exec: nothing escapes the limits.
        return inner if cgroup is None else launcher(cgroup.procs_files, inner)

    def import_ahead(self, preload: tuple[str, ...]) -> bool:
        return self.fork_servers is not None and self.fork_servers.import_ahead(preload)

    def spawn(self, kind: Kind, memory_bytes: int, *, background: bool = False,
              cache_writable: bool = False, uid: int | None = None,
              turn: Turn | None = None) -> Spawned:
        """Start a sandbox and send it the judge-owned preparation (imports, warm-up). It then
        waits, locked only by its namespaces, for the one job it will ever run.

        `background`: prepare at low CPU priority (a pool's spare), so judging in progress
        keeps the CPU; `Spawned.foreground()` restores it when its job comes. A kind may be
        forked from a warmed fork server, unless it is `self_prepared` (warm.py). `turn`: the
        place in line of the job it is started for, which a fork server it waits for takes
        (turns.py)."""
        cgroup = None
        if self.cgroups is not None and self.cgroups.available:
            cgroup = self.cgroups.create(memory_bytes, self.config.max_pids)
        uid = self._uid() if uid is None else uid
        full = base.prepare_message(
            kind, [dst for _, dst in self.site_binds()],
            XLA_CACHE_IN_SANDBOX if self.xla_cache_dir else None, CHANNEL_FD,
            library_patches=self.config.library_patches)
        background = background and self.is_root and cgroup is not None
        if cgroup is not None:
            cgroup.set_priority(CpuPriority.BACKGROUND if background
                                else CpuPriority.of_job(kind))
        forked = None
        if self.fork_servers is not None and cgroup is not None and not cache_writable:
            forked = self.fork_servers.fork(kind, full, cgroup, uid, background, turn)
        if forked is not None:
            proc: Process = forked[0]
            chan_r = forked[1]
        else:
            proc, chan_r = self._start(cgroup, uid, full, cache_writable, background)
        sp = Spawned(proc, chan_r, cgroup, uid, time.monotonic(), kind, niced=background,
                     warmed=forked is not None and forked[2])
        try:
            assert proc.stdin is not None
            proc.stdin.write(wire.encode_job(full, []))
            proc.stdin.flush()
        except OSError:
            pass  # it died already: execute() will say how
        return sp

    def _start(self, cgroup: Cgroup | None, uid: int, full: dict, cache_writable: bool,
               background: bool) -> tuple[subprocess.Popen, int]:
        """A sandbox started by bubblewrap, importing everything itself."""
        chan_r, chan_w = os.pipe()
        args_r = options_pipe(self.bwrap_args(uid if self.is_root else None, cache_writable))
        source_r = source_descriptor(RUNNER_SOURCE)
        full["channel_fd"] = chan_w
        try:
            cmd = self.command(cgroup, uid, args_r, source_r)
            if background:
                cmd = cmd[:4] + ["nice", "-n", "15"] + cmd[4:]
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(chan_w, args_r, source_r),
                env=host_env(),
                cwd="/",
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            for fd in (chan_r, chan_w, args_r, source_r):
                os.close(fd)
            if cgroup:
                cgroup.remove()
            raise SandboxUnavailable(f"cannot start the sandbox: {e}") from e
        for fd in (chan_w, args_r, source_r):
            os.close(fd)
        return proc, chan_r

    wait_warm = staticmethod(base.wait_warm)

    def route(self, job: Job) -> Kind:
        if not self.forks_warm:
            return job.kind
        return self.warm_routing.route(job)

    def execute(self, sp: Spawned, job: Job, tests_args: list[dict], plan: RunPlan,
                acquire: Acquire, retire: Retire) -> RawRun:
        """Send the job to a spawned sandbox, watch it, then destroy the sandbox. A job that a
        sandbox forked warm hands back runs again, from its start, in one that `acquire`
        gives, of the same kind preparing itself (warm.py): nothing of the first run counts
        but whether it timed out."""
        raw = self._execute(sp, job, tests_args, plan, retire)
        if not sp.warmed:
            return raw
        handed_back = hand_back(raw)
        self.warm_routing.note(sp.kind, handed_back)
        if not handed_back:
            return raw
        self.handovers += 1
        if raw.first("handover") is None:
            self.hang_reruns += 1
        kind = sp.kind.preparing_itself()
        rerun = acquire(kind, plan.memory_bytes)
        assert isinstance(rerun, Spawned)  # a pool over this backend gives its own sandboxes
        again = self._execute(rerun, job, tests_args, plan, retire)
        again.rerun_after_timeout = raw.timed_out
        return again

    def _execute(self, sp: Spawned, job: Job, tests_args: list[dict], plan: RunPlan,
                 retire: Retire) -> RawRun:
        msg = base.job_message(job, plan, seccomp=self.config.seccomp,
                               rlimits=self.rlimits(plan))
        cgroup = sp.cgroup
        sp.foreground()
        if cgroup is not None:
            cgroup.set_memory_limit(plan.memory_bytes)
        raw = RawRun()
        pressing: list[bool] = []
        stalled: list[bool] = []

        def kill() -> None:
            if cgroup is not None:
                # Evidence for MLE, read before the kill: the group working against its
                # memory limit, its own pages evicted and read back; or, for a run the wall
                # guard ends (stalled there, it uses little CPU), still meeting the limit.
                pressing.append(cgroup.pressing_limit())
                stalled.append(cgroup.at_limit())
                cgroup.kill_all()
            sp.kill_group()

        raw = base.run_job(sp, sp.proc, wire.encode_job(msg, tests_args), plan, kill,
                           self.config.startup_timeout_s)
        raw.memory_bound = any(pressing) or (raw.timeout_limit == "wall_guard" and any(stalled))
        if raw.finished:
            retire(sp)
        else:
            sp.destroy()
            raw.oom_killed = sp.oom_killed
            raw.peak_memory_bytes = sp.peak_bytes
        raw.spawn_warm_ms = sp.warm_ms
        return raw

    @property
    def forks_warm(self) -> bool:
        """Whether a kind's `self_prepared` changes how its sandbox starts (warm.py)."""
        return self.fork_servers is not None and self.fork_servers.warm

    def rlimits(self, plan: RunPlan) -> dict:
        return base.rlimits(plan, self.cgroups is not None and self.cgroups.available)

