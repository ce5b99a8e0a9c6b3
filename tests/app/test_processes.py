"""Real processes against PostgreSQL: `tensorjudge worker`s killed and many clients at once.

Both use the fast `double` fixture problem and the real sandbox.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from app.context import Context
from app.db import migrate as migrations
from app.db.models import Judgement, Submission
from app.services import problems, queue, submissions, users
from tests.app.tj_testlib import AC_CODE, DOUBLE, FIXTURE_PROBLEMS, PASSWORD, WA_CODE

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

SLOW_AC = "import time\n\n\ndef double(x):\n    time.sleep(0.4)\n    return (2 * x).reshape(-1)\n"


@pytest.fixture
def pg_ctx(pg_url, session_dirs):
    from tests.app.tj_testlib import make_settings, wipe

    ctx = Context.create(make_settings(pg_url, session_dirs))
    migrations.upgrade(ctx.db)
    problems.store(ctx, DOUBLE, mode="ensure", validator=None)
    wipe(ctx.db)
    yield ctx
    ctx.close()


def tensorjudge() -> list[str]:
    exe = Path(sys.executable).with_name("tensorjudge")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "app.cli"]


@pytest.fixture
def processes(tmp_path):
    """Start tensorjudge commands as processes of their own; all are stopped at the end."""
    procs: list[subprocess.Popen] = []
    base = {k: v for k, v in os.environ.items() if not k.startswith("TENSORJUDGE_")}

    def start(*args: str, env: dict[str, str]) -> subprocess.Popen:
        log = open(tmp_path / f"proc{len(procs)}.log", "wb")  # noqa: SIM115
        p = subprocess.Popen([*tensorjudge(), *args], env={**base, **env},
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def service_env(settings, url: str | None) -> dict[str, str]:
    env = {
        "TENSORJUDGE_DATA_DIR": str(settings.data_dir),
        "TENSORJUDGE_CACHE_DIR": str(settings.cache_dir),
        "TENSORJUDGE_PROBLEMS_DIR": str(FIXTURE_PROBLEMS),
        "TENSORJUDGE_ARGON2_TIME_COST": "1",
        "TENSORJUDGE_ARGON2_MEMORY_KIB": "1024",
        "TENSORJUDGE_HEARTBEAT_SECONDS": "0.5",
        "TENSORJUDGE_POLL_SECONDS": "5",
        "TENSORJUDGE_LOG_LEVEL": "INFO",
    }
    if url:
        env["TENSORJUDGE_DATABASE_URL"] = url
        env["TENSORJUDGE_SECRET_KEY"] = settings.secret_key
    return env


@pytest.fixture
def spawn(pg_ctx, processes):
    """tensorjudge commands against the PostgreSQL test database."""
    env = service_env(pg_ctx.settings, pg_ctx.db.url)

    def start(*args: str, **extra_env: str) -> subprocess.Popen:
        return processes(*args, env={**env, **extra_env})

    return start


def wait_for(cond, timeout: float, what: str, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


def worker_of(ctx, pid: int) -> str:
    """What the names of process `pid`'s workers start with (each of its worker threads, the
    quick lane's too, is a worker of its own), once one of them is live."""
    name = wait_for(lambda: next((w["name"] for w in queue.live_workers(ctx)
                                  if f"-{pid}-" in w["name"]), None), 30, f"worker {pid}")
    return process_of(name)


def process_of(worker: str) -> str:
    """A worker's name less its thread's part (HOST-PID-INDEX-RANDOM)."""
    return worker.rsplit("-", 2)[0] + "-"


