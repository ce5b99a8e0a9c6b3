"""The known-mistake bank of every bundled problem, judged for real in the sandbox.

Classic mistakes written differently from the packaged ones (another framework, another way of
writing the same error: tests/fixtures/mistakes/) are named by the packaged mistake they are.
That every packaged wrong answer, stripped of the comment that names it, is named first by its
own title, and that no accepted solution gets a finding or is close enough to a known mistake
to be taken for it, is part of validating a package (tests/problems/test_bundled_packages.py).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from judge.engine import judge
from judge.package import Package, load_package
from judge.sandbox import SandboxConfig, open_sandbox
from judge.verdicts import Finding, JudgeResult
from tests.conftest import FIXTURES, REPO

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
    sandbox = open_sandbox(SandboxConfig())
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda code: judge(package, code, sandbox), codes.values())
        return dict(zip(codes, results, strict=True))


def _titles(findings: list[Finding]) -> list[str]:
    return [f"{f.kind}: {f.title}" for f in findings]


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
