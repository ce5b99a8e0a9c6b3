"""A real `tensorjudge serve` for hostile submissions, and the host-side checks around each.

The server runs with SQLite in a temporary directory, two embedded workers, no pool of
prepared sandboxes (so every sandbox process on the host after a verdict is a leftover), the
`double` fixture problem (its reference carries a canary line), and secrets in its environment
that no result may ever show.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from judge.sandbox.bwrap.cgroups import PARENT
from judge.sandbox.bwrap.sandbox import BwrapConfig
from tests.app.test_processes import free_port, tensorjudge, wait_for
from tests.conftest import FIXTURES, REPO

CORPUS = Path(__file__).parent / "corpus"
ARTIFACTS = REPO / "artifacts" / "security"
UID_LO = BwrapConfig.uid_base
UID_HI = BwrapConfig.uid_base + BwrapConfig.uid_span
PG_PORT = 5432
ALL_VERDICTS = {"AC", "WA", "TLE", "MLE", "RE", "CE", "OLE", "IE"}

VICTIM_CODE = '''# victim-nonce: {nonce}
import os

VICTIM = "{nonce}"


def double(x):
    planted = []
    for top in ("/tmp", "/dev/shm", "/var/tmp", "/opt/tensorjudge/xla-cache"):
        for _root, dirs, files in os.walk(top):
            planted += [n for n in dirs + files if "tj-plant" in n or "tj-marker" in n]
    if planted:
        raise RuntimeError("state planted by an earlier submission: %s" % planted)
    return (2 * x).reshape(-1)
'''


# --- the corpus files ----------------------------------------------------------------------


@dataclass
class Attack:
    path: Path
    attack: str
    category: str
    expect: set[str]
    forbid: list[str] = field(default_factory=list)
    expect_message: str | None = None

    @property
    def name(self) -> str:
        return self.path.stem


HEADER_RE = re.compile(r"^#\s*([a-z-]+):\s*(.*?)\s*$")


def parse_attack(path: Path) -> Attack:
    """The header: `# attack: …`, `# category: …`, `# expect: V|V…`, optionally
    `# forbid: TEXT` (repeatable: must not appear in the result) and `# expect-message: TEXT`
    (must appear in the result's messages)."""
    meta: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        m = HEADER_RE.match(line)
        if m:
            meta.setdefault(m.group(1), []).append(m.group(2))
    for key in ("attack", "category", "expect"):
        if key not in meta:
            raise ValueError(f"{path.name}: no `# {key}:` header")
    expect = {v.strip() for v in meta["expect"][0].split("|")}
    if not expect <= ALL_VERDICTS - {"IE"}:
        raise ValueError(f"{path.name}: bad expect {expect} (IE is never acceptable)")
    return Attack(path, meta["attack"][0], meta["category"][0], expect,
                  meta.get("forbid", []), (meta.get("expect-message") or [None])[0])


def corpus() -> list[Attack]:
    return [parse_attack(p) for p in sorted(CORPUS.glob("*.py"))]


# --- the server ----------------------------------------------------------------------------


class Listener:
    """A host socket on loopback that counts connections: nothing in a sandbox may reach it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@dataclass
class Server:
    proc: subprocess.Popen
    base: str
    port: int
    root: Path
    data_dir: Path
    cache_dir: Path
    tmp_dir: Path
    problems_dir: Path
    log_path: Path
    env: dict[str, str]
    secrets: dict[str, str]  # what must never appear in a result (name -> value)
    listener: Listener
    attacker: dict[str, str] = field(default_factory=dict)  # Authorization header
    victim: dict[str, str] = field(default_factory=dict)
    victim_nonces: list[str] = field(default_factory=list)

    def client(self, timeout: float = 120.0) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=timeout)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def workers_alive(self, n: int = 2) -> bool:
        try:
            h = httpx.get(f"{self.base}/healthz", timeout=5).json()
        except (httpx.HTTPError, ValueError):
            return False
        return h.get("live_workers", 0) >= n

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_server(root: Path, *, workers: int = 2, extra_env: dict[str, str] | None = None
                 ) -> Server:
    data, cache, tmp, problems = (root / n for n in ("data", "cache", "tmp", "problems"))
    for d in (data, cache, tmp, problems):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copytree(FIXTURES / "double", problems / "double",
                    ignore=shutil.ignore_patterns("__pycache__"))
    reference_canary = f"reference-canary-{secrets.token_hex(8)}"
    ref = problems / "double" / "reference.py"
    ref.write_text(f"# {reference_canary}\n" + ref.read_text())
    values = {
        "canary": f"canary-{secrets.token_hex(12)}",
        "other_env": f"other-{secrets.token_hex(12)}",
        "secret_key": f"key-{secrets.token_hex(16)}",
        "reference": reference_canary,
    }
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORJUDGE_")}
    env = {
        **base_env,
        "TENSORJUDGE_DATA_DIR": str(data),
        "TENSORJUDGE_CACHE_DIR": str(cache),
        "TENSORJUDGE_PROBLEMS_DIR": str(problems),
        "TENSORJUDGE_SECRET_KEY": values["secret_key"],
        "TENSORJUDGE_CANARY_SECRET": values["canary"],
        "TJ_ADVERSARIAL_OTHER_SECRET": values["other_env"],
        "TENSORJUDGE_ARGON2_TIME_COST": "1",
        "TENSORJUDGE_ARGON2_MEMORY_KIB": "1024",
        "TENSORJUDGE_RATE_LIMIT": "100000",
        "TENSORJUDGE_POOL_SIZE": "0",
        "TENSORJUDGE_HEARTBEAT_SECONDS": "0.5",
        "TENSORJUDGE_POLL_SECONDS": "1",
        "TENSORJUDGE_IE_RETRY_DELAY_SECONDS": "0",
        "TENSORJUDGE_LOG_LEVEL": "INFO",
        "TENSORJUDGE_LOG_FORMAT": "json",
        "TMPDIR": str(tmp),
        **(extra_env or {}),
    }
    port = free_port()
    log_path = root / "serve.log"
    log = open(log_path, "wb")  # noqa: SIM115 - the server's, closed with it
    proc = subprocess.Popen([*tensorjudge(), "serve", "--port", str(port), "--workers",
                             str(workers)], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    server = Server(proc, f"http://127.0.0.1:{port}", port, root, data, cache, tmp, problems,
                    log_path, env, values, Listener())
    try:
        wait_for(lambda: server.workers_alive(workers) or not server.alive(), 90,
                 "the server and its workers", step=0.2)
        if not server.alive():
            raise RuntimeError(f"the server exited:\n{server.log_text()[-3000:]}")
    except BaseException:
        stop_server(server)
        raise
    return server


def stop_server(server: Server) -> None:
    server.listener.close()
    if server.proc.poll() is None:
        os.killpg(server.proc.pid, signal.SIGTERM)
        try:
            server.proc.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()


def register(server: Server, username: str, password: str) -> dict[str, str]:
    with server.client() as c:
        r = c.post("/api/v1/users", json={"username": username, "password": password})
        assert r.status_code == 201, r.text
        r = c.post("/api/v1/tokens", json={"username": username, "password": password})
        assert r.status_code == 201, r.text
        return {"Authorization": f"Bearer {r.json()['token']}"}


def submit(c: httpx.Client, auth: dict[str, str], code: str, mode: str = "submit") -> int:
    r = c.post("/api/v1/submissions", headers=auth,
               json={"problem": "double", "code": code, "mode": mode})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def warm_up(server: Server) -> None:
    """One correct and one wrong submission before any attack: the expected outputs and
    the known mistakes' outputs are in the cache, so an attack's run is the only change."""
    with server.client() as c:
        sid = submit(c, server.victim, VICTIM_CODE.format(nonce="warm-up"))
        assert wait_done(c, server.victim, sid)["verdict"] == "AC"
        sid = submit(c, server.victim, "def double(x):\n    return x + 1\n")
        sub = wait_done(c, server.victim, sid)
        assert sub["verdict"] == "WA", sub
        # The fixture's own packaged mistake: its bank was computed, and it is named.
        assert [f["kind"] for f in sub["result"]["diagnosis"]][:1] == ["known-mistake"], sub


def wait_done(c: httpx.Client, auth: dict[str, str], sid: int, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        r = c.get(f"/api/v1/submissions/{sid}", params={"wait": 30}, headers=auth)
        assert r.status_code == 200, r.text
        s = r.json()
        if s["status"] == "done":
            return s
        if time.monotonic() > deadline:
            raise AssertionError(f"submission {sid} not judged in {timeout} s: {s}")


# --- the host's state ----------------------------------------------------------------------


def host_processes() -> dict[int, tuple[int, int, bool, str, str]]:
    """pid -> (ppid, uid, zombie, cgroups, command) of every process on the host."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            uid = os.stat(f"/proc/{pid}").st_uid
            stat = Path(f"/proc/{pid}/stat").read_text()
            rest = stat[stat.rindex(")") + 2:].split()
            groups = Path(f"/proc/{pid}/cgroup").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, ValueError, IndexError):
            continue
        out[pid] = (int(rest[1]), uid, rest[0] == "Z", groups, cmd[:100].decode(errors="replace"))
    return out


