"""Eager JAX: which sandboxes warm its operations, and that the warm-ups of problems 3 and 4
leave a solution written in another style little to compile (counted, in a fresh process)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judge.kinds import imported_frameworks, kinds_for
from judge.package import load_package
from judge.sandbox.job import EAGER_JAX

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("code", "eager"), [
    ("import jax.numpy as jnp\ndef f(x): return jnp.tanh(x)", True),
    ("from jax import numpy as jnp, nn\ndef f(x): return nn.relu(x)", True),
    ("import jax\nimport jax.numpy as jnp\nf = jax.jit(lambda x: jnp.tanh(x))", False),
    ("import jax\ndef f(x): return jax.lax.scan(lambda c, y: (c, y), 0, x)", False),
    ("import flax.linen as nn\nimport jax.numpy as jnp\ndef f(x): return x", False),
    ("import numpy as np\ndef f(x): return np.tanh(x)", False),
    ("import torch\ndef f(x): return torch.tanh(torch.as_tensor(x))", False),
])
def test_only_eager_jax_submissions_get_the_eager_warm_up(code, eager):
    preload = imported_frameworks(ast.parse(code))
    assert (EAGER_JAX in preload) is eager
    if eager:
        assert "jax" in preload


def test_pools_prepare_eager_jax_beside_jitted_jax_only_where_jax_is_allowed():
    dec = [list(k.preload) for k in kinds_for(load_package(ROOT / "problems" / "decoder-block"))]
    assert dec == [[], ["torch"], ["jax"], sorted(["jax", EAGER_JAX])]
    enc = [list(k.preload) for k in kinds_for(load_package(ROOT / "problems" / "encoder-block"))]
    assert all(EAGER_JAX not in p for p in enc)


COUNT = textwrap.dedent('''
    import json, sys
    import numpy as np
    import jax
    from jax._src import monitoring
    from judge.kinds import _shape_only
    from judge.package import load_package

    compiles = [0]
    monitoring.register_event_duration_secs_listener(
        lambda ev, d, **kw: compiles.__setitem__(0, compiles[0] + ("backend_compile" in ev)))
    package, solution, warm = sys.argv[1], sys.argv[2], sys.argv[3] == "warm"
    pk = load_package(package)
    test = pk.tests[int(sys.argv[4])]
    args = pk.generator.generate(test.seed, **test.params)
    if warm:
        ns = {}
        exec(compile(pk.warmup_source, "warmup.py", "exec"), ns)
        ns["warmup"]([_shape_only(args)], ["jax", "jax.numpy"])
    before = compiles[0]
    sol = {}
    exec(compile(open(solution).read(), "solution.py", "exec"), sol)
    np.asarray(sol[pk.entry_point](**args))
    print(json.dumps(compiles[0] - before))
''')


def _compiles(problem: str, solution: str, warm: bool, test: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", COUNT, str(ROOT / "problems" / problem),
         str(ROOT / "bench" / "solutions" / solution), "warm" if warm else "cold", str(test)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=True)
    return int(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("problem", "solution", "test"), [
    ("decoder-block", "decoder_block_jax_eager_heads.py", 3),
    ("encoder-decoder", "encoder_decoder_jax_eager_heads.py", 3),
])
def test_the_warm_up_leaves_an_eager_solution_little_to_compile(problem, solution, test):
    cold = _compiles(problem, solution, False, test)
    warm = _compiles(problem, solution, True, test)
    assert cold > 40  # eager JAX compiles every operation at first use
    assert warm <= cold // 8, (cold, warm)
