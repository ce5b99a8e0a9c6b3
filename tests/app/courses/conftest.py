"""Fixtures of the course tests: the service tests' databases (SQLite and PostgreSQL,
tests/app/conftest.py), with the course tables emptied before each test too (tj_testlib.wipe
empties the rest)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from app.context import Context
from app.db.models import Course, LtiRegistration, LtiState
from tests.app.tj_testlib import register


@pytest.fixture
def client(ctx: Context) -> Iterator[TestClient]:
    """The application without its course upkeep thread: the tests call its steps when
    they mean them to happen."""
    from app.main import create_app

    ctx.settings = ctx.settings.model_copy(update={"course_upkeep_seconds": 0.0})
    with TestClient(create_app(ctx.settings, ctx=ctx)) as c:
        yield c


@pytest.fixture(autouse=True)
def _no_courses(ctx: Context) -> Iterator[None]:
    with ctx.db.transaction() as s:
        for model in (Course, LtiRegistration, LtiState):
            s.execute(delete(model))
    yield


def iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat()


def now() -> datetime:
    return datetime.now(UTC)


def assignment_body(**over: Any) -> dict[str, Any]:
    t = now()
    body: dict[str, Any] = {
        "title": "Week 1", "problems": [{"slug": "double", "points": 10}],
        "opens_at": iso(t - timedelta(hours=1)), "due_at": iso(t + timedelta(days=1)),
        "late_until": iso(t + timedelta(days=4)), "late_penalty_pct": 10.0,
        "scoring": "best", "feedback": "full"}
    body.update(over)
    return body


class Course_:
    """A course with an instructor, a teaching assistant and two learners, made through the
    API."""

    def __init__(self, client: TestClient, prefix: str = "c"):
        self.client = client
        self.instructor = register(client, f"{prefix}teach")
        self.ta = register(client, f"{prefix}assist")
        self.learner = register(client, f"{prefix}learn1")
        self.other = register(client, f"{prefix}learn2")
        r = client.post("/api/v1/courses", json={"title": f"{prefix} ML"},
                        headers=self.instructor)
        assert r.status_code == 201, r.text
        self.id = r.json()["id"]
        self.code = r.json()["invite_code"]
        for who in (self.learner, self.other):
            assert client.post("/api/v1/courses/join", json={"code": self.code},
                               headers=who).status_code == 200
        r = client.post(f"/api/v1/courses/{self.id}/members",
                        json={"username": f"{prefix}assist", "role": "ta"},
                        headers=self.instructor)
        assert r.status_code == 201, r.text

    def assignment(self, **over: Any) -> dict[str, Any]:
        r = self.client.post(f"/api/v1/courses/{self.id}/assignments",
                             json=assignment_body(**over), headers=self.instructor)
        assert r.status_code == 201, r.text
        return r.json()
