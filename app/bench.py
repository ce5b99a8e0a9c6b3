"""`tensorjudge bench`: time from POST to final verdict, through the real service.

Two servers are measured in one run, each a real `tensorjudge serve` with 2 embedded workers on
its own SQLite database: the judge as configured (a pool of prepared sandboxes, the judge-filled
compilation cache) and a naive judge as the baseline (a fresh sandbox per submission, no pool,
no cache). Figures are printed as a table, with ratios, and written to a Markdown file.
"""

from __future__ import annotations

import math
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.settings import REPO_ROOT
from judge.parallel import cut

SOLUTIONS = REPO_ROOT / "bench" / "solutions"
PROBLEMS = REPO_ROOT / "problems"


@dataclass(frozen=True)
class Case:
    problem: str
    label: str  # framework and style
    path: Path

    @property
    def code(self) -> str:
        return self.path.read_text(encoding="utf-8")


def _acc(problem: str, name: str) -> Path:
    return PROBLEMS / problem / "submissions" / "accepted" / name


STATEMENT = "flax, as the statement"
CASES = [
    Case("encoder-block", STATEMENT, _acc("encoder-block", "compact_class.py")),
    Case("encoder-block", "flax, setup() style",
         _acc("encoder-block", "setup_named_attributes.py")),
    Case("encoder-block", "flax under jax.jit", SOLUTIONS / "encoder_block_flax_jit.py"),
    Case("decoder-block-preln", STATEMENT, _acc("decoder-block-preln", "compact_class.py")),
    Case("decoder-block-preln", "flax, setup() style",
         _acc("decoder-block-preln", "setup_named_attributes.py")),
    Case("decoder-block-preln", "flax under jax.jit",
         SOLUTIONS / "decoder_block_preln_flax_jit.py"),
    Case("decoder-block", "numpy", _acc("decoder-block", "numpy_einsum.py")),
    Case("decoder-block", "jax, jit", _acc("decoder-block", "jax_jit.py")),
    Case("decoder-block", "jax, eager, other op order", SOLUTIONS / "decoder_block_jax_eager.py"),
    Case("decoder-block", "torch", _acc("decoder-block", "torch_sdpa.py")),
    Case("encoder-decoder", "numpy", _acc("encoder-decoder", "numpy_per_head.py")),
    Case("encoder-decoder", "jax, jit (scan)", _acc("encoder-decoder", "jax_jit.py")),
    Case("encoder-decoder", "jax, eager, other op order",
         SOLUTIONS / "encoder_decoder_jax_eager.py"),
    Case("encoder-decoder", "torch", _acc("encoder-decoder", "torch_sdpa.py")),
]
# Wrong answers not among the packaged ones: what a wrong Submit costs, diagnosis included.
WRONG_CASES = [
    Case("encoder-block", "wrong: Post-LN, setup() style",
         SOLUTIONS / "wrong" / "encoder_block_post_ln.py"),
    Case("decoder-block", "wrong: torch, no causal mask",
         SOLUTIONS / "wrong" / "decoder_block_torch_no_causal.py"),
]


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

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until the pool has no spare being prepared (its spares are ready again)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = self.pool()
            if p is None or not p.get("spawning"):
                return
            time.sleep(0.2)


def measure(client: Client, cases: list[Case], runs: int, *, settle: bool,
            progress: Any) -> dict[tuple[str, str, str], Series]:
    out: dict[tuple[str, str, str], Series] = {}
    for case in cases:
        for mode in ("run", "submit"):
            client.judge(case, mode)  # untimed: expected outputs cached, caches filled
            series = out.setdefault((case.problem, case.label, mode), Series())
            for _ in range(runs):
                if settle:
                    client.settle()
                series.samples.append(client.judge(case, mode))
            progress(f"  {case.problem:20} {case.label:28} {mode:6} "
                     f"p50 {series.pct('wall_ms', 0.5):8.0f} ms")
    return out


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


def _fmt(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:,.0f}"


