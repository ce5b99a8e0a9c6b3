"""The container deployment as a user starts it: docker-compose.yml on a real engine, from the
images `./dev images` builds. One stack (two workers) for the module, under a project name of
its own and a free port: its first verdicts come while it is still cold (empty volumes but
what the images seed them with), and `docker-compose down -v` while submissions are being
judged must leave nothing behind."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from judge.sandbox.container.owners import DEPLOYMENT_LABEL, WORKER_LABEL
from tests import docker_engine
from tests.app.test_processes import free_port
from tests.conftest import REPO

pytestmark = [pytest.mark.container, pytest.mark.slow]
PROBLEMS = REPO / "problems"
# A Flax problem and a NumPy one: every kind of sandbox is proven on bubblewrap
# (tests/problems) and the docker backend's on a real engine (test_docker_sandbox.py); here,
# the deployment end to end.
CORRECT = {
    "encoder-block": "encoder-block/submissions/accepted/compact_class.py",
    "decoder-block": "decoder-block/submissions/accepted/numpy_einsum.py",
}


def compose_binary() -> str:
    found = shutil.which("docker-compose")
    if found is None:
        raise RuntimeError("docker-compose is missing: scripts/docker-engine installs it")
    return found


@dataclass
class Stack:
    project: str
    env_file: Path
    port: int
    up_s: float = 0.0  # from `up` to two live workers

    def compose(self, *args: str, timeout: float = 600, check: bool = True) -> str:
        cmd = [compose_binary(), "-f", str(REPO / "docker-compose.yml"), "-p", self.project,
               "--env-file", str(self.env_file), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done.stdout + done.stderr

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def health(self) -> dict:
        return httpx.get(f"{self.base}/healthz", timeout=10).json()

    def psql(self, sql: str) -> str:
        return subprocess.run(
            [docker_engine.DOCKER, "exec", f"{self.project}_db_1", "psql", "-U", "tensorjudge",
             "-d", "tensorjudge", "-Atc", sql],
            capture_output=True, text=True, timeout=60, check=True).stdout

    def wait_workers(self, n: int, timeout_s: float = 300) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                # Worker containers, each with its workers (its quick lane's too).
                hosts = {w["hostname"] for w in self.health().get("workers", [])}
                if len(hosts) == n:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise AssertionError(f"not {n} live worker containers: "
                             f"{self.compose('logs', '--tail=30')}")


class User:
    def __init__(self, stack: Stack):
        self.api = f"{stack.base}/api/v1"
        self.client = httpx.Client(timeout=120)
        name, pw = f"u{secrets.token_hex(4)}", secrets.token_hex(12)
        r = self.client.post(f"{self.api}/users", json={"username": name, "password": pw})
        assert r.status_code == 201, r.text
        token = self.client.post(f"{self.api}/tokens",
                                 json={"username": name, "password": pw}).json()["token"]
        self.client.headers["Authorization"] = f"Bearer {token}"

    def submit(self, problem: str, code: str, mode: str = "submit") -> int:
        r = self.client.post(f"{self.api}/submissions",
                             json={"problem": problem, "code": code, "mode": mode})
        assert r.status_code == 202, r.text
        return int(r.json()["id"])

    def wait(self, sid: int, timeout_s: float = 600) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            s = self.client.get(f"{self.api}/submissions/{sid}", params={"wait": 30}).json()
            if s["status"] == "done":
                return s
        raise AssertionError(f"submission {sid} not judged in {timeout_s} s")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    docker_engine.images()
    project = f"tjtest{secrets.token_hex(3)}"
    env = tmp_path_factory.mktemp("compose") / ".env"
    gid = Path("/var/run/docker.sock").stat().st_gid
    port = free_port()
    env.write_text("\n".join([
        f"TENSORJUDGE_SECRET_KEY={secrets.token_hex(32)}",
        f"POSTGRES_PASSWORD={secrets.token_hex(16)}",
        "DOCKER_SOCKET=/var/run/docker.sock",
        f"DOCKER_GID={gid}",
        f"TENSORJUDGE_PUBLISH=127.0.0.1:{port}",
        "TENSORJUDGE_VERSION=latest",
        f"COMPOSE_PROJECT_NAME={project}",
        "TENSORJUDGE_LEASE_SECONDS=10",
    ]) + "\n")
    st = Stack(project, env, port)
    try:
        t0 = time.monotonic()
        st.compose("up", "-d", "--scale", "worker=2")
        st.wait_workers(2)
        st.up_s = time.monotonic() - t0
        yield st
    finally:
        st.compose("down", "-v", "--timeout", "20", check=False)


def test_first_verdicts_of_a_cold_deployment(stack, record_property):
    """Right after `up`: a Flax and a NumPy submission, correct and wrong, through the API.
    How long the first verdicts took is printed (never asserted: the machine decides)."""
    user = User(stack)
    sent: dict[int, tuple[str, str]] = {}
    t0 = time.monotonic()
    for problem, rel in CORRECT.items():
        sent[user.submit(problem, (PROBLEMS / rel).read_text())] = (problem, "AC")
    for problem in CORRECT:
        wrong = sorted((PROBLEMS / problem / "submissions" / "wrong_answer").glob("*.py"))[0]
        sent[user.submit(problem, wrong.read_text())] = (problem, "WA")
    got: dict[int, str] = {}

    def wait(sid: int) -> None:
        got[sid] = User.wait(user, sid)["verdict"]
        took = time.monotonic() - t0
        problem, want = sent[sid]
        print(f"cold deployment: {problem} {want} verdict {took:.1f} s after the POST "
              f"({took + stack.up_s:.1f} s after `up`)")
        record_property(f"first_{problem}_{want}_s", round(took, 1))

    waiters = [threading.Thread(target=wait, args=(sid,)) for sid in sent]
    for t in waiters:
        t.start()
    for t in waiters:
        t.join(700)
    assert got == {sid: want for sid, (_, want) in sent.items()}


def test_two_workers_share_a_burst_none_lost_none_twice(stack):
    code = (PROBLEMS / CORRECT["decoder-block"]).read_text()
    sids: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        user = User(stack)
        for _ in range(5):
            sid = user.submit("decoder-block", code)
            with lock:
                sids.append(sid)

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(sids) == 20
    # Four owners: the database sees them all.
    deadline = time.monotonic() + 600
    ids = ",".join(map(str, sids))
    while time.monotonic() < deadline:
        left = stack.psql(f"select count(*) from submissions where id in ({ids}) "
                          "and status <> 'done'").strip()
        if left == "0":
            break
        time.sleep(1)
    rows = stack.psql(f"select submission_id, count(*), min(worker), min(verdict) from judgements "
                      f"where submission_id in ({ids}) group by submission_id").split()
    per_sub = {int(r.split("|")[0]): r.split("|")[1:] for r in rows}
    assert sorted(per_sub) == sorted(sids)  # none lost
    assert {v[0] for v in per_sub.values()} == {"1"}  # none judged twice
    assert {v[2] for v in per_sub.values()} == {"AC"}
    workers = {v[1].rsplit("-", 3)[0] for v in per_sub.values()}
    assert len(workers) == 2, workers  # both worker containers judged


def slow_correct_code() -> str:
    """Slow enough to be caught mid-judging: a sleep in every test, then the right answer."""
    code = (PROBLEMS / CORRECT["decoder-block"]).read_text().replace(
        "import numpy as np", "import numpy as np\nimport time as _t", 1)
    entry = "def decoder_block_forward("
    assert entry in code
    return code.replace(entry, "def _real_forward(", 1) + (
        "\n\ndef decoder_block_forward(*a, **k):\n    _t.sleep(1.0)\n"
        "    return _real_forward(*a, **k)\n")


def worker_sandboxes(worker: str) -> list[dict]:
    return [c for c in docker_engine.sandbox_containers()
            if (c.get("Labels") or {}).get(WORKER_LABEL) == worker]


def test_a_killed_worker_loses_nothing_and_leaves_no_sandbox(stack):
    user = User(stack)
    sid = user.submit("decoder-block", slow_correct_code())
    victim = ""
    deadline = time.monotonic() + 120
    while not victim and time.monotonic() < deadline:
        # The lease's owner: a worker name begins with its container's hostname.
        owner = stack.psql(f"select lease_owner from submissions where id = {sid} "
                           "and status = 'running'").strip()
        victim = owner.rsplit("-", 3)[0] if owner else ""
        time.sleep(0.1)
    assert victim, "no worker took the submission"
    name = docker_engine.client().containers.get(victim).name
    assert worker_sandboxes(name), "the worker judges in no sandbox container"
    subprocess.run([docker_engine.DOCKER, "kill", victim], check=True, capture_output=True)
    done = user.wait(sid)
    assert done["verdict"] == "AC", done["result"]
    rows = stack.psql(f"select worker, attempts from judgements where submission_id = {sid}")
    assert len(rows.split()) == 1 and rows.split("|")[1].strip() == "2", rows
    assert victim not in rows
    # Its sandboxes ended with its connection to the engine (the one judging too).
    deadline = time.monotonic() + 20
    while worker_sandboxes(name) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert worker_sandboxes(name) == []
    stack.compose("up", "-d", "--scale", "worker=2")  # the killed one back, for what follows
    stack.wait_workers(2)


def test_down_while_judging_leaves_nothing_behind(stack):
    user = User(stack)
    sids = [user.submit("decoder-block", slow_correct_code()) for _ in range(4)]
    deadline = time.monotonic() + 120
    ids = ",".join(map(str, sids))
    while time.monotonic() < deadline:
        running = stack.psql(f"select count(*) from submissions where id in ({ids}) "
                             "and status = 'running'").strip()
        if int(running or 0) >= 2:  # both workers judging
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the workers never judged two at once")
    stack.compose("down", "-v")
    client = docker_engine.client()
    label = f"com.docker.compose.project={stack.project}"
    assert client.containers.list(all=True, filters={"label": label}) == []
    assert client.networks.list(filters={"label": label}) == []
    assert [v.name for v in client.volumes.list() if v.name.startswith(stack.project)] == []
    # The sandbox containers the workers started are gone with them (no wait: the cache
    # volume they mount was removable).
    deployment = f"{DEPLOYMENT_LABEL}={stack.project}"
    assert client.api.containers(all=True, filters={"label": deployment}) == []
