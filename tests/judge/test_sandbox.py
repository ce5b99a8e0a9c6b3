"""The real sandbox against hostile and broken submissions (fixture problem `double`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from judge.engine import judge
from judge.sandbox import BwrapConfig, BwrapSandbox
from judge.sandbox.bwrap.cgroups import PARENT
from judge.verdicts import Verdict
from tests.conftest import REPO
from tests.judge.conftest import forked_sandbox

pytestmark = pytest.mark.sandbox

CORRECT = "def double(x):\n    return (2 * x).reshape(-1)\n"


@pytest.fixture(scope="module", params=["bwrap", "forked"])
def sandbox(request):
    """Every attack here runs against both ways a sandbox starts: bubblewrap alone, and
    forked from a fork server (which must then have made every one of them)."""
    forked = request.param == "forked"
    sb = forked_sandbox() if forked else BwrapSandbox(BwrapConfig(fork_server=False))
    yield sb
    if forked:
        assert sb.fork_servers is not None
        assert sb.fork_servers.fallbacks == 0 and sb.fork_servers.forked > 0
    sb.close()


def _sandbox_processes(uids, settle_s: float = 5.0) -> list[str]:
    """Processes of these sandbox uids still present; an orphaned zombie may take a moment to
    be reaped by the host's init, so poll briefly before reporting."""
    deadline = time.monotonic() + settle_s
    while True:
        out = subprocess.run(["ps", "-eo", "pid,uid,args"], capture_output=True,
                             text=True).stdout
        rows = []
        for line in out.splitlines()[1:]:
            pid, uid, args = line.split(None, 2)
            if int(uid) in uids:
                rows.append(line)
        if not rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def _no_leftover_cgroups() -> bool:
    for ctl in ("memory", "pids", ""):
        d = Path("/sys/fs/cgroup") / ctl / PARENT
        mine = f"sb-{os.getpid()}-"
        if d.is_dir() and any(p.name.startswith(mine) for p in d.iterdir()):
            return False
    return True


def test_correct_submission_is_accepted(run):
    res = run(CORRECT)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert [t.verdict for t in res.tests] == [Verdict.AC] * 3
    assert all(t.time_ms is not None and t.time_ms >= 0 for t in res.tests)


@pytest.mark.parametrize(
    "body",
    [
        "    while True:\n        pass\n",
        "    import time\n    time.sleep(1000)\n",
        # ignores the signals a polite limit would send
        "    import signal\n    for s in (signal.SIGXCPU, signal.SIGTERM, signal.SIGINT):\n"
        "        signal.signal(s, signal.SIG_IGN)\n    while True:\n        pass\n",
    ],
    ids=["busy-loop", "sleep", "ignores-signals"],
)
def test_hangs_get_tle(sandbox, double_quick, body):
    res = judge(double_quick, "def double(x):\n" + body, sandbox)
    assert res.verdict is Verdict.TLE, res.to_dict()
    assert res.tests[0].verdict is Verdict.TLE
    # A time-out stands only once met again in a fresh sandbox.
    assert res.runs == 2 and "second run" in (res.tests[0].message or ""), res.to_dict()
    assert _sandbox_processes({sandbox.recent_uids[-1]}) == []


def test_a_run_stalled_by_the_host_past_its_limit_is_not_tle(double_quick, monkeypatch):
    """A host that stops the sandbox for longer than the time limit (a loaded or paused
    machine) makes that run time out; the second run decides, and its AC is the verdict."""
    sandbox = BwrapSandbox()
    execute = sandbox.execute
    stalls: list[int] = []

    def stop_in_first_test(sp) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sp.alive():
            if any(f.ev == "begin" for f in sp.reader.frames):
                pids = sp.cgroup.pids()
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGSTOP)
                stalls.append(len(pids))
                return  # left stopped: the judge's clock runs out and kills them
            time.sleep(0.002)

    def stalled_once(sp, *args, **kwargs):
        if not stalls and sp.cgroup is not None:
            stalls.append(0)
            threading.Thread(target=stop_in_first_test, args=(sp,), daemon=True).start()
        return execute(sp, *args, **kwargs)

    monkeypatch.setattr(sandbox, "execute", stalled_once)
    # Each test takes a while, for the host to stop it in: asleep, well within its wall guard
    # (four times the limit) and using no CPU.
    res = judge(double_quick, "import time\n" + CORRECT.replace(
        "    return", "    time.sleep(0.3)\n    return"), sandbox)
    if not stalls:
        pytest.skip("no cgroup to find the sandbox's processes by")
    assert stalls[-1] > 0, "the first run was never stopped"
    assert res.verdict is Verdict.AC, res.to_dict()
    assert res.runs == 2