def test_a_worker_killed_mid_judging_is_replaced_after_its_lease(pg_ctx, spawn):
    ctx = pg_ctx
    lease = "2"
    a = spawn("worker", TENSORJUDGE_LEASE_SECONDS=lease)
    name_a = worker_of(ctx, a.pid)
    user = users.create_user(ctx, "alice", PASSWORD)
    sid = submissions.create(ctx, user, "double", SLOW_AC)["id"]

    def running_on_a():
        with ctx.db.transaction() as s:
            sub = s.get(Submission, sid)
            return (sub if sub.status == "running" and (sub.lease_owner or "").startswith(name_a)
                    else None)

    held = wait_for(running_on_a, 30, "worker A to take the submission")
    time.sleep(0.3)  # well inside the judgement (it takes more than a second)
    os.killpg(a.pid, signal.SIGKILL)
    a.wait()
    killed_at_lease = held.lease_expires_at

    b = spawn("worker", TENSORJUDGE_LEASE_SECONDS=lease)
    name_b = worker_of(ctx, b.pid)

    def done():
        with ctx.db.transaction() as s:
            sub = s.get(Submission, sid)
            return sub if sub.status == "done" else None

    sub = wait_for(done, 60, "the submission to be judged")
    with ctx.db.transaction() as s:
        js = list(s.scalars(select(Judgement).where(Judgement.submission_id == sid)))
    assert len(js) == 1, "exactly one final verdict"
    (j,) = js
    assert j.worker.startswith(name_b) and j.verdict == "AC" and sub.verdict == "AC"
    assert j.attempts == 2 and sub.fence == 2
    # B took it only once A's lease had run out (A had renewed it at most up to this).
    assert j.started_at >= killed_at_lease - timedelta(seconds=0.05)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_200_submissions_from_20_clients_with_2_workers(pg_ctx, spawn, capsys):
    ctx = pg_ctx
    port = free_port()
    spawn("serve", "--workers", "0", "--port", str(port))
    workers = [spawn("worker") for _ in range(2)]
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: _healthy(base, 2) and len({process_of(w["name"]) for w in
                                                queue.live_workers(ctx)}) == 2,
             60, "the server and 2 live worker processes", step=0.2)

    clients, per_client = 20, 10
    outcomes: dict[int, tuple[str, dict]] = {}
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def client(i: int) -> None:
        try:
            with httpx.Client(base_url=base, timeout=120) as c:
                name = f"client{i}"
                assert c.post("/api/v1/users", json={"username": name, "password": PASSWORD}
                              ).status_code == 201
                tok = c.post("/api/v1/tokens", json={"username": name, "password": PASSWORD}
                             ).json()["token"]
                h = {"Authorization": f"Bearer {tok}"}
                start.wait()
                mine = []
                for k in range(per_client):
                    want = "AC" if (i + k) % 2 == 0 else "WA"
                    r = c.post("/api/v1/submissions", headers=h, json={
                        "problem": "double", "code": AC_CODE if want == "AC" else WA_CODE})
                    assert r.status_code == 202, r.text
                    mine.append((r.json()["id"], want))
                for sid, want in mine:
                    while True:
                        s = c.get(f"/api/v1/submissions/{sid}", params={"wait": 30},
                                  headers=h).json()
                        if s["status"] == "done":
                            break
                    with lock:
                        outcomes[sid] = (want, s)
        except Exception as e:  # noqa: BLE001
            with lock:
                errors.append(f"client {i}: {e!r}")
            start.abort()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    for t in threads:
        t.join(300)
    elapsed = time.monotonic() - t0
    assert not errors, errors
    assert len(outcomes) == clients * per_client  # none lost
    wrong = {sid: (want, s["verdict"]) for sid, (want, s) in outcomes.items()
             if s["verdict"] != want}
    assert not wrong, wrong
    with ctx.db.transaction() as s:
        per_sub = dict(s.execute(select(Judgement.submission_id, func.count())
                                 .group_by(Judgement.submission_id)).all())
        by_worker = dict(s.execute(select(Judgement.worker, func.count())
                                   .group_by(Judgement.worker)).all())
        retried = s.scalar(select(func.count()).select_from(Submission)
                           .where(Submission.attempts != 1))
    assert sorted(per_sub) == sorted(outcomes)
    assert set(per_sub.values()) == {1}  # none judged twice
    assert retried == 0
    by_process: dict[str, int] = {}
    for name, n in by_worker.items():
        by_process[process_of(name)] = by_process.get(process_of(name), 0) + n
    assert len(by_process) == 2 and all(n > 0 for n in by_process.values())
    assert all(w.poll() is None for w in workers)
    with capsys.disabled():
        print(f"\n200 submissions, 20 clients, 2 worker processes: all judged in {elapsed:.1f} s "
              f"({200 / elapsed:.1f}/s); per worker process {sorted(by_process.values())}")


