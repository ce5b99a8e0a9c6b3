"""The one guard of the sandbox's patches of JAX's and Flax's internals
(judge/inside/library_patches.py): it installs them only under the releases they were read
against and when the preparation message allows them; with them off, a sandbox judges exactly
as with them on, output for output, bit for bit, and no sandbox is forked warm."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any

import flax
import jax
import jaxlib
import pytest
from flax.core import scope as flax_scope
from flax.linen import dtypes as flax_dtypes
from flax.linen import module as flax_module
from jax._src import compiler
from jax._src.interpreters import mlir

from judge.engine import judge
from judge.inside import runner_flax
from judge.inside.library_patches import (
    FLAX_RELEASES,
    JAX_RELEASES,
    install_library_patches,
)
from judge.kinds import kind_for
from judge.package import Package, load_package
from judge.sandbox import BwrapConfig, BwrapSandbox, base, xla_cache
from judge.sandbox.bwrap.forkserver import CHANNEL_FD
from judge.verdicts import JudgeResult, Verdict
from tests.conftest import REPO

# What the patches replace, by owner and name.
PATCHED = [(jax, "eval_shape"), (flax_module.Module, "_register_submodules"),
           (flax_scope, "_fold_in_static"), (flax_dtypes, "jnp")]
SHORTCUTS = [runner_flax.param_shapes, runner_flax.plain_attributes,
             runner_flax.static_fold_in, runner_flax.plain_promotion]


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Whatever the guard installs in this process is put back afterwards."""
    for owner, name in PATCHED:
        monkeypatch.setattr(owner, name, getattr(owner, name))
    for shortcut in SHORTCUTS:
        monkeypatch.setattr(shortcut, "installed", False)
    yield


def _current() -> list[Any]:
    return [getattr(owner, name) for owner, name in PATCHED]


def test_the_releases_are_the_pinned_ones():
    pinned = (REPO / "pyproject.toml").read_text()
    for name, releases in (("jax", JAX_RELEASES), ("jaxlib", JAX_RELEASES),
                           ("flax", FLAX_RELEASES)):
        found = re.search(rf'"{name}==([^"]+)"', pinned)
        assert found and found.group(1) in releases, name
    assert jax.__version__ in JAX_RELEASES and jaxlib.__version__ in JAX_RELEASES
    assert flax.__version__ in FLAX_RELEASES


def test_the_guard_installs_them_under_the_pinned_releases(restored):
    before = _current()
    patches = install_library_patches({"library_patches": True})
    assert patches.active
    assert all(now is not then for now, then in zip(_current(), before, strict=True))
    with patches.warm_up():
        assert mlir.make_ir_context() is mlir.make_ir_context()
    assert mlir.make_ir_context() is not mlir.make_ir_context()


@pytest.mark.parametrize("module", [jax, jaxlib, flax], ids=lambda m: m.__name__)
def test_the_guard_refuses_under_another_release(restored, monkeypatch, module):
    monkeypatch.setattr(module, "__version__", "0.0.1")
    _refused({})


def test_the_guard_refuses_when_the_message_says_off(restored):
    _refused({"library_patches": False})


def _refused(prep: dict) -> None:
    before = _current()
    patches = install_library_patches(prep)
    assert not patches.active
    assert _current() == before and not any(s.installed for s in SHORTCUTS)
    compile_or_get_cached = compiler.compile_or_get_cached
    patches.hand_over_compiles(None, 75)
    assert compiler.compile_or_get_cached is compile_or_get_cached
    with patches.warm_up():
        assert mlir.make_ir_context() is not mlir.make_ir_context()


# With patches on and off, run in the real sandbox: output for output, bit for bit.

# A Flax solution and an eager-JAX one, each judged twice on the sample tests (this runs in
# every CI run).
ACCEPTED_FLAX = [REPO / "problems/encoder-block/submissions/accepted/compact_class.py"]
EAGER_JAX = REPO / "bench/solutions/decoder_block_jax_eager.py"


@pytest.fixture(scope="module")
def packages() -> dict[str, Package]:
    return {name: load_package(REPO / "problems" / name)
            for name in ("encoder-block", "decoder-block")}


