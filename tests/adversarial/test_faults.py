"""Faults of the judge's own machinery: a worker killed mid-judgement, the database restarted
under working workers, a sandbox's /tmp filled, the sandbox binary missing."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.context import Context
from app.db import migrate as migrations
from app.db.models import Judgement, Submission
from app.services import problems, submissions, users
from judge.engine import judge
from judge.package import load_package
from judge.sandbox import BwrapSandbox, SandboxPool
from judge.sandbox.bwrap.cgroups import PARENT
from judge.verdicts import Verdict
from tests.adversarial.harness import sandbox_processes
from tests.app.test_processes import (
    free_port,
    service_env,
    tensorjudge,
    wait_for,
    worker_of,
)
from tests.app.tj_testlib import AC_CODE, DOUBLE, PASSWORD, make_settings
from tests.conftest import FIXTURES

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

# About a second of judging (3 tests), well inside the limits.
SLOW_AC = "import time\n\n\ndef double(x):\n    time.sleep(0.3)\n    return (2 * x).reshape(-1)\n"


def _groups_of(pid: int) -> list[Path]:
    out = []
    for ctl in ("memory", "pids", ""):
        d = Path("/sys/fs/cgroup") / ctl / PARENT
        if d.is_dir():
            out += [p for p in d.iterdir() if p.name.startswith(f"sb-{pid}-")]
    return out


@pytest.mark.slow
def test_a_worker_killed_mid_judging_leaves_no_sandbox_and_another_finishes(pg_ctx, spawn):
    """Complements tests/app/test_processes.py (the lease and the fence): what the killed
    worker's sandbox leaves on the host. Its processes die with it (--die-with-parent); its
    cgroups stay until the next worker on the host starts and removes them."""
    ctx = pg_ctx
    a = spawn("worker", TENSORJUDGE_LEASE_SECONDS="2", TENSORJUDGE_POOL_SIZE="0")
    worker_of(ctx, a.pid)
    user = users.create_user(ctx, "alice", PASSWORD)
    sid = submissions.create(ctx, user, "double", SLOW_AC)["id"]
    wait_for(lambda: sandbox_processes(a.pid), 60, "worker A's sandbox to start", step=0.02)
    wait_for(lambda: submissions.get(ctx, user, sid)["status"] == "running", 30, "running")
    os.killpg(a.pid, signal.SIGKILL)
    a.wait()
    # The sandbox dies with its judge: nothing of it runs on.
    wait_for(lambda: not [p for g in _groups_of(a.pid)
                          for p in (g / "cgroup.procs").read_text().split()], 10,
             "the killed worker's sandbox processes to die")
    # (A process on its way out is briefly outside its cgroup with no command line: give the
    # kernel a moment.)
    wait_for(lambda: not [r for r in sandbox_processes(a.pid) if "zombie" not in r], 10,
             "no process of the killed worker's sandbox left")

    b = spawn("worker", TENSORJUDGE_LEASE_SECONDS="2", TENSORJUDGE_POOL_SIZE="0")
    worker_of(ctx, b.pid)
    assert _groups_of(a.pid) == [], "the next worker removes the dead worker's cgroups"
    wait_for(lambda: submissions.get(ctx, user, sid)["status"] == "done", 60, "judged")
    s = submissions.get(ctx, user, sid)
    assert s["verdict"] == "AC" and len(s["judgements"]) == 1 and s["attempts"] == 2


@pytest.fixture
def own_postgres(session_dirs) -> Iterator[tuple[Context, Callable[[], None]]]:
    """A PostgreSQL server of the test's own (a new cluster on a free port, the machine's
    server binaries), with the schema and the fixture problem, and a function that restarts
    it. Restarting the machine's shared server instead broke whichever test on the other
    worker was using it at that moment."""
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not binaries:
        pytest.skip("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin) to start one")
    bindir = binaries[-1].parent
    # Not under pytest's temporary folder: the server's user must reach it.
    root = Path(tempfile.mkdtemp(prefix="tj-pg-"))
    as_server: list[str] = []
    if os.geteuid() == 0:  # initdb and the server refuse to run as root
        shutil.chown(root, "postgres", "postgres")
        as_server = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", free_port()

    def ctl(*args: str) -> None:
        subprocess.run([*as_server, str(bindir / "pg_ctl"), "-D", str(data), *args],
                       check=True, capture_output=True, timeout=120)

    subprocess.run([*as_server, str(bindir / "initdb"), "-D", str(data), "-A", "trust",
                    "-U", "postgres", "--no-sync"], check=True, capture_output=True, timeout=120)
    # Its log to a file: a server writing to pg_ctl's output would hold the pipe open.
    log = ("-l", str(root / "server.log"))
    ctl(*log, "-w", "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off",
        "start")
    ctx = None
    try:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute("CREATE DATABASE test")
        url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/test"
        ctx = Context.create(make_settings(url, session_dirs))
        migrations.upgrade(ctx.db)
        problems.store(ctx, DOUBLE, mode="ensure", validator=None)
        yield ctx, lambda: ctl(*log, "-w", "restart")
    finally:
        if ctx is not None:
            ctx.close()
        with contextlib.suppress(subprocess.SubprocessError):
            ctl("-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_postgresql_restarted_while_workers_judge(own_postgres, processes):
    """Two standalone workers judge a queue; the database server restarts in the middle.
    They reconnect, and every submission ends with exactly one verdict: none lost, none
    judged twice."""
    ctx, restart = own_postgres
    env = service_env(ctx.settings, ctx.db.url)
    workers = [processes("worker", env={**env, "TENSORJUDGE_POOL_SIZE": "1",
                                        "TENSORJUDGE_POLL_SECONDS": "1"})
               for _ in range(2)]
    for w in workers:
        worker_of(ctx, w.pid)
    user = users.create_user(ctx, "alice", PASSWORD)
    ids = [submissions.create(ctx, user, "double", SLOW_AC if i % 2 else AC_CODE)["id"]
           for i in range(12)]

    def count(status: str) -> int:
        with ctx.db.transaction() as s:
            return s.scalar(select(func.count()).select_from(Submission)
                            .where(Submission.status == status)) or 0

    wait_for(lambda: count("done") >= 2 and count("running") >= 1, 60, "judging under way")
    t0 = time.monotonic()
    restart()
    restarted_in = time.monotonic() - t0

    def all_done() -> bool:
        try:
            return count("done") == len(ids)
        except Exception:  # noqa: BLE001 - the server may still be starting
            return False

    wait_for(all_done, 240, "every submission judged after the restart", step=0.5)
    with ctx.db.transaction() as s:
        per_sub = dict(s.execute(select(Judgement.submission_id, func.count())
                                 .where(Judgement.submission_id.in_(ids))
                                 .group_by(Judgement.submission_id)).all())
        verdicts = dict(s.execute(select(Submission.id, Submission.verdict)
                                  .where(Submission.id.in_(ids))).all())
    assert per_sub == {i: 1 for i in ids}, "exactly one verdict each"
    assert set(verdicts.values()) == {"AC"}, verdicts
    assert all(w.poll() is None for w in workers), "the workers survived the restart"
    assert restarted_in < 120


def test_a_full_tmp_does_not_reach_the_next_submission():
    """A submission fills its /tmp (a 64 MiB tmpfs); the next one, from a pool of prepared
    sandboxes, finds an empty /tmp with its whole size free, and is Accepted."""
    package = load_package(FIXTURES / "double")
    pool = SandboxPool(BwrapSandbox(), per_key=1, max_idle=2)
    try:
        # Files of 8 MiB each (one file may not pass 16 MiB: RLIMIT_FSIZE) until ENOSPC.
        fill = ("import itertools\ndef double(x):\n    chunk = b'x' * (1 << 20)\n"
                "    for i in itertools.count():\n"
                "        with open(f'/tmp/fill{i}', 'wb') as f:\n"
                "            for _ in range(8):\n                f.write(chunk)\n"
                "                f.flush()\n")
        res = judge(package, fill, pool)
        assert res.verdict is Verdict.RE, res.to_dict()
        assert "No space left on device" in (res.message or ""), res.message
        # The next one is to come from the pool: a job finding no prepared sandbox would not
        # wait for one (judge/sandbox/pool.py).
        assert pool.wait_ready(1, 120), "a spare prepared after the first submission"
        probe = ("import os\ndef double(x):\n    st = os.statvfs('/tmp')\n"
                 "    assert os.listdir('/tmp') == [], os.listdir('/tmp')\n"
                 "    assert st.f_bavail * st.f_frsize > 60 << 20, st\n"
                 "    return (2 * x).reshape(-1)\n")
        res = judge(package, probe, pool)
        assert res.verdict is Verdict.AC, res.to_dict()
        assert pool.stats.hits + pool.stats.waits >= 1, "the second one came from the pool"
    finally:
        pool.close()


def _start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TENSORJUDGE_")}
    return subprocess.run([*tensorjudge(), *args], env={**base, **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("how", ["missing-path", "not-on-path", "not-bubblewrap"])
@pytest.mark.parametrize("command", [["worker"], ["serve", "--workers", "1", "--port", "0"]])
def test_no_sandbox_binary_is_a_clear_startup_error(tmp_path, how, command):
    """Without a working bubblewrap a worker (or a server with workers) stops at once with a
    message that says so, before it claims anything: no queue of Internal Errors."""
    env = {"TENSORJUDGE_DATA_DIR": str(tmp_path / "data"),
           "TENSORJUDGE_CACHE_DIR": str(tmp_path / "cache"),
           "TENSORJUDGE_PROBLEMS_DIR": str(FIXTURES)}
    if how == "missing-path":
        env["TENSORJUDGE_BWRAP"] = str(tmp_path / "no" / "bwrap")
    elif how == "not-on-path":
        env["PATH"] = str(tmp_path)  # no bwrap here
    else:
        env["TENSORJUDGE_BWRAP"] = shutil.which("true") or "/bin/true"
    t0 = time.monotonic()
    r = _start(command, env, tmp_path)
    assert r.returncode != 0, r.stdout + r.stderr
    assert time.monotonic() - t0 < 60
    err = r.stderr
    if how == "not-bubblewrap":
        assert "is not a working bubblewrap" in err, err
    else:
        assert "sandbox binary" in err and "was not found" in err, err
    assert "Traceback" not in err, err
    # It stopped before touching the queue: no database was even created.
    assert not (tmp_path / "data" / "tensorjudge.db").exists()
