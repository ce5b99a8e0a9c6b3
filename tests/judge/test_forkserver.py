"""Sandboxes forked from a fork server: as confined as bubblewrap's, and apart from each other
(the attacks of test_sandbox.py run against them too)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from judge.engine import judge
from judge.kinds import kind_for
from judge.sandbox import BwrapConfig, BwrapSandbox
from judge.sandbox.bwrap.forkserver import ForkServers
from judge.verdicts import Verdict
from tests.conftest import REPO
from tests.judge.conftest import forked_sandbox

pytestmark = pytest.mark.sandbox

CORRECT = "def double(x):\n    return (2 * x).reshape(-1)\n"


@pytest.fixture(scope="module")
def forked():
    sb = forked_sandbox()
    yield sb
    sb.close()


PROBE = """
import gc, json, os, socket
WRITE = ["/", "/dev", "/dev/shm", "/usr", "/opt", "/opt/tensorjudge", "/sys", "/proc", "/tmp"]

def writable(d):
    try:
        with open(os.path.join(d, "probe"), "w") as f:
            f.write("x")
        return True
    except OSError:
        return False

def fd_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False

def double(x):
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    caps = {k: int(v, 16) for k, v in status.items() if k.startswith("Cap")}
    mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
    print(json.dumps({
        "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
        "caps": caps, "no_new_privs": int(status["NoNewPrivs"]),
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "writable": [d for d in WRITE if writable(d)],
        "mounts": mounts, "hostname": socket.gethostname(),
        "net": [l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]],
        "status_fd_open": fd_open(4), "repo": os.path.exists(REPO),
        "frozen": gc.get_freeze_count(),
    }))
    return (2 * x).reshape(-1)
