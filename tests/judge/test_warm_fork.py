"""Sandboxes forked from a warmed fork server: one that has run the kind's whole preparation
(JAX's backend, the problem's warm-up) once, so each sandbox starts where it ended. A job that
needs a compilation there is handed back and judged, from its start, in a sandbox that
prepared itself; nothing of one sandbox reaches the next."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from judge.engine import judge
from judge.kinds import job_for
from judge.package import Package, load_package
from judge.pysource import parse
from judge.sandbox import BwrapSandbox, SandboxPool
from judge.sandbox.bwrap.warm import WarmRouting
from judge.verdicts import Verdict
from tests.conftest import FIXTURES, REPO
from tests.judge.conftest import forked_sandbox

pytestmark = pytest.mark.sandbox

# The problem's warm-up: eager jax.numpy, doubling at every test's shape.
WARMUP = '''
import numpy as np


def warmup(cases, preload):
    if "jax.numpy" not in preload:
        return
    import jax.numpy as jnp

    import jax

    for case in cases:
        x = np.zeros(case["x"]["shape"], np.float32)
        np.asarray((2 * jnp.asarray(x)).reshape(-1))
        # Operations made of several functions (as Flax's layers are): lowering them starts
        # MLIR's thread pool in the warmed server.
        np.asarray(jax.nn.softmax(jnp.asarray(x)) + jnp.var(jnp.asarray(x), axis=-1, keepdims=True))
'''
WARMED = "import jax.numpy as jnp\n\ndef double(x):\n    return (2 * jnp.asarray(x)).reshape(-1)\n"
# An operation the warm-up never ran: it compiles.
NEW_OP = ("import jax.numpy as jnp\n\ndef double(x):\n"
          "    x = jnp.asarray(x)\n    return jnp.add(x, x).reshape(-1)\n")
# Many operations under jax.jit, reached by a name the judge does not see as compiling (so
# the job is forked warm): a module of several functions, which MLIR verifies on its threads.
JITTED_LAYERS = """
import jax
import jax.numpy as jnp

compiled = getattr(jax, "ji" + "t")


@compiled
def _layers(x):
    y = x
    for i in range(8):
        y = jax.nn.softmax(y * (i + 1.0), axis=-1) + jnp.var(y, axis=-1, keepdims=True)
        y = jax.nn.standardize(y, axis=-1) + jnp.linalg.norm(y, axis=-1, keepdims=True)
    return 2 * x + 0 * y


def double(x):
    return _layers(jnp.asarray(x)).reshape(-1)
"""
# Waits forever, but only where the warmed server's hand-over hook is installed: what a wait
# of the fork's own making (a thread the fork does not have) looks like to the judge.
HANGS_IF_FORKED_WARM = """
import jax.numpy as jnp
import jax._src.compiler as compiler

def double(x):
    if compiler.compile_or_get_cached.__name__ == "hand_over":
        while True:
            pass
    return (2 * jnp.asarray(x)).reshape(-1)
"""
LEAVES_A_MARK = """
import jax.numpy as jnp
import numpy as np

def double(x):
    jnp.tensorjudge_mark = True
    np.tensorjudge_mark = True
    with open("/tmp/mark", "w") as f:
        f.write("x")
    return (2 * jnp.asarray(x)).reshape(-1)
"""
FINDS_NO_MARK = """
import os
import jax.numpy as jnp
import numpy as np

def double(x):
    seen = [hasattr(jnp, "tensorjudge_mark"), hasattr(np, "tensorjudge_mark"),
            os.path.exists("/tmp/mark")]
    y = (2 * jnp.asarray(x)).reshape(-1)
    return y + 1 if any(seen) else y
"""


@pytest.fixture(scope="module")
def eager_double(tmp_path_factory: pytest.TempPathFactory) -> Package:
    root: Path = tmp_path_factory.mktemp("problems") / "double"
    shutil.copytree(FIXTURES / "double", root)
    toml = root / "problem.toml"
    toml.write_text(toml.read_text().replace('frameworks = ["numpy"]',
                                             'frameworks = ["numpy", "jax"]'))
    (root / "warmup.py").write_text(WARMUP)
    return load_package(root)


@pytest.fixture(scope="module")
def warm_host() -> BwrapSandbox:
    sb = forked_sandbox()
    yield sb
    sb.close()


@pytest.fixture
def warm(warm_host: BwrapSandbox) -> BwrapSandbox:
    """The module's warm-forking host, with no history of hand-backs from other tests."""
    warm_host.warm_routing = WarmRouting()
    return warm_host


def test_a_warmed_kind_is_forked_from_its_warmed_server(warm, eager_double):
    servers = warm.fork_servers
    before, handovers = servers.forked_warm, warm.handovers
    for _ in range(2):
        res = judge(eager_double, WARMED, warm, probes=False)
        assert res.verdict is Verdict.AC, res.to_dict()
        assert "os.fork()" not in res.stderr  # the fork's warning is not the user's
    assert servers.forked_warm >= before + 2
    assert warm.handovers == handovers


def test_a_job_that_compiles_is_handed_back_and_judged_where_it_can(warm, eager_double):
    handovers = warm.handovers
    res = judge(eager_double, NEW_OP, warm, samples_only=True)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert warm.handovers == handovers + 1


