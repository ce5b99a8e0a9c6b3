from __future__ import annotations

from judge.verdicts import PRECEDENCE, TestResult, Verdict, aggregate, worst


def _t(v):
    return TestResult("t", v)


def test_precedence_is_total_and_fixed():
    assert set(PRECEDENCE) == set(Verdict)
    assert worst([Verdict.WA, Verdict.TLE, Verdict.AC]) is Verdict.TLE
    assert worst([Verdict.RE, Verdict.WA]) is Verdict.RE


def test_aggregate_rules():
    assert aggregate([_t(Verdict.AC), _t(Verdict.AC)]).verdict is Verdict.AC
    assert aggregate([_t(Verdict.AC), _t(Verdict.WA)]).verdict is Verdict.WA
    assert aggregate([_t(Verdict.TLE), _t(None)]).verdict is Verdict.TLE
    assert aggregate([_t(None)], compile_error="x").verdict is Verdict.CE
    assert aggregate([_t(Verdict.AC)], internal_error="x").verdict is Verdict.IE
    # Never an Accepted with tests that did not run, nor a verdict from nothing.
    assert aggregate([_t(Verdict.AC), _t(None)]).verdict is Verdict.IE
    assert aggregate([_t(None)]).verdict is Verdict.IE


def test_result_shape_matches_the_api():
    d = aggregate([_t(Verdict.AC), _t(Verdict.WA)]).to_dict()
    assert d["verdict"] == "WA"
    assert d["score"] == {"passed": 1, "total": 2}
    assert set(d["tests"][0]) >= {"name", "verdict", "time_ms", "max_abs_err", "max_rel_err",
                                  "mismatches", "message"}