"""


def test_a_forked_sandbox_is_confined(forked, double):
    servers = forked.fork_servers
    before = servers.forked
    res = judge(double, PROBE.replace("REPO", repr(str(REPO))), forked, samples_only=True)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert servers.forked == before + 1 and servers.fallbacks == 0
    seen = json.loads(res.stdout.splitlines()[0])
    uid = forked.recent_uids[-1]
    assert seen["uid"] == seen["gid"] == uid and uid >= forked.config.uid_base
    assert seen["groups"] == []
    assert seen["caps"] and not any(seen["caps"].values()), seen["caps"]
    assert seen["no_new_privs"] == 1
    assert seen["pids"] == [1, 2]  # its own init and itself: nothing of the host or others
    assert seen["writable"] == ["/tmp"]
    assert not any(m.startswith("/sys") for m in seen["mounts"]), seen["mounts"]
    assert seen["hostname"] == "sandbox"
    assert seen["net"] == ["lo"]
    assert seen["status_fd_open"] is False  # the monitor's status pipe is not the user's
    assert seen["repo"] is False
    # The fork server's objects are frozen: the sandbox's collections leave their pages shared.
    assert seen["frozen"] > 10_000, seen["frozen"]


def _uid_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(f.read().split("Uid:")[1].split()[0])


def _namespaces(sp) -> dict[str, str]:
    """Of a process inside the sandbox (its monitor stays outside, as root)."""
    pid = next(p for p in sp.cgroup.pids() if _uid_of(p) == sp.uid)
    return {ns: os.readlink(f"/proc/{pid}/ns/{ns}") for ns in ("pid", "mnt", "ipc", "net", "uts")}


def test_forked_sandboxes_share_no_namespace_or_uid(forked, double):
    kind = kind_for(double, [])
    a = forked.spawn(kind, 256 << 20)
    b = forked.spawn(kind, 256 << 20)
    try:
        assert forked.wait_warm(a, 60) and forked.wait_warm(b, 60)
        assert a.uid != b.uid
        na, nb = _namespaces(a), _namespaces(b)
        mine = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in na}
        for ns in na:
            assert len({na[ns], nb[ns], mine[ns]}) == 3, ns
        host_uids = {_uid_of(p) for sp in (a, b) for p in sp.cgroup.pids()}
        # The monitor stays root outside the sandbox's pid namespace; all inside are its uid.
        assert host_uids <= {0, a.uid, b.uid} and {a.uid, b.uid} <= host_uids
    finally:
        a.destroy()
        b.destroy()


def test_the_fork_server_sees_no_judge_files(forked, double):
    judge(double, CORRECT, forked, samples_only=True)
    servers = forked.fork_servers
    pids = [s.pid for s in servers._servers.values()]
    assert pids
    for pid in pids:
        root = f"/proc/{pid}/root"
        assert os.path.isdir(f"{root}/usr")
        for path in (str(REPO), "/etc/passwd", "/var/lib/postgresql", "/home"):
            assert not os.path.exists(root + path), path


def test_without_a_fork_server_sandboxes_start_as_before(double, monkeypatch):
    def broken(self):
        return ["--ro-bind", "/nonexistent-tensorjudge", "/x"]

    monkeypatch.setattr(ForkServers, "_args", broken)
    sb = BwrapSandbox(BwrapConfig(fork_server=True))
    if sb.fork_servers is None:
        pytest.skip("the fork server needs root and cgroups")
    try:
        assert judge(double, CORRECT, sb).verdict is Verdict.AC
        assert judge(double, CORRECT, sb).verdict is Verdict.AC
        assert sb.fork_servers.forked == 0 and sb.fork_servers.fallbacks == 2
    finally:
        sb.close()


def _cpu_group(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "" or "cpu" in controllers.split(","):
            return path
    return ""


def test_a_fork_server_weighs_as_the_foremost_job_waiting_for_it():
    """A job behind one per core (judge/sandbox/turns.py) waiting for a fork server that
    still imports gives it its own weight: the import would otherwise take a core from the
    jobs that came first. Once it has imported, the server weighs as a job again."""
    import threading
    import time

    from judge.sandbox.priority import CpuPriority
    from judge.sandbox.turns import Turns

    sb = forked_sandbox()
    line = Turns(cores=1)
    first = line.enter(light=False)
    behind = line.enter(light=False)
    servers = sb.fork_servers
    assert servers is not None
    key = ("jax",)
    started = threading.Thread(target=servers._server, args=(key, {"preload": ["jax"]}),
                               kwargs={"turn": behind})
    seen: list[int] = []

    def weight() -> int | None:
        group = servers._groups.get(key)
        if group is None or group.cpu_dir is None:
            return None
        name = "cpu.weight" if group.version == 2 else "cpu.shares"
        try:
            return int((group.cpu_dir / name).read_text())
        except OSError:
            return None

    def value(p: CpuPriority) -> int:
        group = servers._groups[key]
        return p.weight if group.version == 2 else p.value

    try:
        started.start()
        while started.is_alive() and not seen:
            w = weight()
            if w is not None:
                seen.append(w)
            time.sleep(0.005)
        assert seen and seen[0] == value(CpuPriority.YIELD), "it imported at a job's weight"
        line.leave(first)
        started.join(120)
        assert key in servers._servers
        assert weight() == value(CpuPriority.NORMAL)
    finally:
        started.join(120)
        sb.close()


def test_each_fork_server_runs_in_a_cpu_group_of_its_own_at_a_jobs_weight():
    """A fork server importing its libraries weighs as one job's sandbox, beside the
    sandboxes: left in the judge's group, three of them importing at a fresh start outweighed
    the light job's sandbox and the judge process itself. Its group goes with it."""
    from judge.sandbox.priority import CpuPriority

    sb = forked_sandbox()
    try:
        assert sb.import_ahead(())
        server = sb.fork_servers._servers[()]
        group = server.group
        assert group is not None and group.cpu_dir is not None
        path = _cpu_group(server.proc.pid)
        assert path.startswith("/tensorjudge/sb-") and path.endswith(group.cpu_dir.name)
        assert path != _cpu_group(os.getpid())
        weight = (group.cpu_dir / ("cpu.weight" if group.version == 2 else "cpu.shares"))
        assert int(weight.read_text()) == (CpuPriority.NORMAL.weight if group.version == 2
                                           else CpuPriority.NORMAL.value)
        sb.fork_servers.close()
        assert not group.cpu_dir.exists()
    finally:
        sb.close()
