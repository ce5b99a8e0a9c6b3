"""The start-up work gives way to the jobs someone waits for: no step starts while one is being
judged, and the problems jobs asked for are prepared first."""

from __future__ import annotations

import shutil
import threading
import time
from collections import OrderedDict
from pathlib import Path

import pytest

import judge.startup as startup
from judge.package import Package, load_package
from judge.startup import Startup
from tests.conftest import FIXTURES


@pytest.fixture
def two_problems(tmp_path: Path) -> list[Package]:
    out = []
    for i, title in enumerate(("Double it", "Double it again")):
        root = tmp_path / str(i) / "double"
        shutil.copytree(FIXTURES / "double", root)
        toml = root / "problem.toml"
        toml.write_text(toml.read_text().replace('title = "Double it"', f'title = "{title}"'))
        out.append(load_package(root))
    assert out[0].content_hash != out[1].content_hash
    return out


@pytest.mark.timeout(60)
def test_no_step_starts_while_a_job_is_judged_and_its_problem_comes_first(
        two_problems: list[Package], monkeypatch: pytest.MonkeyPatch):
    first, second = two_problems
    done: list[tuple[str, str]] = []
    monkeypatch.setattr(startup, "_prepare_kind_step",
                        lambda pool, package, kind: lambda: done.append(
                            ("kind", package.content_hash)))
    monkeypatch.setattr(startup, "_compute_trusted_outputs",
                        lambda package: done.append(("trusted", package.content_hash)))
    stopping = threading.Event()
    work = Startup(pool=None, stopping=stopping)  # type: ignore[arg-type]
    job = work.serving(second)
    job.__enter__()
    runner = threading.Thread(target=work.run, args=(two_problems,))
    runner.start()
    try:
        time.sleep(0.5)
        assert done == []  # a job is being judged: nothing starts
        assert work.jobs_being_served == 1
        job.__exit__(None, None, None)
        runner.join(10)
        assert not runner.is_alive()
        # The asked-for problem's steps first, in their own order, then the others'.
        assert done == [("kind", second.content_hash), ("trusted", second.content_hash),
                        ("kind", first.content_hash), ("trusted", first.content_hash)]
    finally:
        stopping.set()
        runner.join(10)


@pytest.mark.timeout(60)
def test_a_load_that_never_pauses_does_not_stop_the_work_for_ever(
        two_problems: list[Package], monkeypatch: pytest.MonkeyPatch):
    done: list[str] = []
    monkeypatch.setattr(startup, "_prepare_kind_step",
                        lambda pool, package, kind: lambda: done.append("kind"))
    monkeypatch.setattr(startup, "_compute_trusted_outputs",
                        lambda package: done.append("trusted"))
    work = Startup(pool=None, stopping=threading.Event(),  # type: ignore[arg-type]
                   max_pause_s=0.05)
    with work.serving(two_problems[0]):
        work.run(two_problems)
    assert len(done) == 4


@pytest.mark.timeout(60)
def test_work_in_the_judges_own_process_waits_for_a_pause_in_the_jobs(
        two_problems: list[Package], monkeypatch: pytest.MonkeyPatch):
    """Loading the mutants' stored outcomes holds the judge process's interpreter for a
    fraction of a second per problem, which every request and job of a fresh start needs
    for moments: it waits until no job has been judged for `quiet_s` (and, at the start,
    for as long from the start), where the other steps only wait for the jobs to end."""
    done: list[tuple[str, float]] = []
    monkeypatch.setattr(startup, "_prepare_kind_step", lambda pool, package, kind: lambda: (
        done.append(("kind", time.monotonic()))))
    monkeypatch.setattr(startup, "_compute_trusted_outputs",
                        lambda package: done.append(("trusted", time.monotonic())))
    monkeypatch.setattr(startup, "prepare_mutant_banks",
                        lambda packages, stopping: done.append(("mutants", time.monotonic())))
    work = Startup(pool=None, stopping=threading.Event(),  # type: ignore[arg-type]
                   quiet_s=1.0)
    job = work.serving(two_problems[0])
    job.__enter__()
    runner = threading.Thread(target=work.run, args=(two_problems,))
    runner.start()
    try:
        time.sleep(0.3)
        assert done == []
        job.__exit__(None, None, None)
        ended = time.monotonic()
        runner.join(10)
        kinds = [t for what, t in done if what != "mutants"]
        mutants = [t for what, t in done if what == "mutants"]
        assert len(kinds) == 4 and len(mutants) == 2
        assert max(kinds) - ended < 0.5  # at once
        assert min(mutants) - ended >= 1.0  # after a second without a job
    finally:
        work.stopping.set()
        runner.join(10)