def test_forty_gib_allocation_is_mle_or_caught(run):
    res = run("import numpy as np\ndef double(x):\n    a = np.ones(40 * 2**30 // 8)\n"
              "    return a[: x.size]\n")
    assert res.verdict in (Verdict.MLE, Verdict.RE), res.to_dict()
    if res.verdict is Verdict.RE:
        assert "MemoryError" in (res.message or "")
    assert run(CORRECT).verdict is Verdict.AC  # the judge is alive and well


def test_page_touching_creep_is_mle(run):
    res = run(
        "def double(x):\n    keep = []\n    while True:\n        b = bytearray(16 << 20)\n"
        "        for i in range(0, len(b), 4096):\n            b[i] = 1\n        keep.append(b)\n"
    )
    assert res.verdict is Verdict.MLE, res.to_dict()
    assert "memory limit" in (res.tests[0].message or "")
    assert run(CORRECT).verdict is Verdict.AC


def test_fork_bomb_is_contained_and_leaves_nothing(run, sandbox):
    res = run("import os\ndef double(x):\n    while True:\n        try:\n            os.fork()\n"
              "        except OSError:\n            pass\n")
    assert res.verdict in (Verdict.TLE, Verdict.RE), res.to_dict()
    assert _sandbox_processes({sandbox.recent_uids[-1]}) == []
    assert _no_leftover_cgroups()


def test_network_connection_fails(run):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.1)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not accepted:
            with contextlib.suppress(OSError):
                accepted.append(server.accept())

    t = threading.Thread(target=accept)
    t.start()
    code = (
        "import socket\ndef double(x):\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    return (2 * x).reshape(-1)\n"
    )
    res = run(code)
    accepted.append("stop") if not accepted else None
    t.join()
    server.close()
    assert res.verdict is Verdict.RE, res.to_dict()
    assert "forbidden system call" in (res.tests[0].message or "")
    assert accepted == ["stop"], "the sandbox reached a host socket"


def test_host_files_are_invisible(run, double):
    paths = [str(REPO), str(REPO / "reference_solutions"), str(double.reference_path),
             str(double.path), "/etc/shadow", "/etc/passwd", "/var/lib/postgresql", "/home",
             os.path.expanduser("~/.cache")]
    code = (
        "import os, json\n"
        f"PATHS = {paths!r}\n"
        "def double(x):\n"
        "    print(json.dumps([p for p in PATHS if os.path.exists(p)]))\n"
        "    return (2 * x).reshape(-1)\n"
    )
    res = run(code, samples_only=True)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert json.loads(res.stdout.splitlines()[0]) == []


def test_judge_environment_is_invisible(run, monkeypatch):
    monkeypatch.setenv("TENSORJUDGE_CANARY", "canary-5f1c2e")
    code = (
        "import os\ndef double(x):\n"
        "    seen = repr(dict(os.environ))\n"
        "    for pid in os.listdir('/proc'):\n"
        "        if pid.isdigit():\n"
        "            try:\n"
        "                seen += open(f'/proc/{pid}/environ', 'rb').read().decode()\n"
        "                seen += open(f'/proc/{pid}/cmdline', 'rb').read().decode()\n"
        "            except OSError:\n"
        "                pass\n"
        "    print(seen)\n"
        "    return (2 * x).reshape(-1)\n"
    )
    res = run(code, samples_only=True)
    assert res.verdict is Verdict.AC
    assert "canary-5f1c2e" not in res.stdout
    assert str(REPO) not in res.stdout


def test_files_do_not_survive_between_runs(run):
    plant = run("def double(x):\n    open('/tmp/planted', 'w').write('x')\n"
                "    return (2 * x).reshape(-1)\n", samples_only=True)
    assert plant.verdict is Verdict.AC
    probe = run("import os\ndef double(x):\n    assert not os.path.exists('/tmp/planted')\n"
                "    return (2 * x).reshape(-1)\n", samples_only=True)
    assert probe.verdict is Verdict.AC, probe.to_dict()


def test_exit_before_returning_is_re(run):
    res = run("import os\ndef double(x):\n    os._exit(0)\n")
    assert res.verdict is Verdict.RE
    assert "exited without a result" in (res.tests[0].message or "")


def test_sys_exit_in_entry_is_re(run):
    res = run("import sys\ndef double(x):\n    sys.exit(0)\n")
    assert res.verdict is Verdict.RE


def test_syntax_error_is_ce_with_line(run):
    res = run("import numpy as np\n\ndef double(x):\n    return (x *\n")
    assert res.verdict is Verdict.CE
    assert "line 4" in (res.message or "")


def test_missing_entry_is_ce_naming_it(run):
    res = run("def triple(x):\n    return 3 * x\n")
    assert res.verdict is Verdict.CE
    assert "double" in (res.message or "")


