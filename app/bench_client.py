"""The benchmark's side of the service: a real `tensorjudge serve` started for a measurement,
a signed-up client that posts a submission and waits for its verdict, and what one such
judgement measured."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from judge import cut


@dataclass(frozen=True)
class Case:
    problem: str
    label: str  # framework and style
    path: Path

    @property
    def code(self) -> str:
        return self.path.read_text(encoding="utf-8")


@dataclass
class Sample:
    wall_ms: float  # POST to final verdict
    user_ms: float  # inside the user's function, as the sandbox measured it
    compile_ms: float  # of user_ms, compilation the warm-up could not foresee
    verdict: str
    diagnosis_ms: float = 0.0  # of wall_ms, the diagnosis after the verdict
    finding: str = ""  # the first finding's title

    @property
    def overhead_ms(self) -> float:
        return self.wall_ms - self.user_ms


@dataclass
class Series:
    samples: list[Sample] = field(default_factory=list)

    def pct(self, attr: str, q: float) -> float:
        xs = sorted(getattr(s, attr) for s in self.samples)
        if not xs:
            return float("nan")
        return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]

    @property
    def verdicts(self) -> set[str]:
        return {s.verdict for s in self.samples}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server(name: str, tmp: Path, env_extra: dict[str, str], workers: int = 2) -> Iterator[str]:
    port = _free_port()
    data = tmp / name
    data.mkdir()
    env = {**os.environ, "TENSORJUDGE_DATA_DIR": str(data),
           "TENSORJUDGE_DATABASE_URL": "", "TENSORJUDGE_RATE_LIMIT": "1000000",
           "TENSORJUDGE_QUEUE_MAX": "100000", "TENSORJUDGE_LOG_LEVEL": "WARNING", **env_extra}
    log = open(data / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"the {name} server exited; see {data / 'server.log'}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


class Client:
    def __init__(self, url: str):
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=120)
        user = f"bench{os.getpid()}{int(time.time() * 1000) % 100000}"
        self.http.post("/api/v1/users", json={"username": user, "password": "bench-password-1"})
        tok = self.http.post("/api/v1/tokens",
                             json={"username": user, "password": "bench-password-1"}).json()
        self.http.headers["Authorization"] = f"Bearer {tok['token']}"

    def post(self, case: Case, mode: str) -> int:
        r = self.http.post("/api/v1/submissions",
                           json={"problem": case.problem, "code": case.code, "mode": mode})
        r.raise_for_status()
        return int(r.json()["id"])

    def wait(self, sid: int) -> dict[str, Any]:
        while True:
            view = self.http.get(f"/api/v1/submissions/{sid}", params={"wait": 60}).json()
            if view["status"] == "done":
                return view

    def judge(self, case: Case, mode: str) -> Sample:
        t0 = time.perf_counter()
        view = self.wait(self.post(case, mode))
        wall = (time.perf_counter() - t0) * 1000.0
        result = view.get("result") or {}
        tests = result.get("tests") or []
        # Tests cut across parallel sandboxes: the user's time on the critical path is the
        # longest part's (the same for compile time).
        ranges = cut(len(tests), max(int(result.get("parts") or 1), 1))

        def longest(key: str) -> float:
            return max((sum(t.get(key) or 0 for t in tests[a:b]) for a, b in ranges), default=0)

        findings = result.get("diagnosis") or []
        return Sample(wall, longest("time_ms"), longest("compile_ms"), view["verdict"],
                      float(result.get("diagnosis_ms") or 0.0),
                      findings[0]["title"] if findings else "")

    def pool(self) -> dict[str, Any] | None:
        return self.http.get("/healthz").json().get("sandbox_pool")

    def prepared(self, timeout: float = 900.0) -> float | None:
        """Wait for the workers' start-up preparation to end (caches filled, a sandbox of
        each kind prepared, trusted outputs computed); the seconds it took from their start,
        or None for a server without a pool."""
        deadline = time.monotonic() + timeout
        while True:
            p = self.pool()
            if p is None or p.get("prepared_after_s") is not None:
                return None if p is None else float(p["prepared_after_s"])
            if time.monotonic() > deadline:
                raise TimeoutError(f"the judge was still preparing after {timeout:.0f} s")
            time.sleep(0.5)

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until the pool has no spare being prepared (its spares are ready again)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = self.pool()
            if p is None or not p.get("spawning"):
                return
            time.sleep(0.2)