def targets(fast: dict, naive: dict, burst_rate: float) -> list[str]:
    """The fast-feedback targets, each against its figure from this same run (rows the run
    did not measure are left out)."""
    rows: list[tuple[str, str, bool]] = []

    def p50(key: tuple[str, str, str], series: dict) -> float | None:
        s = series.get(key)
        return s.pct("wall_ms", 0.5) if s is not None and s.samples else None

    if (t := p50(("encoder-block", STATEMENT, "run"), fast)) is not None:
        rows.append(("Run, Flax encoder block: p50 at most 150 ms", f"{t:,.0f} ms", t <= 150))
    for problem in ("encoder-block", "decoder-block-preln"):
        key = (problem, STATEMENT, "submit")
        if (t := p50(key, fast)) is None:
            continue
        rows.append((f"Submit, {problem} (Flax): p50 at most 1 s", f"{t:,.0f} ms", t <= 1000))
        if (b := p50(key, naive)) is not None:
            rows.append((f"Submit, {problem} (Flax): at least 15x the naive judge",
                         f"{b / t:.1f}x", b / t >= 15))
    for problem in ("decoder-block", "encoder-decoder"):
        if (t := p50((problem, "numpy", "submit"), fast)) is not None:
            rows.append((f"Submit, {problem} (NumPy): p50 at most 300 ms", f"{t:,.0f} ms",
                         t <= 300))
    if fast:
        worst = max(fast, key=lambda k: fast[k].pct("overhead_ms", 0.5))
        t = fast[worst].pct("overhead_ms", 0.5)
        rows.append(("Judge overhead: p50 at most 100 ms on every row",
                     f"{t:,.0f} ms at most ({worst[0]}, {worst[1]}, {worst[2]})", t <= 100))
    if not math.isnan(burst_rate):
        rows.append(("Burst of Flax Submits, 2 workers: at least 1 per second",
                     f"{burst_rate:.2f}/s", burst_rate >= 1))
    if not rows:
        return []
    out = ["", "## Targets", "", "| target | this run | met |", "| --- | ---: | --- |"]
    out += [f"| {what} | {figure} | {'yes' if ok else '**no**'} |" for what, figure, ok in rows]
    return out


def report(fast: dict, naive: dict, burst_s: float, burst_n: int, burst_cpu_s: float | None,
           pool: dict | None, runs: int, baseline_runs: int,
           docker: dict | None = None, wrong: dict | None = None) -> str:
    lines = [
        "# tensorjudge benchmark",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{os.cpu_count()} cores with `tensorjudge bench`. Each row: {runs} submissions "
        f"(baseline: {baseline_runs}), one at a time, time from POST to final verdict through "
        "the REST API of a real `serve` with 2 embedded workers. *Overhead* is that time minus "
        "the time spent inside the user's function (measured in the sandbox); *compile* is the "
        "JAX compilation inside the user's function that the warm-up could not foresee. "
        "A submission that does not compile its own code runs in two prepared sandboxes at "
        "once when the worker is idle and it has enough tests (the result's `parts`); its "
        "overhead subtracts the user's time of the longer part.",
        "",
        "| problem | solution | mode | p50 ms | p90 ms | overhead p50 | compile p50 | naive p50 "
        "| naive p90 | speed-up (p50) | docker p50 | docker p90 | docker / bwrap (p50) "
        "| verdicts |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | --- |",
    ]
    for key, s in fast.items():
        b = naive.get(key)
        bp50 = b.pct("wall_ms", 0.5) if b else float("nan")
        ratio = bp50 / s.pct("wall_ms", 0.5) if b else float("nan")
        d = (docker or {}).get(key)
        dp50 = d.pct("wall_ms", 0.5) if d else float("nan")
        dratio = dp50 / s.pct("wall_ms", 0.5) if d else float("nan")
        verdicts = ",".join(sorted(s.verdicts | (b.verdicts if b else set())
                                   | (d.verdicts if d else set())))
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {_fmt(s.pct('wall_ms', 0.5))} | "
            f"{_fmt(s.pct('wall_ms', 0.9))} | {_fmt(s.pct('overhead_ms', 0.5))} | "
            f"{_fmt(s.pct('compile_ms', 0.5))} | {_fmt(bp50)} | "
            f"{_fmt(b.pct('wall_ms', 0.9) if b else float('nan'))} | "
            f"{'-' if math.isnan(ratio) else f'{ratio:.1f}x'} | {_fmt(dp50)} | "
            f"{_fmt(d.pct('wall_ms', 0.9) if d else float('nan'))} | "
            f"{'-' if math.isnan(dratio) else f'{dratio:.2f}'} | {verdicts} |")
    if docker is not None:
        lines += ["", "*docker*: the same judge with `TENSORJUDGE_SANDBOX=docker` (a prepared "
                  "container per submission from the pool, the compilation cache in an engine "
                  "volume), measured in the same run; the ratio is its p50 over bubblewrap's."]
    rate = burst_n / burst_s if burst_s else float("nan")
    lines += targets(fast, naive, rate)
    lines += ["", "## Burst", "",
              f"{burst_n} Submit (all tests) submissions of the Flax encoder block posted at once "
              f"from 10 clients, 2 workers: drained in {burst_s:.1f} s, "
              f"**{rate:.2f} submissions/s**."]
    if burst_cpu_s:
        cores = os.cpu_count() or 1
        lines += ["", f"Machine CPU while it drained, less the benchmark's own clients: "
                  f"{burst_cpu_s / burst_n:.2f} s per submission (server, workers, sandboxes "
                  f"being prepared and judging). At that cost {cores} cores drain at most "
                  f"{cores * burst_n / burst_cpu_s:.2f} submissions/s."]
    if pool:
        lines += ["", "## Pool", "",
                  f"Idle prepared sandboxes after the run: {pool['idle']}, "
                  f"**{pool['idle_memory_mb']} MiB** in all (cgroup memory). "
                  f"Jobs that found one ready: {pool['hits']}, waited for one: {pool['waits']}, "
                  f"started their own: {pool['cold']}."]
    if wrong:
        lines += ["", "## Wrong answers", "",
                  "Wrong answers not among the packaged ones, judged as above: the time to a "
                  "verdict with its diagnosis, and of it the diagnosis (known mistakes "
                  "matched against their outputs computed once per problem version, the "
                  "numeric readings, and the probes of the submission that it runs).", "",
                  "| problem | solution | mode | p50 ms | diagnosis p50 ms | diagnosis p90 ms "
                  "| first finding |",
                  "| --- | --- | --- | ---: | ---: | ---: | --- |"]
        for key, s in wrong.items():
            firsts = sorted({x.finding or "(none)" for x in s.samples})
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {_fmt(s.pct('wall_ms', 0.5))} "
                         f"| {_fmt(s.pct('diagnosis_ms', 0.5))} "
                         f"| {_fmt(s.pct('diagnosis_ms', 0.9))} | {'; '.join(firsts)} |")
    return "\n".join(lines) + "\n"


