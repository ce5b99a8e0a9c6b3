"""Runtime errors read well: the exception line itself, the user's own source lines, no
library boilerplate; and what an error exactly where two sizes differ means."""

from __future__ import annotations

import shutil

import pytest

from judge.diagnosis.case import Case
from judge.diagnosis.size_mixups import size_mixups
from judge.engine import judge
from judge.package import PackageError, Tolerance, load_package
from judge.package import TestSpec as Spec
from judge.verdicts import JudgeResult, TestResult, Verdict
from tests.conftest import FIXTURES, REPO

JAX_SHAPE_ERROR = """import jax.numpy as jnp


def double(x):
    y = jnp.ones(7)
    return y + x
"""


def test_a_jax_error_reads_as_its_own_line_with_the_users_source(run):
    res = run(JAX_SHAPE_ERROR)
    assert res.verdict is Verdict.RE
    for t in res.tests:
        assert t.message and t.message.splitlines()[0].startswith(("TypeError", "ValueError"))
        assert "incompatible shapes" in t.message.lower()
        assert "For simplicity" not in t.message
    assert res.message is not None
    assert "For simplicity" not in res.message and "JAX_TRACEBACK_FILTERING" not in res.message
    assert 'File "solution.py", line 6, in double' in res.message
    assert "    return y + x" in res.message  # the line itself, not only its number
    assert res.message.rstrip().splitlines()[-1] == res.tests[0].message.splitlines()[-1]


def test_a_module_level_error_shows_its_source_line(run):
    res = run("import numpy as np\n\nTABLE = np.zeros(3).reshape(2, 2)\n\n"
              "def double(x):\n    return 2 * x\n")
    assert res.verdict is Verdict.RE
    assert "TABLE = np.zeros(3).reshape(2, 2)" in (res.message or "")
    assert "ValueError: cannot reshape" in (res.message or "")


def test_cross_attention_swapped_is_named_from_where_it_fails(sandbox):
    package = load_package(REPO / "problems" / "decoder-block")
    code = (FIXTURES.parent / "errors" / "decoder_block_cross_attention_swapped.py").read_text()
    res = judge(package, code, sandbox)
    assert res.verdict is Verdict.RE
    first = res.diagnosis[0]
    assert (first.kind, first.title) == ("error", "The target and source sequences are mixed up")
    failing = [t.name for t in res.tests if t.verdict is Verdict.RE]
    assert first.tests == failing and len(failing) < len(res.tests)
    assert "T_src" in first.detail and "T_tgt" in first.detail


def _case(rows: list[tuple[int, int, Verdict, str]]) -> Case:
    """Tests with sizes a and b, each with a verdict and a message."""
    package = load_package(FIXTURES / "double")
    specs = [Spec(name=f"t{i}", kind="hidden", seed=i, params={"a": a, "b": b, "c": 5})
             for i, (a, b, _, _) in enumerate(rows)]
    results = [TestResult(f"t{i}", v, message=m) for i, (_, _, v, m) in enumerate(rows)]
    result = JudgeResult(Verdict.RE, results)
    return Case(package, specs, [], [], result, Tolerance(atol=1e-4, rtol=1e-4), None)


def _err(a: int, b: int) -> str:
    return f"ValueError: Incompatible shapes for broadcasting: shapes=[(2, {a}), (2, {b})]"


def test_an_error_only_where_two_sizes_differ_is_read_as_their_mix_up():
    found = size_mixups(_case([(3, 4, Verdict.RE, _err(3, 4)), (6, 6, Verdict.WA, "off"),
                               (7, 4, Verdict.RE, _err(7, 4)), (1, 4, Verdict.AC, "")]))
    assert [(f.kind, f.title, f.tests) for f in found] == [
        ("error", "An error exactly where a and b differ", ["t0", "t2"])]
    assert "(2, a) and (2, b)" in found[0].detail


@pytest.mark.parametrize("rows", [
    # The error does not quote the sizes: nothing says they are involved.
    [(3, 4, Verdict.RE, "ValueError: no"), (6, 6, Verdict.AC, ""),
     (7, 4, Verdict.RE, "ValueError: x")],
    # It fails where they are equal too: something else.
    [(3, 4, Verdict.RE, _err(3, 4)), (6, 6, Verdict.RE, _err(6, 6)), (2, 2, Verdict.AC, "")],
    # It fails everywhere: nothing to contrast.
    [(3, 4, Verdict.RE, _err(3, 4)), (7, 4, Verdict.RE, _err(7, 4))],
    # It runs where they differ (neither is 1): not a mix-up of these two.
    [(3, 4, Verdict.RE, _err(3, 4)), (7, 4, Verdict.AC, ""), (6, 6, Verdict.AC, "")],
    # A crash or a limit is not an exception that quotes shapes.
    [(3, 4, Verdict.RE, "killed by signal 11 (3, 4)"), (6, 6, Verdict.AC, "")],
])
def test_no_mix_up_is_named_without_the_evidence(rows):
    assert size_mixups(_case(rows)) == []


def test_size_mixups_must_name_integer_sizes_of_every_test(tmp_path):
    pkg = tmp_path / "double"
    shutil.copytree(FIXTURES / "double", pkg)
    with (pkg / "problem.toml").open("a") as f:
        f.write('\n[[size_mixups]]\nsizes = ["n", "rows"]\ntitle = "t"\ndetail = "d"\n')
    with pytest.raises(PackageError, match="'rows' is not an integer parameter"):
        load_package(pkg)
