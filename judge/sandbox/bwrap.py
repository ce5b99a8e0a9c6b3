"""The bubblewrap sandbox: one single-use sandbox per submission.

Layers, outside in: a private cgroup (memory, pids) joined before anything else runs; an
unprivileged host uid of its own; bubblewrap's namespaces (no network, own pids, own mounts
with read-only binds of only the Python runtime and site-packages, a size-capped private
/tmp); rlimits and a seccomp filter installed by the runner once the libraries are imported;
wall time enforced from here by killing the whole group.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import shlex
import shutil
import site
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path

from judge import wire
from judge.sandbox.cgroups import Cgroup, CgroupManager
from judge.sandbox.io_loop import RawRun, RunPlan, pump, reap

SITE_IN_SANDBOX = "/opt/tensorjudge/site-packages"
RUNNER_SOURCE = (Path(__file__).with_name("runner.py")).read_text(encoding="utf-8")
_uid_counter = itertools.count()
_uid_lock = threading.Lock()


class SandboxUnavailable(RuntimeError):
    """The host cannot run the sandbox at all: a start-up error, not a verdict."""


@dataclass
class BwrapConfig:
    bwrap: str = "bwrap"
    uid_base: int = 200_000
    uid_span: int = 100_000
    tmpfs_bytes: int = 64 << 20
    max_pids: int = 256
    startup_timeout_s: float = 90.0
    use_cgroups: bool = True
    seccomp: bool = True


def python_runtime() -> tuple[Path, list[Path]]:
    """The real interpreter and the site-packages directories the judge itself runs with."""
    exe = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    dirs = [Path(p).resolve() for p in site.getsitepackages() if Path(p).is_dir()]
    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    if purelib.is_dir() and purelib not in dirs:
        dirs.insert(0, purelib)
    return exe, dirs


class BwrapSandbox:
    def __init__(self, config: BwrapConfig | None = None):
        self.config = config or BwrapConfig()
        path = shutil.which(self.config.bwrap)
        if path is None:
            raise SandboxUnavailable(
                "bubblewrap (bwrap) is not installed: run the set-up (`apt-get install "
                "bubblewrap` as root) before judging"
            )
        self.bwrap_path = path
        self.cgroups = CgroupManager() if self.config.use_cgroups else None
        self.exe, self.site_dirs = python_runtime()
        self.is_root = os.geteuid() == 0
        self.setpriv = shutil.which("setpriv") if self.is_root else None
        # Host uids recently given to sandboxes, so checks can look for anything left behind.
        self.recent_uids: collections.deque[int] = collections.deque(maxlen=256)
        if self.is_root and self.setpriv is None:
            raise SandboxUnavailable("setpriv (util-linux) is needed to drop to a sandbox uid")

    @property
    def cgroup_status(self) -> str:
        if self.cgroups is None:
            return "disabled"
        if self.cgroups.available:
            return f"cgroup v{self.cgroups.version}"
        return f"unavailable ({self.cgroups.reason}); RLIMIT_AS fallback"

    def _uid(self) -> int:
        with _uid_lock:
            n = next(_uid_counter)
            uid = self.config.uid_base + (os.getpid() * 97 + n) % self.config.uid_span
            self.recent_uids.append(uid)
        return uid

    def site_binds(self) -> list[tuple[Path, str]]:
        return [(d, f"{SITE_IN_SANDBOX}/{i}") for i, d in enumerate(self.site_dirs)]

    def bwrap_args(self, uid: int | None) -> list[str]:
        """bubblewrap's options; passed through a pipe (`--args FD`), not argv, so nothing of
        the host's paths shows in the sandbox's /proc/1/cmdline."""
        a = ["--unshare-all", "--die-with-parent", "--new-session"]
        if not self.is_root or uid is not None:
            a += ["--unshare-user", "--disable-userns"]
        a += ["--uid", "1000", "--gid", "1000", "--hostname", "sandbox", "--clearenv"]
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
        a += ["--proc", "/proc", "--dev", "/dev"]
        a += ["--size", str(self.config.tmpfs_bytes), "--tmpfs", "/tmp", "--chdir", "/tmp"]
        return a

    def command(self, cgroup: Cgroup | None, uid: int, args_fd: int) -> list[str]:
        inner = [self.bwrap_path, "--args", str(args_fd), "--",
                 str(self.exe), "-I", "-S", "-B", "-c", RUNNER_SOURCE]
        if self.is_root:
            assert self.setpriv is not None
            inner = [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                     "--inh-caps=-all", "--"] + inner
        if cgroup is None:
            return inner
        # The launcher joins the group itself before exec: nothing escapes the limits, and
        # no pre-exec Python hook is needed in a threaded worker.
        joins = "; ".join(f"echo $$ > {shlex.quote(str(f))}" for f in cgroup.procs_files)
        return ["/bin/sh", "-c", f"set -e; {joins}; exec \"$@\"", "tensorjudge-sandbox"] + inner

    def run(self, header: dict, tests_args: list[dict], plan: RunPlan) -> RawRun:
        """Judge-owned `header` (code, entry, preload) plus per-test inputs, in one sandbox."""
        cgroup = None
        if self.cgroups is not None and self.cgroups.available:
            cgroup = self.cgroups.create(plan.memory_bytes, self.config.max_pids)
        uid = self._uid()
        chan_r, chan_w = os.pipe()
        args_r, args_w = os.pipe()
        options = b"\0".join(a.encode() for a in self.bwrap_args(uid if self.is_root else None))
        with os.fdopen(args_w, "wb") as f:  # ~20 KB: fits the pipe buffer, no reader needed
            f.write(options + b"\0")
        full = {**header, **self.job_header(plan), "channel_fd": chan_w,
                "expected_sizes": plan.expected_sizes}
        job = wire.encode_job(full, tests_args)
        try:
            proc = subprocess.Popen(
                self.command(cgroup, uid, args_r),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(chan_w, args_r),
                env=host_env(),
                cwd="/",
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            os.close(chan_r)
            os.close(chan_w)
            os.close(args_r)
            if cgroup:
                cgroup.remove()
            raise SandboxUnavailable(f"cannot start the sandbox: {e}") from e
        os.close(chan_w)
        os.close(args_r)

        def kill() -> None:
            if cgroup is not None:
                cgroup.kill_all()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, 9)

        raw = RawRun()
        try:
            raw = pump(proc, chan_r, job, plan, kill, self.config.startup_timeout_s)
        finally:
            os.close(chan_r)
            kill()
            reap(proc, 30.0, raw)
            if cgroup is not None:
                raw_oom = cgroup.oom_killed()
                raw_peak = cgroup.peak_bytes()
                cgroup.remove()
            else:
                raw_oom, raw_peak = False, None
        raw.oom_killed = raw_oom
        raw.peak_memory_bytes = raw_peak
        return raw

    def job_header(self, plan: RunPlan) -> dict:
        """What the runner needs to know about its own confinement."""
        cg = self.cgroups is not None and self.cgroups.available
        return {
            "site_dirs": [dst for _, dst in self.site_binds()],
            "seccomp": self.config.seccomp,
            "rlimits": {
                "cpu_s": plan.cpu_seconds,
                "fsize": 16 << 20,
                "nofile": 256,
                "nproc": 0 if cg else 512,
                # Without a memory cgroup, address space is the only brake (JAX reserves a
                # lot of it, so allow generous headroom).
                "as_bytes": 0 if cg else plan.memory_bytes * 3,
            },
        }


def sandbox_env() -> dict[str, str]:
    return {
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PATH": "/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        "JAX_PLATFORMS": "cpu",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def host_env() -> dict[str, str]:
    """bubblewrap's own processes keep their environment readable in /proc inside the
    sandbox, so they start with nothing of the judge's."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
