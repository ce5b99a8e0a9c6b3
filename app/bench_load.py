"""Load on the judge: a burst of submissions posted at once, and a sustained stream of them
arriving at random (Poisson) times, with the machine's CPU spent meanwhile."""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.bench_client import Case, Client, Series


def machine_cpu_seconds() -> float | None:
    """CPU time the whole machine has spent busy, all cores together (Linux's /proc/stat:
    user, nice, system, irq and softirq; not idle, I/O wait or time stolen by a hypervisor).
    None where there is no /proc/stat."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 8:
        return None
    t = [int(x) for x in first[1:8]]
    return (t[0] + t[1] + t[2] + t[5] + t[6]) / os.sysconf("SC_CLK_TCK")


# A fixed workload, timed in a process of its own: pure Python (what eager Flax and the judge
# mostly spend) and a NumPy matrix product, each the best of several tries.
_SPEED_PROBE = """
import json, time
import numpy as np

def best(f, n=5):
    out = []
    for _ in range(n):
        t = time.perf_counter(); f(); out.append(time.perf_counter() - t)
    return min(out) * 1000.0

def python_loop():
    s = 0
    for i in range(2_000_000):
        s += i * i

a = np.random.default_rng(0).standard_normal((384, 384))
def products():
    for _ in range(20):
        a @ a

print(json.dumps({"python_ms": best(python_loop), "numpy_ms": best(products)}))
"""


def machine_speed() -> dict[str, float] | None:
    """How long the fixed workload takes on this machine now (ms; lower is faster). The same
    machine runs the same code at very different speeds from hour to hour: a run's absolute
    figures are read against this, taken in the same run."""
    try:
        done = subprocess.run([sys.executable, "-c", _SPEED_PROBE], capture_output=True,
                              text=True, timeout=120, check=True)
        return {k: float(v) for k, v in json.loads(done.stdout).items()}
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _own_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def burst(client: Client, case: Case, n: int,
          clients: int = 10) -> tuple[float, list[str], float | None]:
    """n submissions posted at once from `clients` threads: seconds until all are judged, the
    verdicts, and the machine's CPU seconds meanwhile less this process's (the clients'), a
    figure that machine speed moves far less than the rate. The clients sign up and log in
    before the clock starts: that is not judging."""
    users = [client] + [Client(client.url) for _ in range(1, clients)]
    verdicts: list[str] = []
    lock = threading.Lock()

    def one(k: int) -> None:
        c = users[k]
        for _ in range(k, n, clients):
            v = c.judge(case, "submit").verdict
            with lock:
                verdicts.append(v)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(clients)]
    machine0, own0 = machine_cpu_seconds(), _own_cpu_seconds()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    machine1 = machine_cpu_seconds()
    cpu = None
    if machine0 is not None and machine1 is not None:
        cpu = max(machine1 - machine0 - (_own_cpu_seconds() - own0), 0.0)
    return elapsed, verdicts, cpu


@dataclass
class Sustained:
    """What a stream of submissions arriving at random times met."""

    rate: float  # submissions per second asked for
    seconds: float  # how long arrivals went on
    samples: dict[tuple[str, str, str], Series]  # (problem, label, mode) -> latencies
    late_s: float  # the worst lag of a post behind its planned time (the clients' own)
    cpu_s: float | None  # the machine's CPU meanwhile, less this process's

    @property
    def all(self) -> Series:
        return Series([x for s in self.samples.values() for x in s.samples])


def sustained(url: str, cases: list[Case], rate: float, seconds: float, *, clients: int = 6,
              seed: int = 0) -> Sustained:
    """Submissions arriving as a Poisson process at `rate` per second for `seconds`, each a
    random one of `cases` as a Run or a Submit (even odds), posted by one of `clients` users
    (a class of learners, not a queue of one); latency is POST to verdict. The arrival times
    are drawn in advance from `seed`, so two runs see the same stream."""
    rng = random.Random(seed)
    plan: list[tuple[float, Case, str]] = []
    t = rng.expovariate(rate)
    while t < seconds:
        plan.append((t, rng.choice(cases), rng.choice(("run", "submit"))))
        t += rng.expovariate(rate)
    users = [Client(url) for _ in range(clients)]
    out: dict[tuple[str, str, str], Series] = {}
    lock = threading.Lock()
    late = [0.0]

    def one(k: int, at: float, case: Case, mode: str, t0: float) -> None:
        delay = t0 + at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        with lock:
            late[0] = max(late[0], time.perf_counter() - t0 - at)
        sample = users[k % clients].judge(case, mode)
        with lock:
            out.setdefault((case.problem, case.label, mode), Series()).samples.append(sample)

    machine0, own0 = machine_cpu_seconds(), _own_cpu_seconds()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(k, at, case, mode, t0))
               for k, (at, case, mode) in enumerate(plan)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    machine1 = machine_cpu_seconds()
    cpu = None
    if machine0 is not None and machine1 is not None:
        cpu = max(machine1 - machine0 - (_own_cpu_seconds() - own0), 0.0)
    return Sustained(rate, seconds, dict(sorted(out.items())), late[0], cpu)
