"""Fixtures of the adversarial suite: one real server for the whole session, and the record
of every attack's outcome (artifacts/security/attacks.json, turned into SECURITY.md's table by
scripts/security-table)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.adversarial import harness
from tests.adversarial.harness import Server

# The service tests' database fixtures (SQLite and PostgreSQL) and their real-process ones.
from tests.app.conftest import (  # noqa: F401
    base_ctx,
    client,
    ctx,
    pg_url,
    session_dirs,
    sqlite_url,
)
from tests.app.test_processes import pg_ctx, processes, spawn  # noqa: F401

PASSWORDS = {"mallory": f"mallory-pw-{secrets.token_hex(8)}",
             "alice": f"alice-pw-{secrets.token_hex(8)}"}


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = harness.start_server(tmp_path_factory.mktemp("adversarial"))
    try:
        srv.attacker = harness.register(srv, "mallory", PASSWORDS["mallory"])
        srv.victim = harness.register(srv, "alice", PASSWORDS["alice"])
        srv.secrets["victim password"] = PASSWORDS["alice"]
        harness.warm_up(srv)
        yield srv
    finally:
        harness.stop_server(srv)


class AttackLog:
    """Outcomes by corpus file, written after each (a partial run still leaves a record)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.path = harness.ARTIFACTS / "attacks.json"

    def record(self, row: dict[str, Any]) -> None:
        self.rows[row["file"]] = row
        self.path.parent.mkdir(parents=True, exist_ok=True)
        old: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            try:
                old = {r["file"]: r for r in json.loads(self.path.read_text())["attacks"]}
            except (ValueError, KeyError, TypeError):
                old = {}
        current = {a.path.name for a in harness.corpus()}
        merged = {k: v for k, v in {**old, **self.rows}.items() if k in current}
        rows = [merged[k] for k in sorted(merged)]
        self.path.write_text(json.dumps({"attacks": rows}, indent=1) + "\n")


@pytest.fixture(scope="session")
def attack_log() -> AttackLog:
    return AttackLog()
