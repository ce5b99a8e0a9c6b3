"""The docker sandbox backend on a real engine: the bundled packages' submissions get their
folders' verdicts, the limits hold, and no container outlives its job."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from judge.engine import judge
from judge.package import discover, load_package
from judge.sandbox import SandboxConfig, SandboxPool, SandboxUnavailable, open_sandbox
from judge.sandbox.container.sandbox import ContainerConfig, ContainerSandbox
from judge.sandbox.job import Kind
from judge.validate import validate
from judge.verdicts import Verdict
from tests import docker_engine
from tests.conftest import FIXTURES, REPO

pytestmark = [pytest.mark.sandbox, pytest.mark.container]
# Every package's verdicts are proven on bubblewrap (tests/problems); in containers, the
# package with NumPy, JAX (jitted and eager) and PyTorch submissions. Flax in containers: the
# compose stack's tests (tests/container/test_compose.py) and the attack corpus.
PACKAGES = [p for p in discover(REPO / "problems") if p.name == "decoder-block"]
DOCKER = SandboxConfig(kind="docker", docker_image="tensorjudge-sandbox:latest")


@pytest.fixture(scope="module")
def sandbox() -> ContainerSandbox:
    docker_engine.images()
    sb = _backend()
    return sb


def _backend() -> ContainerSandbox:
    """The docker backend as the settings open it (the pool around it keeps no spares)."""
    sb = open_sandbox(DOCKER).backend
    assert isinstance(sb, ContainerSandbox)
    return sb


def _no_containers_left(sandbox_owner: str, timeout_s: float = 20.0) -> list:
    deadline = time.monotonic() + timeout_s
    while (left := docker_engine.sandbox_containers(sandbox_owner)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.mark.slow
@pytest.mark.parametrize("path", PACKAGES, ids=[p.name for p in PACKAGES])
def test_bundled_package_verdicts_in_containers(path, sandbox):
    report = validate(path, sandbox, parallel=2)
    failed = [f"{c.what}: {c.detail}" for c in report.checks if not c.ok]
    assert report.ok, "\n".join(failed)
    assert sum(1 for c in report.checks if c.what.startswith("wrong_answer/")) >= 6
    assert _no_containers_left(sandbox.owner) == []


def _judge(sandbox, code: str, **limits):
    package = load_package(FIXTURES / "double")
    for k, v in limits.items():
        setattr(package.manifest.limits, k, v)
    return judge(package, code, sandbox)


def test_limits_and_confinement(sandbox):
    ok = _judge(sandbox, "def double(x):\n    return (2 * x).reshape(-1)\n")
    assert ok.verdict is Verdict.AC, ok.to_dict()
    cases = {
        "import time\ndef double(x):\n    time.sleep(60)\n": Verdict.TLE,
        "def double(x):\n    while True: pass\n": Verdict.TLE,
        # Touching every page: the container's memory limit, not a Python MemoryError.
        ("import numpy as np\ndef double(x):\n    a = []\n    while True:\n"
         "        a.append(np.ones(1 << 24))\n"): Verdict.MLE,
        # Frames filling the memory: killed at the limit, or stalled against it when the
        # time runs out (the container's cgroup, read from inside it): MLE either way.
        ("import sys\nsys.setrecursionlimit(10 ** 7)\ndef deep(n):\n    return deep(n + 1) + 1\n"
         "def double(x):\n    return deep(0)\n"): Verdict.MLE,
        ("import socket\ndef double(x):\n    socket.create_connection(('10.0.0.1', 80), 2)\n"):
            Verdict.RE,
        ("import os\ndef double(x):\n    os.execv('/bin/sh', ['sh', '-c', 'true'])\n"):
            Verdict.RE,
        ("import sys\ndef double(x):\n    while True:\n        sys.stdout.write('y' * 65536)\n"):
            Verdict.OLE,
        "import os\ndef double(x):\n    os._exit(0)\n": Verdict.RE,
        "def double(x):\n    return 1/0\n": Verdict.RE,
        "def double(x):\n    return x\n": Verdict.WA,
    }
    for code, want in cases.items():
        got = _judge(sandbox, code, time_ms=2000, memory_mb=512)
        assert got.verdict is want, (code, got.to_dict())
    assert _no_containers_left(sandbox.owner) == []


# Reads a library file larger than the limit through a mapping, again and again (out of the
# page cache first, so its pages are charged to the container): each page evicted to make room
# is read back in next time, and the run stalls at its limit until its time runs out.
PRESSING = """
import importlib.util, mmap, os
def double(x):
    lib = os.path.join(os.path.dirname(importlib.util.find_spec("torch").origin), "lib")
    fd = os.open(os.path.join(lib, "libtorch_cpu.so"), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    total = 0
    while True:
        for i in range(0, len(m), 4096):
            total += m[i]
"""
# Near the limit, then only computing: not pressing it.
COMPUTING = """
def double(x):
    block = bytearray(160 << 20)
    while True:
        pass
"""


def test_a_run_stalled_at_its_memory_limit_is_mle_one_near_it_computing_tle(sandbox):
    stalled = _judge(sandbox, PRESSING, time_ms=2000, memory_mb=256)
    assert stalled.verdict is Verdict.MLE, stalled.to_dict()
    computing = _judge(sandbox, COMPUTING, time_ms=2000, memory_mb=256)
    assert computing.verdict is Verdict.TLE, computing.to_dict()


def test_the_sandbox_sees_nothing_of_the_judge(sandbox):
    code = '''
import os, json
def double(x):
    seen = {
        "uid": os.getuid(),
        "env": sorted(os.environ),
        "root_writable": os.access("/", os.W_OK),
        "repo": os.path.exists(REPO_PATH),
        "docker_sock": os.path.exists("/var/run/docker.sock"),
        "net": sorted(os.listdir("/sys/class/net")),
    }
    try:
        open("/tmp/tj-plant", "w").write("x")
        seen["tmp"] = True
    except OSError:
        seen["tmp"] = False
    print(json.dumps(seen))
    return (2 * x).reshape(-1)
'''.replace("REPO_PATH", repr(str(REPO)))
    res = _judge(sandbox, code)
    assert res.verdict is Verdict.AC, res.to_dict()
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("{"))
    import json

    seen = json.loads(line)
    assert seen["uid"] == 65534
    assert not seen["root_writable"] and not seen["repo"] and not seen["docker_sock"]
    assert seen["net"] == ["lo"]
    assert seen["tmp"] is True
    assert "TENSORJUDGE_SECRET_KEY" not in seen["env"]
    # Nothing survives: the next sandbox's /tmp is empty of it.
    again = _judge(sandbox, "import os\ndef double(x):\n"
                            "    assert not os.path.exists('/tmp/tj-plant')\n"
                            "    return (2 * x).reshape(-1)\n")
    assert again.verdict is Verdict.AC, again.to_dict()


def test_a_missing_image_or_engine_stops_at_start_up():
    docker_engine.images()
    with pytest.raises(SandboxUnavailable, match="./dev images"):
        ContainerSandbox(ContainerConfig(image="tensorjudge-sandbox:no-such-tag"))
    with pytest.raises(SandboxUnavailable, match="no Docker engine"):
        ContainerSandbox(ContainerConfig(docker_host="unix:///nonexistent/docker.sock"))


def test_closing_removes_its_own_containers_even_running_ones():
    """A sandbox still preparing when the judge closes (a cache fill, a spare being warmed)
    goes with it: left running, it would keep the cache volume in use."""
    docker_engine.images()
    sb = _backend()
    other = _backend()
    mine = sb.spawn(Kind(("jax",)), 512 << 20)
    theirs = other.spawn(Kind(), 256 << 20)
    try:
        assert docker_engine.sandbox_containers(sb.owner)
        sb.close()
        assert _no_containers_left(sb.owner, 5.0) == []
        # Another live judge's sandbox is not this judge's to remove.
        assert docker_engine.sandbox_containers(other.owner)
    finally:
        mine.destroy()
        theirs.destroy()
        other.close()


def test_sibling_backends_of_one_process_leave_each_others_sandboxes_alone():
    """Several backends in one process (a server's embedded workers): one starting, reaping
    or closing never removes a sandbox of another, which is alive while the process is."""
    docker_engine.images()
    first = _backend()
    sp = first.spawn(Kind(), 256 << 20)
    try:
        assert first.wait_warm(sp, 60.0), "the sandbox never got ready"
        second = _backend()
        assert isinstance(second, ContainerSandbox)
        assert second.owner != first.owner
        second.reap_stale()
        second.close()
        assert sp.alive()
        assert [(c["Id"], c["State"]) for c in docker_engine.sandbox_containers(first.owner)] \
            == [(sp.cid, "running")]
    finally:
        sp.destroy()
        first.close()


def test_a_reap_while_a_sandbox_is_being_made_leaves_it_alone(monkeypatch):
    """The periodic reap runs beside spawns (another thread's, another judge's): a container
    it lists between its creation and its start is a live judge's all the same."""
    docker_engine.images()
    sb = _backend()
    other = _backend()
    start = sb.api.start
    reaped: list[int] = []

    def start_after_a_reap(cid, *args, **kwargs):
        reaped.append(sb.reap_stale())
        reaped.append(other.reap_stale())
        return start(cid, *args, **kwargs)

    monkeypatch.setattr(sb.api, "start", start_after_a_reap)
    sp = sb.spawn(Kind(), 256 << 20)
    try:
        assert reaped == [0, 0]
        assert sb.wait_warm(sp, 60.0), "the sandbox never got ready"
    finally:
        sp.destroy()
        sb.close()
        other.close()
    assert _no_containers_left(sb.owner, 5.0) == []


# A judge that starts a sandbox (and one that only prepares), says so, then waits to be killed.
DOOMED_JUDGE = """
import sys, time
from judge.sandbox import SandboxConfig, open_sandbox
from judge.sandbox.job import Kind
sb = open_sandbox(SandboxConfig(kind="docker", docker_image="tensorjudge-sandbox:latest")).backend
ready = sb.spawn(Kind(), 256 << 20)
assert sb.wait_warm(ready, 60.0)
preparing = sb.spawn(Kind(("jax",)), 512 << 20, background=True)
print(sb.owner, flush=True)
time.sleep(600)
"""


def test_a_killed_judge_takes_its_sandboxes_with_it():
    """No judge is left to remove them: each container ends when its judge's connection
    closes, and the engine removes it (the volume it mounts is then free at once)."""
    import os
    import subprocess
    import sys

    docker_engine.images()
    proc = subprocess.Popen([sys.executable, "-c", DOOMED_JUDGE], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout is not None
        owner = proc.stdout.readline().strip()
        assert owner and len(docker_engine.sandbox_containers(owner)) == 2
    finally:
        proc.kill()
        proc.wait()
    assert _no_containers_left(owner, 15.0) == []


# A judge killed between creating a sandbox container and starting it: the container is
# left "created", and no connection of the judge's would end it.
STARTLESS_JUDGE = """
import time
from judge.sandbox import SandboxConfig, open_sandbox
from judge.sandbox.job import Kind
sb = open_sandbox(SandboxConfig(kind="docker", docker_image="tensorjudge-sandbox:latest")).backend
def never(cid, *args, **kwargs):
    print(sb.owner, flush=True)
    time.sleep(600)
sb.api.start = never
sb.spawn(Kind(), 256 << 20)
"""


def test_a_live_judge_removes_a_container_a_killed_one_never_started(monkeypatch):
    """Without spawning anything itself (an idle worker beside a killed one): its reap
    comes round on its own."""
    import os
    import subprocess
    import sys

    from judge.sandbox.container import sandbox as container_sandbox

    docker_engine.images()
    monkeypatch.setattr(container_sandbox, "REAP_EVERY_S", 0.5)
    live = _backend()
    proc = subprocess.Popen([sys.executable, "-c", STARTLESS_JUDGE], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout is not None
        owner = proc.stdout.readline().strip()
        assert [c["State"] for c in docker_engine.sandbox_containers(owner)] == ["created"]
    finally:
        proc.kill()
        proc.wait()
    try:
        assert _no_containers_left(owner, 10.0) == []
    finally:
        live.close()


@contextlib.contextmanager
def _one_light_spare() -> Iterator[SandboxPool]:
    """A pool over the docker backend holding one prepared spare of the kind that imports
    nothing (256 MB)."""
    docker_engine.images()
    pool = SandboxPool(_backend(), per_key=1)
    try:
        pool.prewarm(Kind(), 256 << 20)
        assert pool.wait_ready(1, 120)
        yield pool
    finally:
        pool.close()


@pytest.mark.parametrize("where", ["host", "engine"])
def test_a_spares_job_runs_at_its_shares_and_memory_from_its_first_instruction(
        where, monkeypatch):
    """A spare prepares at the lowest CPU shares under a looser memory limit; its job's
    shares and memory limit hold from its first instruction. A judge on the engine's host
    writes them in the container's cgroups (a call to the engine is tens of milliseconds of
    its work beside the job); one that sees none of them (`engine`: a judge in a container)
    asks the engine, in one call made before the job is sent (raised off the job's path
    instead, the light job of a fresh start ran at the lowest shares meanwhile)."""
    from judge.sandbox.container import host_cgroups
    from judge.sandbox.priority import CpuPriority

    if where == "engine":
        monkeypatch.setattr(host_cgroups.HostCgroups, "find", classmethod(
            lambda cls, cid: cls(cid, 1, None, None, None)))
    with _one_light_spare() as pool:
        [spare] = docker_engine.sandbox_containers(pool.backend.owner)
        api = docker_engine.client().api
        host = api.inspect_container(spare["Id"])["HostConfig"]
        assert host["Memory"] == 256 << 20
        if where == "host":  # (the engine is asked for a prepared spare's off any path)
            assert host["CpuShares"] == CpuPriority.BACKGROUND
        asked: list[dict] = []
        engine_update = pool.backend.api.update_container

        def update(cid, **limits):
            asked.append(limits)
            return engine_update(cid, **limits)

        monkeypatch.setattr(pool.backend.api, "update_container", update)
        # The job reads its own shares and memory limit at its first instruction (cgroup v1
        # or v2); the fixture's limit is 512 MB.
        light = (int(CpuPriority.LIGHT), CpuPriority.LIGHT.weight)
        probe = (
            "from pathlib import Path\n"
            "def read(v1, v2):\n"
            "    p = Path('/sys/fs/cgroup', v1)\n"
            "    return (p if p.exists() else Path('/sys/fs/cgroup', v2)).read_text().strip()\n"
            "FOUND = read('cpu/cpu.shares', 'cpu.weight'), read("
            "'memory/memory.limit_in_bytes', 'memory.max')\n"
            "def double(x):\n"
            f"    if int(FOUND[0]) not in {light} or int(FOUND[1]) != {512 << 20}:\n"
            "        raise RuntimeError('started at ' + repr(FOUND))\n"
            "    return (2 * x).reshape(-1)\n")
        # As on a fresh start: the calls to the engine made off the jobs' paths are queued
        # behind others.
        from judge.sandbox.container import spawned

        spawned._priorities.submit(time.sleep, 3.0)
        result = judge(load_package(FIXTURES / "double"), probe, pool)
        assert result.verdict is Verdict.AC, (result.tests[0].message, asked)
        job_limits = [a for a in asked if "mem_limit" in a]
        if where == "host":
            assert job_limits == []
        else:
            assert [(a["mem_limit"], a["memswap_limit"]) for a in job_limits] == [
                (512 << 20, 512 << 20)]


def test_the_pool_counts_the_memory_a_container_spare_holds():
    """A spare container's memory is read from its cgroup on the host: the pool's budget
    counts what spares hold. Counted at the pool's guess for an unseen kind (400 MB), three
    NumPy spares took more than half of the default budget, and a Flax Submit found too few
    spares to be cut in two."""
    with _one_light_spare() as pool:
        [spare] = pool.idle()
        held = spare.memory_bytes()
        assert held is not None and 1 << 20 < held < 200 << 20, held
        assert 0 < pool.idle_memory_bytes() < 200 << 20


def test_a_finished_runs_container_waits_quietly_for_the_judgement_to_end():
    """The engine tears down a finished run's container once the judge is done with it,
    after the judgement (the teardown is the engine's work, at the host's priority, and
    slowed the verdict's delivery); meanwhile nothing the submission started runs in it."""
    # A child forked by the submission outlives the runner, computing.
    code = ("import os\n"
            "if os.fork() == 0:\n"
            "    while True:\n"
            "        pass\n"
            "def double(x):\n"
            "    return (2 * x).reshape(-1)\n")
    with _one_light_spare() as pool:
        [spare] = pool.idle()
        with pool.judgement():
            result = judge(load_package(FIXTURES / "double"), code, pool)
            assert result.verdict is Verdict.AC, result.tests[0].message
            ids = {c["Id"] for c in docker_engine.sandbox_containers(pool.backend.owner)}
            assert spare.cid in ids, "torn down before the judgement ended"
            spent = spare.cpu_seconds()
            assert spent is not None, "its cgroup is gone: torn down already"
            time.sleep(1.0)
            assert spare.cpu_seconds() - spent < 0.1, "the forked child still runs"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and spare.cid in {
                c["Id"] for c in docker_engine.sandbox_containers(pool.backend.owner)}:
            time.sleep(0.1)
        assert spare.cid not in {
            c["Id"] for c in docker_engine.sandbox_containers(pool.backend.owner)}
