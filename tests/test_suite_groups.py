"""The suite's own scheduling: each module's tests on one worker (tests/conftest.py). The
groups were once silently ignored (xdist read them before they were given, and pytest 9.2
names items in a way xdist 3.8 cannot extend), and a module's tests ran on both workers at
once: a server restarted by one test under another's feet."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import REPO


def test_a_modules_tests_run_on_one_worker():
    modules = ["tests/judge/test_compare.py", "tests/judge/test_turns.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", *modules],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d)\] .*?PASSED (tests/\S+?)::", done.stdout, re.MULTILINE)
    workers: dict[str, set[str]] = {}
    for gw, module in ran:
        workers.setdefault(module, set()).add(gw)
    assert set(workers) == set(modules), done.stdout[-3000:]
    assert all(len(gws) == 1 for gws in workers.values()), workers
