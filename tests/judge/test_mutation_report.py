"""The mutation report on a small NumPy problem (a normalised self-attention): each status,
the score, the search for killing inputs, the float16 check, the margin, the JSON shape, the
accepted mutants of problem.toml, and validation failing on an unaccepted survivor."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from judge.mutants import mutants
from judge.mutants.render import render
from judge.mutants.report import MutationReport, mutation_report
from judge.package import PackageError, load_package
from judge.trusted.mutant_outputs import Failure, mutant_outputs, source_outputs
from tests.conftest import FIXTURES

FIXTURE = FIXTURES.parent / "mutation" / "norm-attention"


def _copy(tmp_path: Path, accepted: str = "") -> Path:
    dest = tmp_path / "norm-attention"
    shutil.copytree(FIXTURE, dest)
    if accepted:
        with (dest / "problem.toml").open("a") as f:
            f.write(accepted)
    return dest


def _id(operator: str) -> str:
    source = (FIXTURE / "reference.py").read_text()
    return next(m.id for m in mutants(source) if m.operator.name == operator)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> MutationReport:
    """The fixture with the epsilon-outside-the-root mutant accepted, and a stale entry."""
    path = _copy(tmp_path_factory.mktemp("p"), f"""
[[mutants.accepted]]
id = "{_id('layernorm-epsilon-outside-sqrt')}"
reason = "the tests need not see it"

[[mutants.accepted]]
id = "0123456789abcdef"
reason = "a mutant the reference no longer has"
""")
    return mutation_report(load_package(path))


def test_each_mutant_gets_its_status(report: MutationReport) -> None:
    status = {r.mutant.operator.name: r for r in report.results}
    # Killed by the tests, each by the tests it fails.
    assert status["softmax-axis"].status == "killed"
    assert status["layernorm-offset-dropped"].killed_by == ["sample-1", "hidden-1",
                                                            "one-feature-tiny"]
    # With one feature the gain multiplies zero: only the wider tests see it dropped.
    assert status["layernorm-scale-dropped"].killed_by == ["sample-1", "hidden-1"]
    # Equal in exact arithmetic: within rounding on the tests and the generated inputs.
    eq = status["softmax-without-max"]
    assert eq.status == "equivalent" and "generated inputs" in eq.reason
    # Declared in problem.toml: its reason is the report's.
    acc = status["layernorm-epsilon-outside-sqrt"]
    assert (acc.status, acc.reason) == ("accepted", "the tests need not see it")
    # The epsilon shows only on tiny inputs with more than one feature: no test has both,
    # and the search finds them (sample-1's shape at the tiny test's scale).
    alive = status["layernorm-epsilon-changed"]
    assert alive.status == "survived" and not alive.killed_by
    assert any(k.spec.params == {"n": 3, "d": 4, "scale": 0.001} for k in alive.kills)
    assert [c.spec.params["scale"] for c in report.suggested] == [0.001]
    assert report.stale == ["0123456789abcdef"]
    assert not report.ok


def test_score_tolerance_and_margin(report: MutationReport) -> None:
    killed, survived = report.count("killed"), report.count("survived")
    assert (killed, survived) == (5, 1)
    assert report.score == pytest.approx(5 / 6)
    # The reference in float16 misses the tolerance (a NumPy reference: no bfloat16).
    assert (report.low.dtype, report.low.verdict) == ("float16", "WA")
    assert report.low.worst > 1
    # The closest kill: its worst error over the tolerance, no other killed mutant's smaller.
    worst = [r.worst for r in report.results if r.status == "killed"]
    assert report.margin == min(worst) and report.margin > 1


def test_the_json_shape(report: MutationReport) -> None:
    out = report.to_json()
    assert set(out) == {"problem", "score", "mutants", "float16", "margin"}
    assert out["problem"] == "norm-attention" and out["float16"] == {"verdict": "WA"}
    assert len(out["mutants"]) == len(report.results)
    for m in out["mutants"]:
        assert set(m) == {"id", "operator", "site", "title", "status", "killed_by", "reason"}
        assert m["status"] in {"killed", "survived", "equivalent", "accepted"}
        assert (m["status"] == "killed") == bool(m["killed_by"])
    assert {m["status"] for m in out["mutants"]} == {"killed", "survived", "equivalent",
                                                     "accepted"}
    text = render(report)
    assert "SURVIVED" in text and "scale = 0.001" in text and "0123456789abcdef" in text


def test_outputs_and_errors_of_trusted_sources(tmp_path: Path) -> None:
    package = load_package(FIXTURE)
    tests = package.tests[:2]
    raising = "def attend(x, **_):\n    raise ValueError(f'no {x.shape[0]} rows')\n"
    out = source_outputs(package, raising, tests)
    assert out == [Failure("ValueError", "no 3 rows"), Failure("ValueError", "no 5 rows")]
    chosen = [m for m in mutants(package.reference_source)
              if m.operator.name == "softmax-axis"]
    (run,) = mutant_outputs(package, tests, mutants=chosen)
    first = run.outcomes[0]
    assert run.mutant is chosen[0] and isinstance(first, np.ndarray)
    assert first.dtype == np.float64 and first.shape == (3 * 4,)


def test_the_manifest_checks_accepted_mutants(tmp_path: Path) -> None:
    entry = '\n[[mutants.accepted]]\nid = "{}"\nreason = "{}"\n'
    for bad in (entry.format("not-an-id", "why"), entry.format("0123456789abcdef", ""),
                entry.format("0123456789abcdef", "why") * 2):
        with pytest.raises(PackageError, match="mutants"):
            load_package(_copy(tmp_path / str(len(list(tmp_path.iterdir()))), bad))


@pytest.mark.sandbox
def test_validation_fails_while_a_mutant_survives_unaccepted(tmp_path: Path) -> None:
    from judge.sandbox import SandboxConfig, open_sandbox
    from judge.validate import validate

    survivor = _id("layernorm-epsilon-changed")
    path = _copy(tmp_path, f"""
[[mutants.accepted]]
id = "{_id('layernorm-epsilon-outside-sqrt')}"
reason = "the tests need not see it"
""")
    report = validate(path, open_sandbox(SandboxConfig()), parallel=1)
    checks = {c.what: c for c in report.checks}
    mutation = checks["every mutant killed, equivalent or accepted"]
    assert not mutation.ok and survivor in mutation.detail and not report.ok
    assert checks["float16 reference fails the tolerance"].ok
    assert checks["reference"].ok  # the rest of validation still ran


def test_a_reference_that_cannot_run_in_float16_proves_nothing(tmp_path: Path) -> None:
    from judge.mutants.report import low_precision
    from judge.trusted.expected import expected_outputs

    path = _copy(tmp_path)
    ref = path / "reference.py"
    ref.write_text(ref.read_text().replace(
        "    # site: the attention\n",
        "    # site: the attention\n    assert x.dtype == np.float32, f'{x.dtype} inputs'\n"))
    package = load_package(path)
    low = low_precision(package, expected_outputs(package, package.tests))
    assert (low.verdict, low.test, low.error) == ("RE", "sample-1",
                                                  "AssertionError: float16 inputs")
