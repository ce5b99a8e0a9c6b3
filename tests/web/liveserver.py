"""A real tensorjudge server for the browser tests: the application factory with an embedded
judge worker (the real sandbox), served by uvicorn in a thread on a free localhost port, with
a temporary SQLite database and data directory."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from app.context import Context
from app.db import migrate
from app.main import create_app
from app.services import problems
from app.settings import REPO_ROOT, Settings
from tests.conftest import FIXTURES

BUNDLED = REPO_ROOT / "problems"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    def __init__(self, root: Path, *, bundled: bool = True, workers: int = 1,
                 port: int | None = None, **settings: Any) -> None:
        self.root = root
        pdir = root / "problems"
        pdir.mkdir(parents=True, exist_ok=True)
        shutil.copytree(FIXTURES / "double", pdir / "double",
                        ignore=shutil.ignore_patterns("__pycache__"))
        values: dict[str, Any] = dict(
            database_url=f"sqlite:///{root / 'tensorjudge.db'}", data_dir=root / "data",
            cache_dir=root / "cache", problems_dir=pdir, secret_key="",
            argon2_time_cost=1, argon2_memory_kib=1024, poll_seconds=0.5,
            heartbeat_seconds=1.0, log_format="text", log_level="WARNING", rate_limit=1000)
        values.update(settings)
        self.settings = Settings(**values)
        self.ctx = Context.create(self.settings)
        migrate.upgrade(self.ctx.db)
        problems.sync_bundled(self.ctx, pdir)
        if bundled:
            for path in sorted(BUNDLED.iterdir()):
                if (path / "problem.toml").is_file():
                    problems.store(self.ctx, path, mode="ensure", validator=None)
        sandbox = None
        if workers:
            from judge import open_sandbox

            # A fresh sandbox per submission, as the settings configure it.
            sandbox = open_sandbox(self.settings.sandbox_config())
        self.app = create_app(self.settings, workers=workers, sandbox=sandbox, ctx=self.ctx)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_config=None,
                                log_level="warning", timeout_graceful_shutdown=5)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="live-server", daemon=True)

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the test server did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=40)
        self.ctx.close()


if __name__ == "__main__":  # a server to look at by hand: python -m tests.web.liveserver
    import sys
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="tj-live-"))
    srv = LiveServer(tmp, port=int(sys.argv[1]) if len(sys.argv) > 1 else None).start()
    print(srv.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()