def test_printed_fake_result_frame_is_not_accepted(run):
    code = (
        "import json, struct, sys\n"
        "def double(x):\n"
        "    for i in range(3):\n"
        "        h = json.dumps({'ev': 'result', 'test': i, 'time_ms': 1, 'dtype': '<f8',\n"
        "                        'shape': [x.size], 'nbytes': 8 * x.size}).encode()\n"
        "        sys.stdout.buffer.write(struct.pack('>I', len(h)) + h + bytes(8 * x.size))\n"
        "    sys.stdout.flush()\n"
        "    return x.reshape(-1) * 0\n"
    )
    res = run(code)
    assert res.verdict is Verdict.WA, res.to_dict()


def test_garbage_on_the_result_channel_is_re(run):
    code = (
        "import os\ndef double(x):\n"
        "    for fd in range(3, 64):\n"
        "        try:\n"
        "            os.write(fd, b'\\xff\\xff\\xff\\xffgarbage')\n"
        "        except OSError:\n"
        "            pass\n"
        "    return (2 * x).reshape(-1)\n"
    )
    res = run(code)
    assert res.verdict is Verdict.RE, res.to_dict()
    assert "channel" in (res.tests[0].message or "")


def test_nan_output_is_wa(run):
    res = run("import numpy as np\ndef double(x):\n    return np.full(x.size, np.nan)\n")
    assert res.verdict is Verdict.WA
    assert "NaN" in (res.tests[0].message or "")


def test_object_array_is_never_unpickled(run, tmp_path):
    marker = tmp_path / "pwned"
    code = (
        "import os, numpy as np\n"
        "class Evil:\n"
        f"    def __reduce__(self):\n        return (os.system, ('touch {marker}',))\n"
        "def double(x):\n"
        "    return np.array([Evil() for _ in range(x.size)], dtype=object)\n"
    )
    res = run(code)
    assert res.verdict in (Verdict.WA, Verdict.RE), res.to_dict()
    assert not marker.exists()


def test_process_execution_is_blocked(run):
    code = (
        "import subprocess, sys\n"
        "def double(x):\n"
        "    r = subprocess.run(['/bin/sh', '-c', 'echo escaped'], capture_output=True)\n"
        "    print(r.returncode, r.stdout)\n"
        "    return (2 * x).reshape(-1)\n"
    )
    res = run(code, samples_only=True)
    # The forked child dies of SIGSYS before exec: nothing ran, whatever the verdict.
    assert "escaped" not in res.stdout


def test_flood_of_output_is_ole(run):
    res = run("import sys\ndef double(x):\n    while True:\n"
              "        sys.stdout.write('x' * 65536)\n")
    assert res.verdict is Verdict.OLE
    assert len(res.stdout) <= 16 << 10


def test_user_traceback_is_trimmed_to_own_frames(run):
    res = run("import numpy as np\ndef helper(x):\n    return np.reshape(x, (7, 7))\n"
              "def double(x):\n    return helper(x)\n")
    assert res.verdict is Verdict.RE
    assert 'File "solution.py", line 3' in (res.message or "")
    assert "numpy" not in (res.message or "").split("\n")[-3]
    assert "site-packages" not in (res.message or "")


def test_mutating_inputs_does_not_leak_between_tests(run, sandbox, double):
    # Each call gets fresh copies, so an in-place edit cannot change the next test's inputs.
    res = run("def double(x):\n    y = (2 * x).reshape(-1).copy()\n    x[...] = 0\n    return y\n")
    assert res.verdict is Verdict.AC


@pytest.mark.parametrize(
    "call",
    [
        "libc.unshare(0x10000000)",  # CLONE_NEWUSER
        "libc.ptrace(16, 1, 0, 0)",  # PTRACE_ATTACH to pid 1
        "libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)",
    ],
    ids=["unshare", "ptrace", "mount"],
)
def test_dangerous_syscalls_kill_the_sandbox(run, call):
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"def double(x):\n    {call}\n    return (2 * x).reshape(-1)\n"
    )
    res = run(code, samples_only=True)
    assert res.verdict is Verdict.RE, res.to_dict()
    assert "forbidden system call" in (res.tests[0].message or "")


def test_without_cgroups_memory_is_still_capped(double):
    from judge.engine import judge

    sb = BwrapSandbox(BwrapConfig(use_cgroups=False))
    res = judge(double, "def double(x):\n    b = bytearray(8 << 30)\n    return b\n", sb)
    assert res.verdict in (Verdict.RE, Verdict.MLE), res.to_dict()
    assert judge(double, CORRECT, sb).verdict is Verdict.AC
