"""Helpers of the service tests (constants, clients, a fake judge)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import delete, select

from app.db import Database
from app.db.models import (
    Judgement,
    Problem,
    ProblemVersion,
    Submission,
    TestResultRow,
    Token,
    User,
    WorkerRow,
)
from app.settings import Settings
from tests.conftest import FIXTURES

FIXTURE_PROBLEMS = FIXTURES
DOUBLE = FIXTURE_PROBLEMS / "double"
PG_ADMIN_URL = os.environ.get("TENSORJUDGE_TEST_PG_URL",
                              "postgresql+psycopg://postgres@127.0.0.1:5432/test")
PASSWORD = "correct horse"

AC_CODE = "def double(x):\n    return (2 * x).reshape(-1)\n"
WA_CODE = "def double(x):\n    return x + 1\n"


def register(client: TestClient, username: str, password: str = PASSWORD) -> dict[str, str]:
    r = client.post("/api/v1/users", json={"username": username, "password": password})
    assert r.status_code == 201, r.text
    return login(client, username, password)


def login(client: TestClient, username: str, password: str = PASSWORD) -> dict[str, str]:
    r = client.post("/api/v1/tokens", json={"username": username, "password": password})
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


class FakeJudge:
    """Stands in for judge.engine.judge: returns the verdicts it is given, in turn (the last
    one repeats), optionally after a delay; records every call."""

    def __init__(self, *verdicts: str, delay: float = 0.0):
        self.verdicts = list(verdicts) or ["AC"]
        self.delay = delay
        self.calls: list[str] = []
        self.splits: list[bool] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def __call__(self, package: Any, code: str, sandbox: Any, *, samples_only: bool = False,
                 on_test: Any = None, split: bool = True):
        from judge.verdicts import JudgeResult, TestResult, Verdict

        self.calls.append(code)
        self.splits.append(split)
        self.started.set()
        self.release.wait(30)
        if self.delay:
            time.sleep(self.delay)
        v = Verdict(self.verdicts[min(len(self.calls), len(self.verdicts)) - 1])
        tests = [TestResult(t.name, v, time_ms=1.0) for t in package.select(samples_only)]
        for i, t in enumerate(tests):
            if on_test is not None:
                on_test(i, t)
        msg = "fake judge fault" if v is Verdict.IE else None
        return JudgeResult(v, tests, msg)


def copy_package(src: Path, dest_root: Path, slug: str, **manifest_lines: str) -> Path:
    """A copy of a package under a new slug; keyword args replace top-level manifest lines
    (`title='"X"'`)."""
    dest = dest_root / slug
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    toml = (dest / "problem.toml").read_text()
    lines = []
    for line in toml.splitlines():
        key = line.split("=", 1)[0].strip()
        if key == "slug":
            line = f'slug = "{slug}"'
        elif key in manifest_lines:
            line = f"{key} = {manifest_lines[key]}"
        lines.append(line)
    (dest / "problem.toml").write_text("\n".join(lines) + "\n")
    return dest


def make_settings(url: str, dirs: dict[str, Path], **overrides: Any) -> Settings:
    values: dict[str, Any] = dict(
        database_url=url, data_dir=dirs["data"], cache_dir=dirs["cache"],
        problems_dir=FIXTURE_PROBLEMS, secret_key="test-secret", argon2_time_cost=1,
        argon2_memory_kib=1024, lease_seconds=30.0, ie_retry_delay_seconds=0.0,
        poll_seconds=0.5, heartbeat_seconds=0.5, log_format="text")
    values.update(overrides)
    return Settings(**values)


def wipe(db: Database) -> None:
    """Back to the state right after base_ctx: only `double` version 1 stays."""
    with db.transaction() as s:
        for model in (TestResultRow, Judgement, Submission, Token, User, WorkerRow):
            s.execute(delete(model))
        s.execute(delete(Problem).where(Problem.slug != "double"))
        double_id = s.scalar(select(Problem.id).where(Problem.slug == "double"))
        s.execute(delete(ProblemVersion).where(ProblemVersion.problem_id == double_id,
                                               ProblemVersion.number > 1))


def slow_checks_for(monkeypatch: Any, slow_code: str, seconds: float) -> None:
    """The service's checks before a submission's insert take `seconds` for `slow_code`: a
    request that a busy server gets to late."""
    from app.services import submissions

    check = submissions.check_code

    def slowed(ctx: Any, code: str) -> None:
        if code == slow_code:
            time.sleep(seconds)
        check(ctx, code)

    monkeypatch.setattr(submissions, "check_code", slowed)

