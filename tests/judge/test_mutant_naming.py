"""Wrong answers named by the reference's mutants, and notes on accepted structures.

The matching rules on made-up outcomes first; then, per problem (slow: every mutant runs on
every test in the trusted process), every killed mutant submitted as a learner would is named
by its title, the same mistake made in an accepted submission of another framework is named
by the reference mutant's title, and no accepted solution comes near a killed mutant; last,
the note on an accepted Flax encoder without biases, judged in the real sandbox."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from judge.diagnosis import diagnose as diagnose_module
from judge.diagnosis.mistakes import distance, wrong
from judge.diagnosis.mutant_names import CLOSE, Seen, _fits, name_by_mutants, same_way
from judge.diagnosis.notes import compare
from judge.mutants import Mutant, mutants
from judge.mutants.residual import RESIDUAL_DROPPED
from judge.mutants.wiring import SLOTS_SWAPPED
from judge.package import Package, Tolerance, load_package
from judge.prepared import prepare
from judge.trusted.known_mistakes import mutant_bank
from judge.trusted.mutant_outputs import Failure, MutantRun, Outcome, mutant_outputs
from judge.verdicts import Finding, JudgeResult, TestResult, Verdict

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent / "accepted_styles"
TOL = Tolerance(atol=1e-4, rtol=1e-4)
WANT = np.array([1.0, 2.0, 3.0])


def _run(title_op: object, site: str, outcomes: list[Outcome], source: str = "") -> MutantRun:
    mutant = Mutant(title_op, site, 1, source or f"# {site}")  # type: ignore[arg-type]
    return MutantRun(mutant, outcomes)


def _seen(verdicts: list[tuple[Verdict, np.ndarray | None, str]]) -> list[tuple[int, Seen]]:
    return [(i, Seen(f"t{i}", v, out, WANT, message, frozenset({4, 5, 16})))
            for i, (v, out, message) in enumerate(verdicts)]


# --- the matching rules ------------------------------------------------------------------------


def test_a_wrong_answer_is_named_by_the_one_mutant_it_behaves_like():
    off = WANT + 1.0
    runs = [_run(RESIDUAL_DROPPED, "the cross-attention", [WANT, off]),
            _run(SLOTS_SWAPPED, "the self-attention", [off, off])]
    found = name_by_mutants(runs, _seen([(Verdict.AC, WANT, ""), (Verdict.WA, off, "")]), TOL)
    assert [f.title for f in found] == ["The residual around the cross-attention is missing"]
    assert found[0].kind == "known-mistake" and found[0].tests == ["t1"]
    assert found[0].detail == RESIDUAL_DROPPED.detail


@pytest.mark.parametrize("case", ["mutant passes where it failed", "just inside the tolerance",
                                  "two titles fit", "a limit", "accepted"])
def test_nothing_rather_than_a_guess(case: str):
    off = WANT + 1.0
    runs = [_run(RESIDUAL_DROPPED, "the cross-attention", [off, off])]
    seen = [(Verdict.WA, off, ""), (Verdict.WA, off, "")]
    if case == "mutant passes where it failed":
        runs = [_run(RESIDUAL_DROPPED, "the cross-attention", [WANT, off])]
    elif case == "just inside the tolerance":
        bound = TOL.atol + TOL.rtol * np.abs(off)
        seen[1] = (Verdict.WA, off + 0.9 * bound, "")
        assert distance(seen[1][1], off, TOL) is not None  # a match by the packaged rule
    elif case == "two titles fit":
        runs.append(_run(SLOTS_SWAPPED, "the cross-attention", [off, off]))
    elif case == "a limit":
        seen[0] = (Verdict.TLE, None, "")
    else:
        seen = [(Verdict.AC, WANT, ""), (Verdict.AC, WANT, "")]
    assert name_by_mutants(runs, _seen(seen), TOL) == []
    # The same mutant twice (two sites with one title) is still one name.
    if case == "two titles fit":
        twice = [runs[0], _run(RESIDUAL_DROPPED, "the cross-attention", [off, off], "# again")]
        assert len(name_by_mutants(twice, _seen(seen), TOL)) == 1


def test_a_runtime_error_is_named_when_the_mutant_raises_it_the_same_way():
    numpy = Failure("ValueError", "operands could not be broadcast together with shapes "
                                  "(2,4,16) (5,16)")
    runs = [_run(RESIDUAL_DROPPED, "the decoder input", [WANT, numpy])]
    for message in ["ValueError: operands could not be broadcast together with shapes "
                    "(2,4,16) (1,5,16)",  # the same error (a broadcast's leading 1 aside)
                    "TypeError: add got incompatible shapes for broadcasting: (2, 4, 16), "
                    "(5, 16).",  # JAX's words for it
                    "RuntimeError: The size of tensor a (4) must match the size of tensor b "
                    "(5) at non-singleton dimension 1"]:  # PyTorch's
        seen = _seen([(Verdict.AC, WANT, ""), (Verdict.RE, None, message)])
        assert len(name_by_mutants(runs, seen, TOL)) == 1, message
    for message in ["ValueError: too many values to unpack (expected 3)",
                    "ValueError: operands could not be broadcast together with shapes "
                    "(2,4,16) (2,5,16)",  # another clash: the shapes say so
                    "ValueError: operands could not be broadcast together",  # no shapes
                    "TypeError: add got incompatible shapes for broadcasting: (2, 4, 16), "
                    "(2, 5, 16).",
                    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x3 and 8x2)",
                    "IndexError: index out of range in self"]:
        seen = _seen([(Verdict.AC, WANT, ""), (Verdict.RE, None, message)])
        assert name_by_mutants(runs, seen, TOL) == [], message
    assert not same_way("the process was killed by SIGKILL", numpy, frozenset({4, 5}))


def test_an_output_of_another_size_is_matched_by_its_size():
    """T_tgt == 1 broadcasts against T_src positions: no error, an output of another size,
    of which the judge keeps only the size."""
    numpy = Failure("ValueError", "operands could not be broadcast together with shapes "
                                  "(2,4,16) (5,16)")
    runs = [_run(RESIDUAL_DROPPED, "the decoder input", [np.zeros(5), numpy])]
    said = "the output has {} elements, the expected output has 3"
    message = "ValueError: operands could not be broadcast together with shapes (2,4,16) (5,16)"
    for size, named in ((5, True), (6, False)):
        seen = _seen([(Verdict.WA, None, said.format(size)), (Verdict.RE, None, message)])
        assert bool(name_by_mutants(runs, seen, TOL)) is named


def test_packaged_mistakes_keep_precedence(monkeypatch: pytest.MonkeyPatch):
    packaged = Finding("known-mistake", "A packaged name", "its words", ["t1"])
    mutant = Finding("known-mistake", "A mutant's name", "its words", ["t1"])
    monkeypatch.setattr(diagnose_module, "mutant_mistakes", lambda case: [mutant])
    monkeypatch.setattr(diagnose_module, "packaged_mistakes", lambda case: [packaged])
    case = object()
    assert diagnose_module.known_mistakes(case) == [packaged]  # type: ignore[arg-type]
    monkeypatch.setattr(diagnose_module, "packaged_mistakes", lambda case: [])
    assert diagnose_module.known_mistakes(case) == [mutant]  # type: ignore[arg-type]


# --- per problem: every killed mutant named ------------------------------------------------------

SLUGS = ["encoder-block", "decoder-block-preln", "decoder-block", "encoder-decoder"]
# Another framework the problem allows, with an accepted submission written in it.
# (jitted JAX files are left out: each of their mutants compiles for every test's shapes.)
OTHER = {"decoder-block": ["torch_sdpa.py", "decoder_block__torch_einsum.py"],
         "encoder-decoder": ["torch_sdpa.py", "encoder_decoder__jax_loops.py"]}


def _learner_seen(package: Package, outcomes: list[Outcome]) -> list[tuple[int, Seen]]:
    """How the judge sees a submission with these outcomes on every test of the package."""
    expected = prepare(package, False).expected
    out = []
    for i, (t, o, e) in enumerate(zip(package.tests, outcomes, expected, strict=True)):
        sizes = frozenset(v for v in t.params.values()
                          if isinstance(v, int) and not isinstance(v, bool))
        if isinstance(o, Failure):
            out.append((i, Seen(t.name, Verdict.RE, None, e, str(o), sizes)))
        elif o.size != e.size:  # the judge keeps no output of another size, only its size
            message = f"the output has {o.size} elements, the expected output has {e.size}"
            out.append((i, Seen(t.name, Verdict.WA, None, e, message, sizes)))
        else:
            verdict = Verdict.WA if wrong(o, e, package.manifest.tolerance) else Verdict.AC
            out.append((i, Seen(t.name, verdict, o, e, "", sizes)))
    return out


def _killed(package: Package, runs: list[MutantRun]) -> list[MutantRun]:
    return [r for r in runs if any(s.verdict is not Verdict.AC
                                   for _, s in _learner_seen(package, r.outcomes))]


def _as_learner(package: Package, sources: list[tuple[Mutant, str]]) -> list[MutantRun]:
    """Learner files run like mutants, in one trusted process (outcomes cached by content)."""
    wrapped = [Mutant(m.operator, m.site, m.line, text) for m, text in sources]
    return mutant_outputs(package, package.tests, mutants=wrapped)


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_every_killed_mutant_submitted_as_a_learner_would_is_named_by_its_title(slug: str):
    package = load_package(ROOT / "problems" / slug)
    runs = mutant_bank(package, wait=True)
    assert runs is not None
    killed = _killed(package, runs)
    assert len(killed) >= 10  # Flax problems: biases and LayerNorm affines survive (at init)
    # A learner's file with the mistake behaves as the mutant does (checked on a sample:
    # each file is an eager model run on every test), so every killed mutant's own outcomes
    # are what a learner making its mistake shows the judge.
    sample = killed[::max(1, len(killed) // 3)][:3]
    learners = _as_learner(package, [(r.mutant, ast.unparse(ast.parse(r.mutant.source)))
                                     for r in sample])
    for r, learner in zip(sample, learners, strict=True):
        for mine, theirs in zip(learner.outcomes, r.outcomes, strict=True):
            assert (mine == theirs if isinstance(mine, Failure)
                    else np.array_equal(mine, theirs, equal_nan=True)), r.mutant.title
    missed = []
    for r in killed:
        found = name_by_mutants(runs, _learner_seen(package, r.outcomes),
                                package.manifest.tolerance)
        if [f.title.lower() for f in found] != [r.mutant.title.lower()]:
            missed.append((r.mutant.title, [f.title for f in found]))
    print(f"{slug}: {len(killed) - len(missed)} of {len(killed)} killed mutants named")
    assert not missed, missed


@pytest.mark.slow
@pytest.mark.parametrize("slug", sorted(OTHER))
def test_the_same_mistake_in_another_framework_is_named_by_the_reference_mutant(slug: str):
    """The operators applied to accepted PyTorch and JAX submissions. Where a reference
    mutant of the same operator does what the learner's mutant does (one LayerNorm's scale
    dropped is not the reference's mutant that drops every LayerNorm's), the finding is that
    mutant's title; a mutant of another operator is never the name."""
    package = load_package(ROOT / "problems" / slug)
    tol = package.manifest.tolerance
    runs = mutant_bank(package, wait=True)
    assert runs is not None
    killed = _killed(package, runs)
    operators = {r.mutant.operator.name for r in killed}
    same = named = 0
    wrongly = []
    for file in OTHER[slug]:
        path = package.path / "submissions" / "accepted" / file
        source = (path if path.is_file() else HERE / file).read_text()
        theirs = [m for m in mutants(source) if m.operator.name in operators]
        for r in _killed(package, _as_learner(package, [(m, m.source) for m in theirs])):
            seen = _learner_seen(package, r.outcomes)
            fits = {k.mutant.title.lower(): k.mutant.operator.name for k in killed
                    if _fits(k, seen, tol) is not None}
            found = [f.title.lower() for f in name_by_mutants(runs, seen, tol)]
            if found and fits[found[0]] != r.mutant.operator.name:
                wrongly.append((file, r.mutant.operator.name, found[0]))
            if r.mutant.operator.name in fits.values() and len(fits) == 1:
                same += 1
                named += bool(found)
    print(f"{slug}: {named} of {same} mutants of other frameworks with a reference mutant "
          "that does the same named")
    assert not wrongly, wrongly
    assert same >= 20 and named == same


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_no_accepted_solution_comes_near_a_killed_mutant(slug: str):
    """Packaged accepted submissions and ones in other styles (tests/judge/accepted_styles):
    each passes every test, and on every test a killed mutant fails, each is further from
    the mutant than a name needs."""
    package = load_package(ROOT / "problems" / slug)
    runs = mutant_bank(package, wait=True)
    assert runs is not None
    files = sorted((package.path / "submissions" / "accepted").glob("*.py"))
    files += sorted(HERE.glob(f"{slug.replace('-', '_')}__*.py"))
    accepted = _as_learner(package, [(runs[0].mutant, f.read_text()) for f in files])
    killed = _killed(package, runs)
    for file, solution in zip(files, accepted, strict=True):
        seen = _learner_seen(package, solution.outcomes)
        assert all(s.verdict is Verdict.AC for _, s in seen), file.name
        for r in killed:
            failing = [(i, s) for i, s in seen if not isinstance(r.outcomes[i], Failure)
                       and wrong(r.outcomes[i], s.expected, package.manifest.tolerance)]
            near = [s.name for i, s in failing if (d := distance(
                s.output, r.outcomes[i], package.manifest.tolerance)) is not None and d <= CLOSE]
            assert not near or len(near) < len(failing), (file.name, r.mutant.title)
    assert len(files) >= 4


