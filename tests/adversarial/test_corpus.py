"""Every file of tests/adversarial/corpus/ against the real service, through the REST API.

For each: the host is looked at, the attack is submitted (as `mallory`) with a correct
submission of another user (`alice`, carrying a nonce of her own) queued right behind it; the
attack must get a verdict of its declared set, and afterwards the host must show nothing of
it: no result holding a secret (the server's environment, its secret key, the reference, the
other user's code or token), no marker file on the host, no sandbox process or cgroup left,
no connection to a host socket, the cache and temporary folders as they were, the server and
both workers alive, and the correct submission Accepted.
"""

from __future__ import annotations

import json
import os
import secrets
import time

import pytest

from tests.adversarial import harness
from tests.adversarial.harness import PG_PORT, Attack, Server
from tests.conftest import REPO

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

ATTACKS = harness.corpus()
# The stored result (stdout and stderr are kept to 16 KiB each, messages are bounded).
MAX_DATA_GROWTH = 4 << 20


def instantiate(attack: Attack, server: Server, nonce: str) -> tuple[str, list[str]]:
    """The submission's text with the host's particulars filled in, and the marker paths it
    will try to create on the host."""
    markers = [f"/tmp/tj-marker-{nonce}", f"/var/tmp/tj-marker-{nonce}",
               f"/dev/shm/tj-marker-{nonce}", str(server.data_dir / f"tj-marker-{nonce}"),
               str(server.cache_dir / f"tj-marker-{nonce}"),
               str(server.problems_dir / "double" / f"tj-marker-{nonce}"),
               str(REPO / f"tj-marker-{nonce}"),
               os.path.join(os.path.expanduser("~"), f"tj-marker-{nonce}")]
    host_paths = [str(REPO), str(REPO / "reference_solutions"), str(server.problems_dir),
                  str(server.problems_dir / "double" / "reference.py"), str(server.data_dir),
                  str(server.data_dir / "tensorjudge.db"), str(server.cache_dir),
                  str(server.tmp_dir), str(server.log_path), "/etc/shadow",
                  "/var/lib/postgresql", "/root", "/home", "/run/postgresql"]
    code = attack.path.read_text()
    for key, value in {
        "__TJ_MARKERS__": json.dumps(markers),
        "__TJ_HOST_PATHS__": json.dumps(host_paths),
        "__TJ_NONCE__": nonce,
        "__TJ_SERVICE_PORT__": str(server.port),
        "__TJ_PG_PORT__": str(PG_PORT),
        "__TJ_LISTENER_PORT__": str(server.listener.port),
    }.items():
        code = code.replace(key, value)
    return code, markers


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack(attack: Attack, server: Server, attack_log) -> None:
    nonce = secrets.token_hex(6)
    code, markers = instantiate(attack, server, nonce)
    victim_nonce = f"victim-nonce-{secrets.token_hex(8)}"
    server.victim_nonces.append(victim_nonce)
    before = harness.settled(server)
    t0 = time.monotonic()
    problems: list[str] = []
    got = follow_up = None
    note = ""
    try:
        with server.client() as c:
            sid = harness.submit(c, server.attacker, code)
            vid = harness.submit(c, server.victim, harness.VICTIM_CODE.format(nonce=victim_nonce))
            sub = harness.wait_done(c, server.attacker, sid)
            victim = harness.wait_done(c, server.victim, vid)
            # Owners only: the attacker cannot read the victim's submission, nor the reverse.
            assert c.get(f"/api/v1/submissions/{vid}", headers=server.attacker).status_code == 404
        got, follow_up = sub["verdict"], victim["verdict"]
        note = summary(sub)
        after = harness.settled(server)

        if got not in attack.expect:
            problems.append(f"verdict {got}, expected {'|'.join(sorted(attack.expect))}")
        if follow_up != "AC":
            problems.append(f"the correct submission behind it got {follow_up}: "
                            f"{summary(victim)}")
        text = harness.result_text(sub)
        if found := harness.leaks(server, text):
            problems.append(f"leaked: {', '.join(found)}")
        problems += [f"forbidden text in the result: {f!r}" for f in attack.forbid if f in text]
        if attack.expect_message and attack.expect_message not in harness.messages(sub):
            problems.append(f"no {attack.expect_message!r} in the messages")
        if present := [m for m in markers if _exists(m)]:
            problems.append(f"marker files on the host: {present}")
        if new := sorted(set(after.strays) - set(before.strays)):
            problems.append(f"files on the host written by the sandbox: {new}")
        if after.processes:
            problems.append(f"sandbox processes left: {after.processes}")
        if after.cgroups:
            problems.append(f"sandbox cgroups left: {after.cgroups}")
        if after.accepted != before.accepted:
            problems.append("a sandbox connected to a host socket")
        if after.cache_bytes != before.cache_bytes:
            problems.append(f"cache grew {after.cache_bytes - before.cache_bytes} bytes")
        if after.tmp_bytes != before.tmp_bytes:
            problems.append(f"temporary folder grew {after.tmp_bytes - before.tmp_bytes} bytes")
        if after.data_bytes - before.data_bytes > MAX_DATA_GROWTH:
            problems.append(f"data folder grew {after.data_bytes - before.data_bytes} bytes")
        if not server.alive() or not server.workers_alive(2):
            problems.append("the server or a worker died")
    except Exception as e:  # noqa: BLE001 - recorded, then failed below
        problems.append(f"{type(e).__name__}: {e}")
    attack_log.record({
        "file": attack.path.name,
        "attack": attack.attack,
        "category": attack.category,
        "expected": sorted(attack.expect),
        "got": got,
        "follow_up": follow_up,
        "contained": not problems,
        "notes": "; ".join(problems) if problems else note,
        "seconds": round(time.monotonic() - t0, 1),
    })
    assert not problems, problems


def summary(sub: dict) -> str:
    """What the verdict says, in one line: the first failed test's message, or the last line
    of the submission's message (a traceback ends with the exception)."""
    res = sub.get("result") or {}
    if sub.get("verdict") == "AC":
        return "its own correct output; nothing leaked, nothing left behind"
    tests = [t for t in res.get("tests", []) if t.get("message")]
    for t in sorted(tests, key=lambda t: t.get("verdict") != sub.get("verdict")):
        if t.get("verdict") not in (None, "AC"):
            return str(t["message"]).strip().splitlines()[-1][:160]
    lines = [ln.strip() for ln in (res.get("message") or "").splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


def _exists(path: str) -> bool:
    try:
        os.lstat(path)
        return True
    except OSError:
        return False