def docker_available() -> str | None:
    """Why the docker column cannot be measured here, or None when it can."""
    from app.settings import get_settings
    from judge.sandbox import SandboxUnavailable, make_sandbox

    st = get_settings()
    try:
        make_sandbox("docker", docker_host=st.docker_host, docker_image=st.docker_image,
                     compile_cache=False).close()
    except SandboxUnavailable as e:
        return str(e)
    return None


def run_bench(out: Path, runs: int, baseline_runs: int, burst_n: int,
              problems: list[str] | None, progress: Any = print,
              with_docker: bool = True) -> str:
    cases = [c for c in CASES if not problems or c.problem in problems]
    with tempfile.TemporaryDirectory(prefix="tj-bench-") as tmp_s:
        tmp = Path(tmp_s)
        progress("judge as configured (pool of prepared sandboxes, compilation cache):")
        with server("fast", tmp, {}) as url:
            client = Client(url)
            client.settle(120)
            fast = measure(client, cases, runs, settle=True, progress=progress)
            wrong = measure(client, [c for c in WRONG_CASES if not problems
                                     or c.problem in problems],
                            runs, settle=True, progress=progress)
            client.settle(120)
            b_case = next((c for c in cases if c.problem == "encoder-block"), cases[0])
            burst_s, verdicts, burst_cpu = burst(client, b_case, burst_n)
            per_sub = f", {burst_cpu / burst_n:.2f} s of CPU each" if burst_cpu else ""
            progress(f"  burst of {burst_n}: {burst_s:.1f} s{per_sub} ({set(verdicts)})")
            client.settle(120)
            pool = client.pool()
        progress("naive judge (a fresh sandbox per submission, no pool, no cache):")
        # Expected outputs stay cached (they are the judge's, computed once per version).
        naive_env = {"TENSORJUDGE_POOL_SIZE": "0", "TENSORJUDGE_COMPILE_CACHE": "false",
                     "TENSORJUDGE_FORK_SERVER": "false"}
        with server("naive", tmp, naive_env) as url:
            naive = measure(Client(url), cases, baseline_runs, settle=False, progress=progress)
        docker = None
        why_not = docker_available() if with_docker else "not asked for"
        if why_not is None:
            progress("the same judge with the docker backend (prepared containers):")
            with server("docker", tmp, {"TENSORJUDGE_SANDBOX": "docker"}) as url:
                client = Client(url)
                client.settle(300)
                docker = measure(client, cases, runs, settle=True, progress=progress)
        else:
            progress(f"no docker column: {why_not}")
    text = report(fast, naive, burst_s, burst_n, burst_cpu, pool, runs, baseline_runs,
                  docker, wrong)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return text