def test_a_jitted_function_is_handed_back_when_it_is_lowered(warm, eager_double):
    """MLIR's verifier of a module this large waits on threads the fork does not have: the
    hand-over comes at the lowering, not from waiting out the test's time."""
    handovers, hangs = warm.handovers, warm.hang_reruns
    res = judge(eager_double, JITTED_LAYERS, warm, samples_only=True)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert (warm.handovers, warm.hang_reruns) == (handovers + 1, hangs)


def test_a_wait_of_the_forks_making_never_becomes_a_verdict(warm, eager_double):
    handovers, hangs = warm.handovers, warm.hang_reruns
    res = judge(eager_double, HANGS_IF_FORKED_WARM, warm, samples_only=True)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert (warm.handovers, warm.hang_reruns) == (handovers + 1, hangs + 1)


def test_nothing_of_one_warm_forked_sandbox_reaches_the_next(warm, eager_double):
    before = warm.fork_servers.forked_warm
    assert judge(eager_double, LEAVES_A_MARK, warm, samples_only=True).verdict is Verdict.AC
    res = judge(eager_double, FINDS_NO_MARK, warm, samples_only=True)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert warm.fork_servers.forked_warm == before + 2


def test_the_warmed_server_sees_no_judge_files_and_is_shared_once(warm, eager_double):
    judge(eager_double, WARMED, warm, samples_only=True)
    servers = warm.fork_servers
    warmed = [s for s in servers._servers.values() if s.warmed]
    assert warmed
    for server in warmed:
        root = f"/proc/{server.pid}/root"
        assert os.path.isdir(f"{root}/usr")
        for path in (str(REPO), "/etc/passwd", "/var/lib/postgresql", "/home"):
            assert not os.path.exists(root + path), path
    # Its memory is counted once, as the sandboxes' shared memory, not in each sandbox.
    assert warm.shared_memory_bytes() >= sum(s.memory_bytes() for s in warmed) > 0


def test_numpy_submissions_are_not_forked_warm(warm, eager_double):
    before = warm.fork_servers.forked_warm
    code = "def double(x):\n    return (2 * x).reshape(-1)\n"
    assert judge(eager_double, code, warm, samples_only=True).verdict is Verdict.AC
    assert warm.fork_servers.forked_warm == before


def _prepared_pool(warm: BwrapSandbox, package: Package, code: str) -> SandboxPool:
    """A pool with a sandbox of the job's kind ready (forked warm), as a judge that has been
    up a while has it: a kind never prepared yet gets a sandbox without the warm-up."""
    pool = SandboxPool(warm, per_key=1, split_idle=False)
    kind = pool.route(job_for(package, code, parse(code))).kind
    pool.prewarm(kind, package.manifest.limits.memory_mb << 20)
    assert pool.wait_ready(1, 120)
    return pool


def test_a_pool_reruns_a_handed_back_job_in_a_spare_that_prepares_itself(warm, eager_double):
    pool = _prepared_pool(warm, eager_double, NEW_OP)
    handovers = warm.handovers
    try:
        for _ in range(2):
            res = judge(eager_double, NEW_OP, pool, samples_only=True)
            assert res.verdict is Verdict.AC, res.to_dict()
        assert warm.handovers == handovers + 2
        cold = [s for s in pool._slots.values() if s.kind.self_prepared]
        assert len(cold) == 1  # the kind's own slot, kept ready after the first hand-over
    finally:
        pool.close()


def test_a_kind_that_keeps_handing_back_is_judged_where_it_compiles(warm, eager_double):
    """After `window` hand-backs in a row, the kind's jobs skip the warm fork (its run would
    only be wasted); one in `retry_every` tries it again, and a job that then needs no
    compilation gives the kind its warm fork back."""
    warm.warm_routing = routing = WarmRouting(window=2, retry_every=3)
    pool = _prepared_pool(warm, eager_double, NEW_OP)
    try:
        def handed_back(code: str) -> int:
            handovers = warm.handovers
            res = judge(eager_double, code, pool, samples_only=True)
            assert res.verdict is Verdict.AC, res.to_dict()
            return warm.handovers - handovers

        assert [handed_back(NEW_OP) for _ in range(2)] == [1, 1]
        # Straight to a sandbox that prepares itself: nothing to hand back.
        assert [handed_back(NEW_OP), handed_back(WARMED)] == [0, 0]
        assert routing.routed == 2
        # The third tries the warm fork again; it compiles nothing, so the kind is warm again
        # (and the next job that compiles is handed back from there).
        assert handed_back(WARMED) == 0
        assert handed_back(NEW_OP) == 1
        assert routing.routed == 2
    finally:
        pool.close()


def test_a_flax_submission_that_compiles_itself_is_not_forked_warm(eager_double):
    flax = "import flax.linen as nn\nimport jax\n\ndef double(x):\n    return x\n"
    jitted = flax + "\nfast = jax.jit(double)\n"
    sb = forked_sandbox()
    try:
        warm_kind = sb.route(job_for(eager_double, flax, parse(flax)))
        cold_kind = sb.route(job_for(eager_double, jitted, parse(jitted)))
    finally:
        sb.close()
    assert "flax.linen" in warm_kind.preload and not warm_kind.self_prepared
    assert cold_kind.self_prepared and cold_kind.preload == warm_kind.preload