def _healthy(base: str, n: int) -> bool:
    try:
        h = httpx.get(f"{base}/healthz", timeout=2).json()
    except httpx.HTTPError:
        return False
    return h.get("live_workers", 0) >= n


def test_sigterm_lets_the_judgement_in_progress_finish(pg_ctx, spawn):
    ctx = pg_ctx
    w = spawn("worker")
    name = worker_of(ctx, w.pid)
    user = users.create_user(ctx, "alice", PASSWORD)
    sid = submissions.create(ctx, user, "double", SLOW_AC)["id"]
    wait_for(lambda: submissions.get(ctx, user, sid)["status"] == "running", 30, "running")
    os.kill(w.pid, signal.SIGTERM)
    assert w.wait(30) == 0
    s = submissions.get(ctx, user, sid)
    assert s["status"] == "done" and s["verdict"] == "AC"
    assert s["judgements"][0]["worker"].startswith(name)
    assert queue.live_workers(ctx) == []  # it said goodbye


def test_serve_with_no_configuration(processes, tmp_path):
    """The embedded default: SQLite under the data directory, schema created, the bundled
    problems loaded, one embedded worker judging."""
    from app.settings import Settings

    st = Settings(data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    port = free_port()
    processes("serve", "--port", str(port), env=service_env(st, None))
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: _healthy(base, 1), 60, "the server", step=0.2)
    assert (tmp_path / "data" / "tensorjudge.db").is_file()
    with httpx.Client(base_url=base, timeout=60) as c:
        assert [p["slug"] for p in c.get("/api/v1/problems").json()] == ["double"]
        assert c.post("/api/v1/users", json={"username": "alice", "password": PASSWORD}
                      ).status_code == 201
        tok = c.post("/api/v1/tokens", json={"username": "alice", "password": PASSWORD}
                     ).json()["token"]
        h = {"Authorization": f"Bearer {tok}"}
        sid = c.post("/api/v1/submissions", headers=h,
                     json={"problem": "double", "code": AC_CODE}).json()["id"]
        s = c.get(f"/api/v1/submissions/{sid}?wait=30", headers=h).json()
        assert s["verdict"] == "AC"
        assert c.get("/api/v1/problems/double").json()["samples"][0]["name"] == "sample-1"


@pytest.mark.parametrize("broken", ["sandbox", "database"])
def test_serve_that_cannot_start_says_why(processes, tmp_path, broken):
    """Its sandbox pool opens while the service loads: either failing ends `serve` with the
    reason and exit status 2, and nothing it started stays behind."""
    from app.settings import Settings

    st = Settings(data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    env = service_env(st, None)
    if broken == "sandbox":
        env |= {"TENSORJUDGE_SANDBOX": "docker",
                "TENSORJUDGE_DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
        reason = "no Docker engine answers"
    else:
        env["TENSORJUDGE_DATABASE_URL"] = "postgresql+psycopg://nobody@127.0.0.1:1/none"
        reason = "cannot migrate the database"
    p = processes("serve", "--port", str(free_port()), env=env)
    assert p.wait(120) == 2
    assert reason in (tmp_path / "proc0.log").read_text()
    leftovers = subprocess.run(["pgrep", "-s", str(p.pid)], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""
