"""The container sandbox: one container per submission, through a Docker engine's API.

Each sandbox is a fresh container of the sandbox image (the runtime and the pinned libraries,
nothing of the judge's): no network, a read-only root, an unprivileged uid, every capability
dropped, no new privileges, the engine's seccomp profile and then the runner's own filter (the
same one bubblewrap's sandboxes load), memory without swap, a pids and a CPU limit, a
size-capped /tmp, no log kept by the engine. Wall time is enforced from here by killing the
container. It is started ahead (it imports and warms up, then blocks on stdin for its one job)
and removed after the job: the engine removes it as soon as it ends (auto-remove), and it ends
when its job does or when its judge's connection closes (container_init.py), so a judge that is
killed takes its sandboxes with it. Labels name the judge that started each one (and the
deployment and worker container it belongs to): a judge starting removes those of judges that
are gone, or of its own earlier life.

The memory limit's verdicts come from the container's cgroup as container_init reads it from
inside (the judge may be a container that cannot see it): whether the OOM killer struck, and
whether the sandbox was stalled against its limit when its time ran out (then MLE, not TLE:
the bubblewrap backend's test, judge/sandbox/bwrap/cgroups.py `pressing_limit`).

The engine only needs to be reachable (`TENSORJUDGE_DOCKER_HOST` or `DOCKER_HOST`): the judge
may itself run in a container beside the sandboxes it starts.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import secrets
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge import wire
from judge.sandbox import base, xla_cache
from judge.sandbox.base import (
    XLA_CACHE_IN_SANDBOX,
    Acquire,
    Retire,
    SandboxUnavailable,
    sandbox_env,
)
from judge.sandbox.container import owners, seed
from judge.sandbox.container.owners import LABEL, SPAWN_LABEL, identity
from judge.sandbox.container.process import ContainerProcess
from judge.sandbox.container.spawned import ContainerSpawned
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.sandbox.job import Job, Kind
from judge.sandbox.priority import CpuPriority
from judge.sandbox.sources import CONTAINER_INIT_SOURCE, RUNNER_SOURCE
from judge.sandbox.turns import Turn

log = logging.getLogger("tensorjudge.sandbox")
CHANNEL_FD = 3  # where container_init.py gives the runner its result channel
DEFAULT_PYTHON = "/usr/bin/python3.11"
DEFAULT_SITE = "/opt/venv/lib/python3.11/site-packages"
# How often a judge looks for dead judges' containers: a judge killed between creating a
# container and starting it leaves one that never ends by itself.
REAP_EVERY_S = 10.0


@dataclass
class ContainerConfig:
    image: str = "tensorjudge-sandbox:latest"
    docker_host: str | None = None  # None: DOCKER_HOST or the engine's default socket
    tmpfs_bytes: int = 64 << 20
    max_pids: int = 256
    # A CPU quota (cores); 0: none, as bubblewrap's sandboxes have none. The time limits run
    # on the container's CPU clock either way; a quota would only throttle the libraries'
    # own threads (XLA sizes its thread pool to every core of the machine).
    cpus: float = 0.0
    startup_timeout_s: float = 90.0
    seccomp: bool = True
    # A container whose judge is gone ends by itself after this long.
    max_life_s: float = 1800.0
    # The judge-filled JAX compilation cache: a volume of the engine, one per sandbox image,
    # mounted read-only into every sandbox (writable only while the judge fills it).
    compile_cache: bool = True
    cache_volume: str = ""  # its name; empty: one named after the sandbox image
    # The sandbox's patches of JAX's and Flax's internals (judge/inside/library_patches.py).
    library_patches: bool = True
    # Where the record of the cache's filled kinds is kept, shared by the judges that share
    # the volume (the workers of a deployment: their shared cache folder); None: this
    # process's memory only.
    fill_record_root: Path | None = None


class ContainerSandbox:
    name = "docker"
    # A Submit cut in two parts takes two spares, and a wrong answer's probes want a third
    # right after. Bubblewrap forks one in milliseconds; a container takes seconds to start
    # and prepare (without its warm-up the probes would compile their own): a pool over this
    # backend keeps one more of each kind ready, which a cut never takes (split_reserve).
    extra_spares = 1
    # Starting and tearing down a container is the engine's work (dockerd, containerd, runc),
    # at the host's priority: done beside a judgement, it slows that judgement.
    upkeep_after_judgement = True

    def __init__(self, config: ContainerConfig | None = None):
        self.config = config or ContainerConfig()
        try:
            import docker
        except ImportError as e:  # pragma: no cover - a declared dependency
            raise SandboxUnavailable("the docker package is not installed") from e
        host = self.config.docker_host
        try:
            client = (docker.DockerClient(base_url=host) if host
                      else docker.DockerClient.from_env())
            client.ping()
        except Exception as e:  # noqa: BLE001 - any failure means no engine
            where = host or os.environ.get("DOCKER_HOST") or "the default socket"
            raise SandboxUnavailable(
                f"no Docker engine answers at {where} ({e}): start one, or point "
                "TENSORJUDGE_DOCKER_HOST at it") from e
        try:
            image = client.images.get(self.config.image)
        except Exception as e:  # noqa: BLE001
            raise SandboxUnavailable(
                f"the sandbox image {self.config.image!r} is not on the engine: build it "
                "with `./dev images` (or set TENSORJUDGE_DOCKER_IMAGE)") from e
        self.client = client
        self.api = client.api
        labels = image.labels or {}
        self.python = labels.get("org.tensorjudge.python", DEFAULT_PYTHON)
        self.site_dirs = [labels.get("org.tensorjudge.site-packages", DEFAULT_SITE)]
        self.identity = identity(self.api)
        self.owner = self.identity.owner
        self.cache_volume: str | None = None
        if self.config.compile_cache:
            self.cache_volume = (self.config.cache_volume
                                 or f"tensorjudge-xla-{image.id.split(':')[-1][:16]}")
            with contextlib.suppress(Exception):  # already there
                self.api.create_volume(self.cache_volume, labels={LABEL: "compile-cache"})
        self._filled: xla_cache.FillRecord = xla_cache.FilledThisProcess()
        if self.cache_volume is not None and self.config.fill_record_root is not None:
            self._filled = self._shared_fill_record(self.config.fill_record_root)
        # Spawn marks of our containers not yet destroyed; a mark is taken before its
        # container exists, so a reap running meanwhile never takes a sandbox being made.
        self._live: set[str] = set()
        self._live_lock = threading.Lock()
        self._closed = threading.Event()
        self.reap_stale()
        threading.Thread(target=_reap_every, args=(weakref.ref(self), self._closed),
                         name="tj-container-reap", daemon=True).start()
        # The image's seed copied into the cache volume beside the judge's first sandboxes
        # (seed.Seeding): a sandbox that runs a warm-up, and a fill, wait for it.
        self.seeding = seed.Seeding(
            None if self.cache_volume is None else functools.partial(self._seed, image))

    @property
    def seeded(self) -> list[str]:
        """The keys of the kinds the image's seed holds (filled already), once copied."""
        return self.seeding.kinds()

    def _seed(self, image: Any) -> list[str]:
        mark = secrets.token_hex(8)
        with self._live_lock:
            self._live.add(mark)
        try:
            assert self.cache_volume is not None
            return seed.seed_volume(self.client, image, self.cache_volume, self.python,
                                    self._filled, self.identity.labels(mark))
        finally:
            self._forget(mark)

    def _shared_fill_record(self, root: Path) -> xla_cache.FillRecord:
        """Marker files of the kinds filled in the cache volume, kept beside the trusted
        outputs the workers share: named after the volume and when it was made, so a volume
        removed and made again starts with none."""
        try:
            made = str(self.api.inspect_volume(self.cache_volume).get("CreatedAt", ""))
            folder = root / "xla-fills" / f"{self.cache_volume}-{_digest(made)}"
            folder.mkdir(parents=True, exist_ok=True)
        except Exception as e:  # noqa: BLE001 - then each judge fills for itself
            log.warning("the compilation cache's fills are not shared: %s", e)
            return xla_cache.FilledThisProcess()
        return xla_cache.MarkerFiles(folder)

    def close(self) -> None:
        """Remove what this judge and dead judges left (its spares are destroyed by the
        pool before this). Whatever of its own is still there goes too, running or not: a
        cache fill in progress, say, would otherwise outlive the judge and keep the cache
        volume in use."""
        self._closed.set()
        with self._live_lock:
            self._live.clear()
        self.reap_stale()

    def shared_memory_bytes(self) -> int:
        return 0

    def import_ahead(self, preload: tuple[str, ...]) -> bool:
        """Each container imports for itself (its image holds the libraries' files)."""
        return False

    def reap_stale(self) -> int:
        """Remove sandbox containers whose judge is gone: exited ones, this judge's own from
        an earlier life, those of a judge container that no longer runs, and those of a
        judge process on this host that no longer exists."""
        try:
            found = self.api.containers(all=True, filters={"label": LABEL})
        except Exception:  # noqa: BLE001
            return 0
        removed = 0
        for c in found:
            if self._stale(c):
                with contextlib.suppress(Exception):
                    self.api.remove_container(c["Id"], force=True)
                    removed += 1
        return removed

    def _stale(self, c: dict) -> bool:
        labels = c.get("Labels") or {}
        owner = labels.get(LABEL, "")
        if owner == self.owner:
            # Ours: left when it closes, or by a spawn that failed after creating it.
            with self._live_lock:
                return labels.get(SPAWN_LABEL) not in self._live
        # Another judge's: ended, or its judge is gone. One only created is being started
        # by its judge (between the engine's two calls) unless that judge is gone.
        return c.get("State") in ("exited", "dead") or owners.judge_gone(self.api, owner, c)

    def _forget(self, mark: str) -> None:
        with self._live_lock:
            self._live.discard(mark)

    def fill_compile_cache(self, kind: Kind, memory_bytes: int) -> bool:
        """Run `kind`'s warm-up (judge-owned code only) with the cache volume writable, once
        per judge process: the executables its sandboxes would compile are then loaded.
        Low CPU shares: no job waits for a fill (one that finds the cache empty compiles for
        itself)."""
        if self.cache_volume is None:
            return True
        self.seeding.wait()
        return xla_cache.fill(kind, memory_bytes, self._filled, functools.partial(
            self.spawn, background=True, cache_writable=True))

    def compile_cache_holds(self, kind: Kind) -> bool:
        return self.cache_volume is not None and self._filled.holds(kind)

    @staticmethod
    def wait_warm(sp: ContainerSpawned, timeout_s: float) -> bool:
        """base.wait_warm; a spare that has prepared then takes its job's shares at once
        (it waits on its input and spends nothing meanwhile), so that the job that takes it
        asks nothing of the engine on its path."""
        if not base.wait_warm(sp, timeout_s):
            return False
        sp.foreground(wait=True)
        return True

    def route(self, job: Job) -> Kind:
        return job.kind

    def spawn(self, kind: Kind, memory_bytes: int, *, background: bool = False,
              cache_writable: bool = False, turn: Turn | None = None) -> ContainerSpawned:
        """`turn`: the place in line of the job it is started for: its first shares."""
        if xla_cache.needs_fill(kind):
            self.seeding.wait()
        cfg = self.config
        priority = turn.priority if turn is not None else CpuPriority.of_job(kind)
        volumes = {}
        if self.cache_volume is not None:
            volumes[self.cache_volume] = {"bind": XLA_CACHE_IN_SANDBOX,
                                          "mode": "rw" if cache_writable else "ro"}
        host_config = self.api.create_host_config(
            binds=volumes,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=memory_bytes,
            memswap_limit=memory_bytes,
            pids_limit=cfg.max_pids,
            nano_cpus=int(cfg.cpus * 1e9) if cfg.cpus > 0 else None,
            cpu_shares=int(CpuPriority.BACKGROUND if background else priority),
            tmpfs={"/tmp": f"size={cfg.tmpfs_bytes},mode=1777"},
            auto_remove=True,
            shm_size=1 << 20,
            log_config={"type": "none", "config": {}},
            ipc_mode="private",
        )
        mark = secrets.token_hex(8)
        with self._live_lock:
            self._live.add(mark)
        try:
            created = self.api.create_container(
                cfg.image,
                command=[self.python, "-I", "-S", "-B", "-c", CONTAINER_INIT_SOURCE, RUNNER_SOURCE,
                         str(cfg.max_life_s)],
                user="65534:65534",
                environment=sandbox_env(),
                working_dir="/tmp",
                hostname="sandbox",
                stdin_open=True,
                tty=False,
                labels=self.identity.labels(mark),
                volumes=[XLA_CACHE_IN_SANDBOX] if volumes else None,
                host_config=host_config,
            )
            cid = created["Id"]
            raw = self.api.attach_socket(
                cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            sock = getattr(raw, "_sock", raw)
            self.api.start(cid)
        except Exception as e:  # noqa: BLE001 - the engine said no
            self._forget(mark)  # whatever it created is now the next reap's
            raise SandboxUnavailable(f"cannot start a sandbox container: {e}") from e
        proc = ContainerProcess(self.api, cid, sock)
        sp = ContainerSpawned(proc, self.api, time.monotonic(), memory_bytes,
                              priority, niced=background,
                              on_destroy=functools.partial(self._forget, mark))
        message = base.prepare_message(
            kind, self.site_dirs,
            XLA_CACHE_IN_SANDBOX if self.cache_volume is not None else None, CHANNEL_FD,
            library_patches=self.config.library_patches)
        try:
            assert proc.stdin is not None
            proc.stdin.write(wire.encode_job(message, []))
        except OSError:
            pass  # it died already: execute() will say how
        return sp

    def execute(self, sp: ContainerSpawned, job: Job, tests_args: list[dict], plan: RunPlan,
                acquire: Acquire, retire: Retire) -> RawRun:
        """Run the job in the container and remove it, or retire it where the run finished
        (`acquire` is not needed: a container always prepares itself)."""
        msg = base.job_message(job, plan, seccomp=self.config.seccomp,
                               rlimits=base.rlimits(plan, memory_cgroup=True))
        if plan.memory_bytes != sp.memory_limit:
            sp.set_memory_limit(plan.memory_bytes)
        else:
            sp.foreground()
        pressing: list[bool] = []

        def kill() -> None:
            pressing.append(sp.proc.pressing)
            sp.kill()

        raw = base.run_job(sp, sp.proc, wire.encode_job(msg, tests_args), plan, kill,
                           self.config.startup_timeout_s)
        raw.memory_bound = any(pressing)
        if raw.finished:
            retire(sp)
            return raw
        sp.destroy()
        raw.oom_killed = sp.oom_killed
        raw.spawn_warm_ms = sp.warm_ms
        return raw


def _reap_every(backend: weakref.ref[ContainerSandbox], closed: threading.Event) -> None:
    """Reap while the backend is open, holding it only for each reap (an unclosed one that
    is dropped then ends its thread too)."""
    while not closed.wait(REAP_EVERY_S):
        live = backend()
        if live is None:
            return
        live.reap_stale()
        del live


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:12]
