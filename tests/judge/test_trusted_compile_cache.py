"""The trusted processes' compilation cache: what one trusted process compiled, the next one
loads (a fresh process per computation would otherwise compile every operation again)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judge.package import Package, load_package
from judge.trusted.expected import expected_outputs, trusted_compile_cache, trusted_env
from tests.conftest import FIXTURES

JAX_REFERENCE = '''import jax.numpy as jnp


def double(x):
    y = jnp.tanh(jnp.asarray(x)) * 0 + jnp.asarray(x)  # a few operations to compile
    return (2 * y).reshape(-1)
'''


def _jax_double(root: Path, title: str) -> Package:
    shutil.copytree(FIXTURES / "double", root)
    (root / "reference.py").write_text(JAX_REFERENCE)
    toml = root / "problem.toml"
    toml.write_text(toml.read_text().replace('title = "Double it"', f'title = "{title}"'))
    return load_package(root)


def _entries() -> set[str]:
    d = trusted_compile_cache()
    return {p.name for p in d.glob("*-cache")} if d.is_dir() else set()


def test_a_second_trusted_process_loads_what_the_first_compiled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TENSORJUDGE_TRUSTED_COMPILE_CACHE", raising=False)
    jax_double = _jax_double(tmp_path / "one" / "double", "Double it")
    env = trusted_env()
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(trusted_compile_cache())
    assert not any(k.startswith("TENSORJUDGE_") for k in env)
    assert not _entries()
    first = expected_outputs(jax_double, jax_double.tests)
    compiled = _entries()
    assert compiled, "the first trusted process compiled nothing into the cache"
    # Another version of the problem (new keys: a new process), the same reference and
    # shapes: it finds every operation there.
    other = _jax_double(tmp_path / "two" / "double", "Double it again")
    assert other.content_hash != jax_double.content_hash
    second = expected_outputs(other, other.tests)
    assert _entries() == compiled
    assert all((a == b).all() for a, b in zip(first, second, strict=True))
