"""The runner's and the fork server's sources reach them through an inherited descriptor
(judge/sandbox/sources.py's bootstrap), not their command lines: every process of a sandbox
and of a fork server has a short command line, with no source in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from judge.engine import judge
from judge.kinds import kind_for
from judge.package import Package
from judge.sandbox import BwrapConfig, BwrapSandbox
from judge.sandbox.sources import BOOTSTRAP, RUNNER_SOURCE, ZYGOTE_SOURCE, source_descriptor
from judge.verdicts import Verdict
from tests.judge.conftest import forked_sandbox

CORRECT = "def double(x):\n    return (2 * x).reshape(-1)\n"


def test_the_bootstrap_runs_the_source_it_reads_and_closes_the_descriptor():
    source = textwrap.dedent("""
        import json, os, sys
        try:
            os.fstat(FD)
            still_open = True
        except OSError:
            still_open = False
        print(json.dumps({"argv": sys.argv, "name": __name__, "open": still_open}))
    """)
    fd = source_descriptor(source.replace("FD", "999"))
    try:
        os.dup2(fd, 999, inheritable=False)
        with pytest.raises(PermissionError):  # sealed: no one it is passed to can change it
            os.write(fd, b"#")
        done = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", BOOTSTRAP, "999", "a",
                               "b"], pass_fds=(999,), capture_output=True, text=True,
                              timeout=60, check=True)
    finally:
        os.close(fd)
        os.close(999)
    # As `python -c SOURCE a b` would see it.
    assert json.loads(done.stdout) == {"argv": ["-c", "a", "b"], "name": "__main__",
                                       "open": False}


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _command_lines(pids: list[int]) -> Iterator[tuple[int, bytes]]:
    for pid in pids:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            yield pid, f.read()


def _short_and_sourceless(pids: list[int]) -> None:
    lines = dict(_command_lines(pids))
    bootstrap = BOOTSTRAP.encode()
    assert any(bootstrap in line for line in lines.values()), lines
    for pid, line in lines.items():
        assert len(line) < 1024, (pid, len(line))
        for source in (RUNNER_SOURCE, ZYGOTE_SOURCE):
            assert source[:300].encode() not in line, pid
        assert b"def main(" not in line and b"def serve(" not in line, pid


@pytest.mark.sandbox
def test_a_sandbox_bubblewrap_starts_has_short_command_lines(double: Package):
    sb = BwrapSandbox(BwrapConfig(fork_server=False))
    sp = sb.spawn(kind_for(double, []), 256 << 20)
    try:
        assert sb.wait_warm(sp, 60)
        pids = _descendants(sp.proc.pid)
        assert len(pids) >= 2  # bubblewrap and the runner, at least
        _short_and_sourceless(pids)
    finally:
        sp.destroy()


@pytest.mark.sandbox
def test_a_fork_server_and_its_sandboxes_have_short_command_lines(double: Package):
    sb = forked_sandbox()
    try:
        header = kind_for(double, [])
        sp = sb.spawn(header, 256 << 20)
        try:
            assert sb.wait_warm(sp, 60)
            _short_and_sourceless(_descendants(sp.proc.pid))
        finally:
            sp.destroy()
        servers = sb.fork_servers
        assert servers is not None and servers._servers
        for server in servers._servers.values():
            _short_and_sourceless(_descendants(server.proc.pid))
            assert server.pid in _descendants(server.proc.pid)
        # And they judge as before.
        assert judge(double, CORRECT, sb, samples_only=True).verdict is Verdict.AC
    finally:
        sb.close()
