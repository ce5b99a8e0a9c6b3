"""What a sandbox does before its job: the warm-up shares one MLIR context and runs without
the garbage collector, and neither shortcut reaches the user's code."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from judge.engine import judge
from judge.inside.runner_jax import one_ir_context
from judge.package import load_package
from judge.sandbox import BwrapSandbox
from judge.verdicts import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "problems"

# Lowers a few computations, as a real warm-up does, and leaves a marker for the user's code.
WARMUP = """
def warmup(cases, preload):
    import jax
    import jax.numpy as jnp
    from jax._src.interpreters import mlir

    for n in (3, 4, 5):
        jnp.tanh(jnp.ones(n)) + 1
    import builtins
    builtins.tj_warm_context_shared = mlir.make_ir_context() is mlir.make_ir_context()
"""

# The user's code checks it runs with JAX's own contexts and a working collector.
USER = """
import builtins
import gc
import jax.numpy as jnp
from jax._src.interpreters import mlir

def double(x):
    assert builtins.tj_warm_context_shared, "the warm-up did not share a context"
    assert mlir.make_ir_context() is not mlir.make_ir_context(), "the user got the shared one"
    assert gc.isenabled(), "the collector is off for the user"
    return jnp.asarray(2 * x).reshape(-1)
"""


def _lower(n: int) -> str:
    import jax

    return jax.jit(lambda x: jax.numpy.sin(x) * 2 + 1).lower(np.ones(n, np.float32)).as_text()


def test_one_context_while_warming_and_the_same_modules():
    from jax._src.interpreters import mlir

    before = [_lower(n) for n in (3, 7)]
    with one_ir_context():
        assert mlir.make_ir_context() is mlir.make_ir_context()
        during = [_lower(n) for n in (3, 7)]
    assert mlir.make_ir_context() is not mlir.make_ir_context()
    # Same modules, so the same compilation-cache keys as a sandbox that does not share.
    assert during == before


@pytest.mark.sandbox
def test_the_users_code_gets_jax_as_it_ships(tmp_path: Path):
    root = tmp_path / "double"
    shutil.copytree(FIXTURES / "double", root)
    (root / "warmup.py").write_text(WARMUP)
    pkg = load_package(root)
    res = judge(pkg, USER, BwrapSandbox())
    assert res.verdict is Verdict.AC, (res.message, [t.message for t in res.tests])
