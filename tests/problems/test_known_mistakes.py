"""The known-mistake bank of every bundled problem, judged for real in the sandbox.

Every packaged wrong answer, stripped of the comment that names it, is named first by its own
title; classic mistakes written differently from the packaged ones (another framework, another
way of writing the same error: tests/fixtures/mistakes/) are named too; accepted solutions
never get a finding, and none of them is close enough to any known mistake to be taken for it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from judge.compare import Tolerance
from judge.engine import judge, prepare
from judge.findings import Finding
from judge.mistakes import Observed, bank, name_mistakes
from judge.package import Package, discover, load_package
from judge.sandbox import make_sandbox
from judge.verdicts import JudgeResult, Verdict
from tests.conftest import FIXTURES, REPO

PACKAGES = discover(REPO / "problems")
UNSEEN = FIXTURES.parent / "mistakes"

# Each unseen variant and the packaged mistake it is (file names in wrong_answer/).
VARIANTS: dict[str, dict[str, str]] = {
    "decoder-block": {
        "torch_tgt_is_causal_only.py": "no_causal_mask.py",
        "torch_sdpa_no_causal.py": "no_causal_mask.py",
        "torch_var_unbiased.py": "unbiased_variance.py",
        "torch_sdpa_scale_sqrt_D.py": "scale_by_sqrt_D.py",
    },
    "encoder-decoder": {
        "torch_erf_gelu.py": "erf_gelu.py",
        "torch_relu.py": "relu_instead_of_gelu.py",
        "torch_never_causal.py": "no_causal_mask.py",
        "torch_eps_1e6.py": "ln_eps_1e-6.py",
    },
    "encoder-block": {
        "setup_post_ln.py": "post_ln.py",
        "setup_jax_gelu.py": "gelu_instead_of_relu.py",
        "setup_eps_1e5.py": "layernorm_eps_1e5.py",
    },
    "decoder-block-preln": {
        "compact_mask_none.py": "no_causal_mask.py",
        "compact_eps_1e5.py": "layernorm_eps_1e5.py",
    },
}


def _judge_all(package: Package, codes: dict[str, str]) -> dict[str, JudgeResult]:
    sandbox = make_sandbox()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda code: judge(package, code, sandbox), codes.values())
        return dict(zip(codes, results, strict=True))


def _titles(findings: list[Finding]) -> list[str]:
    return [f"{f.kind}: {f.title}" for f in findings]


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("path", PACKAGES, ids=[p.name for p in PACKAGES])
def test_every_packaged_wrong_answer_is_named_first_by_its_own_title(path: Path) -> None:
    package = load_package(path)
    files = package.wrong_answer_files()
    assert len(files) >= 8
    codes = {f.name: f.read_text().split("\n", 1)[1] for f in files}  # naming line removed
    assert all(not c.startswith("#") for c in codes.values())
    results = _judge_all(package, codes)
    wrong: list[str] = []
    for name, res in results.items():
        own = package.mistakes[name].title
        first = res.diagnosis[0] if res.diagnosis else None
        if res.verdict is not Verdict.WA or first is None or first.kind != "known-mistake" \
                or first.title != own:
            wrong.append(f"{name} ({res.verdict.value}): want {own!r} first, got "
                         f"{_titles(res.diagnosis)}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("slug", sorted(VARIANTS))
def test_unseen_variants_of_classic_mistakes_are_named(slug: str) -> None:
    package = load_package(REPO / "problems" / slug)
    folder = UNSEEN / slug
    assert sorted(f.name for f in folder.glob("*.py")) == sorted(VARIANTS[slug])
    results = _judge_all(package, {f: (folder / f).read_text() for f in VARIANTS[slug]})
    wrong: list[str] = []
    for name, res in results.items():
        own = package.mistakes[VARIANTS[slug][name]].title
        first = res.diagnosis[0] if res.diagnosis else None
        if first is None or first.kind != "known-mistake" or first.title != own:
            wrong.append(f"{name} ({res.verdict.value}): want {own!r} first, got "
                         f"{_titles(res.diagnosis)}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("path", PACKAGES, ids=[p.name for p in PACKAGES])
def test_accepted_solutions_get_no_finding_and_are_no_known_mistake(path: Path) -> None:
    """Judged for real: AC and no finding. Then, harder: even if every test had failed, no
    known mistake would be named from an accepted solution's outputs (they are all further
    from every mistake than the tolerance wherever the mistake is wrong)."""
    package = load_package(path)
    files = sorted((path / "submissions" / "accepted").glob("*.py"))
    codes = {f.name: f.read_text() for f in files}
    codes["reference"] = package.reference_source
    results = _judge_all(package, codes)
    prepared = prepare(package, False)
    known = bank(package, prepared.tests)
    tol = Tolerance(package.manifest.tolerance.atol, package.manifest.tolerance.rtol)
    for name, res in results.items():
        assert res.verdict is Verdict.AC, name
        assert res.diagnosis == [], (name, _titles(res.diagnosis))
        observed = [Observed(t.name, True, t.output, want)
                    for t, want in zip(res.tests, prepared.expected, strict=True)]
        assert all(o.output is not None for o in observed)
        assert name_mistakes(known, observed, tol) == [], name