# --- notes on accepted structures ---------------------------------------------------------------

REFERENCE_TREE = [("params/LayerNorm_0/scale", (8,)), ("params/LayerNorm_0/bias", (8,)),
                  ("params/Dense_0/kernel", (8, 16)), ("params/Dense_0/bias", (16,)),
                  ("params/LayerNorm_1/scale", (8,)), ("params/LayerNorm_1/bias", (8,))]


def test_notes_name_what_the_tree_lacks():
    no_bias = [p for p in REFERENCE_TREE if p[0] != "params/Dense_0/bias"]
    assert [n.title for n in compare(no_bias, REFERENCE_TREE)] == [
        "Your layers have no biases where the statement's have"]
    no_scale = [p for p in REFERENCE_TREE if not p[0].endswith("LayerNorm_1/scale")]
    assert [n.title for n in compare(no_scale, REFERENCE_TREE)] == [
        "Your LayerNorms have no scale"]
    shared = REFERENCE_TREE[:4]
    note, = compare(shared, REFERENCE_TREE)
    assert "2 LayerNorms" in note.title or "has 2 LayerNorms" in note.detail
    assert "Flax starts" in note.detail and note.kind == "structure"
    assert compare(REFERENCE_TREE, REFERENCE_TREE) == []
    renamed = [(p.replace("Dense_0", "ffn_in"), s) for p, s in REFERENCE_TREE]
    assert compare(renamed, REFERENCE_TREE) == []  # names aside, nothing is missing


def test_notes_only_on_an_accepted_result():
    from judge.diagnosis.notes import structure_notes

    package = load_package(ROOT / "problems" / "encoder-block")
    tests = package.select(True)
    no_bias = [p for p in REFERENCE_TREE if not p[0].endswith("Dense_0/bias")]
    results = [TestResult(t.name, Verdict.AC, variables=no_bias) for t in tests]
    (note,) = structure_notes(package, tests, JudgeResult(Verdict.AC, results))
    # The package's hidden tests redraw the parameters: they will see it (test_redraw.py).
    assert "The hidden tests that redraw the parameters" in note.detail
    assert structure_notes(package, tests, JudgeResult(Verdict.WA, results)) == []
    numpy_problem = load_package(ROOT / "problems" / "decoder-block")
    assert structure_notes(numpy_problem, tests, JudgeResult(Verdict.AC, results)) == []