def sandbox_processes(server_pid: int) -> list[str]:
    """Processes of this server's sandboxes on the host: in one of its sandbox cgroups, or of
    a sandbox uid among its descendants; and any process of a sandbox uid that was orphaned
    outside every sandbox cgroup (an escape, whoever started it). Other judges' sandboxes on
    the same host (other test runs) are not this server's business: uids are only unique per
    judge process, so the uid alone does not say whose a sandbox is."""
    procs = host_processes()

    def descends(pid: int) -> bool:
        for _ in range(64):
            if pid == server_pid:
                return True
            if pid not in procs or pid <= 1:
                return False
            pid = procs[pid][0]
        return False

    rows = []
    for pid, (ppid, uid, zombie, groups, cmd) in procs.items():
        if not UID_LO <= uid < UID_HI:
            continue
        in_ours = f"/sb-{server_pid}-" in groups
        orphan = ppid == 1 and not zombie and f"/{PARENT}/sb-" not in groups
        if in_ours or descends(pid) or orphan:
            what = "escaped" if orphan else ("zombie" if zombie else "running")
            rows.append(f"{pid} uid={uid} {what}: {cmd}")
    return rows


def sandbox_cgroups(server_pid: int) -> list[str]:
    out = []
    for ctl in ("memory", "pids", ""):
        d = Path("/sys/fs/cgroup") / ctl / PARENT
        if d.is_dir():
            out += [str(p) for p in d.iterdir() if p.name.startswith(f"sb-{server_pid}-")]
    return out


def tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def watched_dirs(server: Server) -> list[Path]:
    """Where a marker or planted file would show that a sandbox wrote on the host."""
    return [Path("/tmp"), Path("/dev/shm"), Path("/var/tmp"), server.data_dir, server.cache_dir,
            server.tmp_dir, server.problems_dir, server.problems_dir / "double", REPO,
            Path.home()]


def stray_files(server: Server) -> list[str]:
    """Files named like the corpus's markers, or owned by a sandbox uid, in the watched
    folders (top level, plus the server's own folders all the way down)."""
    found = []
    deep = {server.data_dir, server.cache_dir, server.tmp_dir, server.problems_dir}
    for d in watched_dirs(server):
        try:
            if d in deep:
                entries = [Path(r) / n for r, ds, fs in os.walk(d) for n in ds + fs]
            else:
                entries = list(d.iterdir())
        except OSError:
            continue
        for p in entries:
            try:
                owner = p.lstat().st_uid
            except OSError:
                continue
            if "tj-marker" in p.name or "tj-plant" in p.name or UID_LO <= owner < UID_HI:
                found.append(str(p))
    return found


@dataclass
class Snapshot:
    processes: list[str]
    cgroups: list[str]
    strays: list[str]
    cache_bytes: int
    tmp_bytes: int
    data_bytes: int
    accepted: int


def snapshot(server: Server) -> Snapshot:
    return Snapshot(sandbox_processes(server.proc.pid), sandbox_cgroups(server.proc.pid),
                    stray_files(server),
                    tree_bytes(server.cache_dir), tree_bytes(server.tmp_dir),
                    tree_bytes(server.data_dir), server.listener.accepted)


def settled(server: Server, timeout: float = 15.0) -> Snapshot:
    """The host once the sandboxes of finished submissions are torn down (that happens off
    the path to the verdict)."""
    deadline = time.monotonic() + timeout
    while True:
        s = snapshot(server)
        if (not s.processes and not s.cgroups) or time.monotonic() > deadline:
            return s
        time.sleep(0.1)


# --- leaks ---------------------------------------------------------------------------------


def leaks(server: Server, text: str) -> list[str]:
    found = [name for name, value in server.secrets.items() if value in text]
    found += [f"victim nonce {n}" for n in server.victim_nonces if n in text]
    for name, header in (("attacker token", server.attacker), ("victim token", server.victim)):
        tok = header.get("Authorization", "").removeprefix("Bearer ")
        if tok and tok in text:
            found.append(name)
    if "$argon2" in text:
        found.append("a password hash")
    return found


def result_text(sub: dict[str, Any]) -> str:
    """Everything a submission's owner is shown, but their own code."""
    return json.dumps({k: v for k, v in sub.items() if k != "code"}, ensure_ascii=False)


def messages(sub: dict[str, Any]) -> str:
    res = sub.get("result") or {}
    parts = [res.get("message") or ""] + [t.get("message") or "" for t in res.get("tests", [])]
    return "\n".join(parts)
