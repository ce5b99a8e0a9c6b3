"""The diagnosis a result carries, and the environment that judged it (real sandbox, on the
fixture problem `double`)."""

from __future__ import annotations

from judge.diagnosis.diagnose import SOURCES, Case, diagnose
from judge.engine import prepare
from judge.verdicts import Verdict


def test_a_known_mistake_is_named_first_and_the_numbers_follow(run):
    res = run("def double(x):\n    return x + 1\n")
    assert res.verdict is Verdict.WA
    first = res.diagnosis[0]
    assert (first.kind, first.title) == ("known-mistake", "Adds one instead of doubling")
    assert first.tests == [t.name for t in res.tests]
    d = res.to_dict()["diagnosis"][0]
    assert set(d) == {"kind", "title", "detail", "tests"}
    # Its cost is on record, as part of the whole.
    assert res.diagnosis_ms is not None and res.wall_ms is not None
    assert 0 < res.diagnosis_ms < res.wall_ms
    assert run("def double(x):\n    return 2 * x\n").diagnosis_ms is None


def test_generic_readings_become_numeric_findings_and_keep_their_messages(run):
    res = run("def double(x):\n    return 3 * x\n")
    assert res.verdict is Verdict.WA
    assert [(f.kind, f.title) for f in res.diagnosis] == [
        ("numeric", "The output is off by a constant factor")]
    assert all("times 1.5" in (t.message or "") for t in res.tests)
    res = run("import numpy as np\ndef double(x):\n    return np.full(x.size, np.nan)\n")
    assert res.diagnosis[0].kind == "numeric" and "NaN" in res.diagnosis[0].title
    res = run("def double(x):\n    return (2 * x).T\n")
    assert any("transposed" in f.title for f in res.diagnosis)


def test_no_finding_when_nothing_is_known(run):
    res = run("import numpy as np\ndef double(x):\n    return 2 * x + np.sin(x)\n")
    assert res.verdict is Verdict.WA and res.diagnosis == []


def test_accepted_and_compile_errors_get_no_diagnosis(run):
    assert run("def double(x):\n    return 2 * x\n").diagnosis == []
    res = run("def double(x) return\n")
    assert res.verdict is Verdict.CE and res.diagnosis == []


def test_a_runtime_error_is_not_taken_for_a_known_mistake(run):
    code = ("def double(x):\n    if x.shape[0] == 4:\n        raise ValueError('no')\n"
            "    return x + 1\n")
    res = run(code)
    assert res.verdict is Verdict.RE
    assert all(f.kind != "known-mistake" for f in res.diagnosis)


def test_every_result_says_what_judged_it(run):
    for code in ("def double(x):\n    return 2 * x\n", "def double(x) return\n"):
        env = run(code).to_dict()["environment"]
        assert set(env) == {"problem_version", "judge_version", "libraries", "sandbox", "limits"}
        assert env["limits"]["compile_budget_ms"] == 60_000
        assert len(env["problem_version"]) == 64 and env["sandbox"] == "bwrap"
        assert env["libraries"]["numpy"][0].isdigit()


def test_a_failing_source_costs_its_findings_only(run, double, monkeypatch):
    res = run("def double(x):\n    return x + 1\n")
    prepared = prepare(double, False)

    def broken(case: Case) -> list:
        raise RuntimeError("boom")

    monkeypatch.setattr("judge.diagnosis.diagnose.SOURCES", [broken, *SOURCES])
    from judge.package import Tolerance

    case = Case(double, prepared.tests, prepared.expected, prepared.shapes, res,
                Tolerance(atol=1e-6, rtol=1e-6), sandbox=None)
    assert diagnose(case)[0].title == "Adds one instead of doubling"