@pytest.mark.timeout(300)
def test_the_start_holds_the_stored_tests_in_memory(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    """Where the set-up stored a problem's expected outputs, the start's first step holds its
    tests in memory, so a first job finds them; where it did not, that step computes
    nothing (the outputs wait for their own step, after the kinds)."""
    import judge.prepared as prepared
    import judge.trusted.expected as expected

    package = load_package(FIXTURES / "double")
    expected.expected_outputs(package, package.tests)  # stored, as by the set-up
    monkeypatch.setattr(prepared, "_PREPARED", OrderedDict())
    startup._prepare_stored_tests(package)
    assert set(prepared._PREPARED) == {(package.content_hash, False),
                                       (package.content_hash, True)}
    assert prepared.Preparing(package, False).ready() is not None

    monkeypatch.setattr(prepared, "_PREPARED", OrderedDict())
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(tmp_path))  # nothing stored

    def no_trusted_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trusted process was started")

    monkeypatch.setattr(expected, "run_trusted", no_trusted_process)
    startup._prepare_stored_tests(package)
    assert not prepared._PREPARED


@pytest.mark.sandbox
@pytest.mark.timeout(180)
def test_the_submission_runs_while_its_expected_outputs_are_computed(
        sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """On a fresh machine the trusted outputs take about as long as the run (a Flax reference
    imports and compiles too): the sandbox starts without waiting for them."""
    import judge.prepared as prepared
    from judge.engine import judge
    from judge.sandbox import SandboxPool
    from judge.verdicts import Verdict

    root = tmp_path / "double"
    shutil.copytree(FIXTURES / "double", root)
    toml = root / "problem.toml"
    toml.write_text(toml.read_text().replace('title = "Double it"', 'title = "Double it now"'))
    package = load_package(root)  # a version whose outputs no one has computed in memory
    started = threading.Event()
    computed = prepared.expected_outputs

    def after_the_start(package: Package, tests: list, **kw: object) -> list:
        assert started.wait(60), "the expected outputs were waited for before the run"
        return computed(package, tests, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(prepared, "expected_outputs", after_the_start)
    pool = SandboxPool.around(sandbox)
    run = pool.run

    def starting(*args: object) -> object:
        started.set()
        return run(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "run", starting)
    res = judge(package, "def double(x):\n    return (2 * x).reshape(-1)\n", pool)
    assert res.verdict is Verdict.AC, res.to_dict()


@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_prepared_ahead_the_cache_holds_every_kinds_warm_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`prepare_ahead` (what `./dev setup` runs): afterwards the judge's compilation cache holds
    every kind's warm-up (so a first job's sandbox loads it rather than compiles it) and the
    trusted outputs are on disk: the expected ones, and the reference's mutants'."""
    from judge.kinds import kinds_for
    from judge.sandbox import SandboxConfig, open_sandbox
    from judge.sandbox.xla_cache import needs_fill
    from judge.trusted import known_mistakes, mutant_outputs
    from judge.trusted.expected import cache_dir, test_key

    # A cache of its own: the suite's starts with the set-up's outputs of this problem. And
    # none of the mutants' outcomes an earlier test of the run holds in memory.
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(mutant_outputs, "_MEMO", OrderedDict())
    package = load_package(Path(__file__).resolve().parents[2] / "problems" / "encoder-block")
    assert not any((cache_dir() / f"{test_key(package, t)}.npy").is_file()
                   for t in package.tests)
    pool = open_sandbox(SandboxConfig(pool_per_key=0))
    try:
        done = startup.prepare_ahead(package, pool)
        assert done.kinds_failed == 0 and done.kinds == len(kinds_for(package))
        filled = [k for k in kinds_for(package) if needs_fill(k)]
        assert filled and all(pool.backend.compile_cache_holds(k) for k in filled)
        assert all((cache_dir() / f"{test_key(package, t)}.npy").is_file()
                   for t in package.tests)
        assert known_mistakes._on_disk(package)  # the mutants' outcomes too
    finally:
        pool.close()


@pytest.mark.sandbox
def test_the_start_begins_with_a_numpy_sandbox_ready(sandbox, double):
    """Before the first job can come, a spare that imports no framework is ready: the one
    every problem's NumPy submissions take."""
    from judge.kinds import kind_for
    from judge.sandbox import SandboxPool

    pool = SandboxPool(sandbox, per_key=1)
    try:
        assert Startup(pool, threading.Event()).begin(wait_s=60)
        assert [sp.kind.key for sp in pool.idle()] == [kind_for(double, []).key]
    finally:
        pool.close()


@pytest.mark.sandbox
def test_the_start_imports_each_framework_ahead():
    """With `import_ahead`, the start starts every framework's fork server at once, beside
    the NumPy spare it waits for: the first JAX, Flax or PyTorch job then forks from one that
    imported its libraries already (or waits for the one being started), not imports them
    itself. Without it, none is started before a job asks."""
    from judge.kinds import framework_preloads
    from judge.sandbox import SandboxPool
    from tests.judge.conftest import forked_sandbox

    for ahead in (False, True):
        sb = forked_sandbox()
        assert sb.fork_servers is not None
        pool = SandboxPool(sb, per_key=1)
        try:
            assert Startup(pool, threading.Event()).begin(wait_s=60, import_ahead=ahead)
            wanted = set(framework_preloads())
            assert wanted == {("jax",), ("flax.linen", "jax"), ("torch",)}
            deadline = time.monotonic() + (180 if ahead else 2)
            while not wanted <= set(sb.fork_servers._servers) and time.monotonic() < deadline:
                time.sleep(0.2)
            started = set(sb.fork_servers._servers) & wanted
            assert started == (wanted if ahead else set())
        finally:
            pool.close()
            sb.close()
