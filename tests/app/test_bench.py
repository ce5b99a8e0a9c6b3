"""The benchmark's own arithmetic: the machine's CPU clock and the burst's report."""

from __future__ import annotations

import os
import sys
import time

import pytest

from app.bench import machine_cpu_seconds, report


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_machine_cpu_counts_busy_time():
    before = machine_cpu_seconds()
    assert before is not None
    t0 = time.process_time()
    while time.process_time() - t0 < 0.3:
        pass
    after = machine_cpu_seconds()
    assert after is not None
    # At least this process's own busy time (the rest of the machine only adds).
    assert after - before >= 0.25


def test_burst_report_states_cpu_per_submission_and_its_ceiling():
    text = report({}, {}, burst_s=40.0, burst_n=50, burst_cpu_s=100.0, pool=None, runs=10,
                  baseline_runs=5)
    cores = os.cpu_count() or 1
    assert "**1.25 submissions/s**" in text
    assert "2.00 s per submission" in text
    assert f"{cores} cores drain at most {cores * 0.5:.2f} submissions/s" in text
    quiet = report({}, {}, burst_s=40.0, burst_n=50, burst_cpu_s=None, pool=None, runs=10,
                   baseline_runs=5)
    assert "per submission" not in quiet