@contextlib.contextmanager
def _sandbox(patches: bool) -> Iterator[BwrapSandbox]:
    # With the judge's compilation cache, as it judges: each fresh sandbox loads its warm-up's
    # executables rather than compiling them.
    cache = xla_cache.ensure_dir(xla_cache.default_root())
    sb = BwrapSandbox(BwrapConfig(library_patches=patches, xla_cache_dir=cache))
    if sb.fork_servers is None:
        sb.close()
        pytest.skip("the warm fork needs root and cgroups")
    try:
        yield sb
    finally:
        sb.close()


def _judged(sb: BwrapSandbox, package: Package, code: str,
            monkeypatch: pytest.MonkeyPatch) -> tuple[JudgeResult, dict]:
    """The result of the sample tests, and each one's output bytes and recorded variables,
    from the run that counted (the backend reruns a job a warm fork hands back itself)."""
    runs = []
    execute = sb.execute

    def recorded(*args: Any, **kwargs: Any) -> Any:
        raw = execute(*args, **kwargs)
        runs.append(raw)
        return raw

    monkeypatch.setattr(sb, "execute", recorded)
    res = judge(package, code, sb, samples_only=True, probes=False)
    counted = runs
    assert len(counted) == 1
    outputs = {f.header["test"]: (f.data, f.header.get("variables"))
               for f in counted[0].frames if f.ev == "result"}
    return res, outputs


# Says from inside the sandbox whether JAX's and Flax's functions are their own or the
# patches' (the module runs after the preparation, which installs them).
REPORTS_THE_PATCHES = '''
import jax as _jax
from flax.core import scope as _scope

print("PATCHED", ["/jax/" not in _jax.eval_shape.__code__.co_filename,
                  "/flax/" not in _scope._fold_in_static.__code__.co_filename])
'''


@pytest.mark.sandbox
def test_with_the_patches_off_the_outputs_are_the_same_bit_for_bit(packages, monkeypatch):
    cases = [(packages["encoder-block"], p) for p in ACCEPTED_FLAX]
    cases.append((packages["decoder-block"], EAGER_JAX))
    assert len(cases) >= 2
    judged: dict[bool, list[tuple[JudgeResult, dict]]] = {}
    for patches in (True, False):
        with _sandbox(patches) as sb:
            # The first also says whether the patches are there: its output is the same.
            judged[patches] = [_judged(sb, package, path.read_text()
                                       + (REPORTS_THE_PATCHES if i == 0 else ""), monkeypatch)
                               for i, (package, path) in enumerate(cases)]
            # On, the Flax and eager-JAX kinds are forked warm; off, never.
            assert (sb.fork_servers.forked_warm > 0) is patches  # type: ignore[union-attr]
        reported = judged[patches][0][0].stdout
        assert f"PATCHED {[patches, patches]}" in reported, reported
    for (package, path), (on, on_out), (off, off_out) in zip(cases, judged[True],
                                                              judged[False], strict=True):
        what = f"{package.slug}: {path.name}"
        assert on.verdict is off.verdict is Verdict.AC, (what, on.message, off.message)
        assert [t.verdict for t in on.tests] == [t.verdict for t in off.tests], what
        assert len(on_out) == len(package.samples), what
        assert on_out.keys() == off_out.keys(), what
        for test in on_out:
            assert on_out[test][0] == off_out[test][0], f"{what}: test {test}'s output"
            assert on_out[test][1] == off_out[test][1], f"{what}: test {test}'s variables"
        if package.slug == "encoder-block":
            assert all(variables for _, variables in on_out.values()), what


@pytest.mark.sandbox
def test_no_fork_server_is_warmed_with_the_patches_off(packages, caplog):
    """Asked all the same, the fork server refuses to warm up without the patches: a sandbox
    forked from it could not compile (it hands compilations back through a patch). The
    judging test above shows the judge does not ask."""
    kind = kind_for(packages["encoder-block"], ["flax.linen", "jax"])
    with _sandbox(False) as sb:
        full = base.prepare_message(kind, [dst for _, dst in sb.site_binds()], None,
                                    CHANNEL_FD, library_patches=False)
        servers = sb.fork_servers
        assert servers is not None
        with caplog.at_level(logging.WARNING, logger="tensorjudge.sandbox"):
            server = servers._server(("warm", "off"), {"preload": full["preload"], "warm": full})
            assert server is None
            assert "needs the library patches" in caplog.text, caplog.text
