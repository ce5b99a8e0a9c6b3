"""Judges that share a cache folder (the workers of a deployment, each a process of its own)
compute each trusted output, and fill each kind of the compilation cache, once between them:
a lock file per output and per kind, held with flock. flock's locks belong to open files, so
two threads that open the file on their own contend exactly as two processes do."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from judge.package import load_package
from judge.sandbox import xla_cache
from judge.sandbox.job import Kind, Warmup
from judge.trusted import expected
from tests.conftest import FIXTURES


def _in_thread(target, *args) -> threading.Thread:  # noqa: ANN001
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def test_an_output_another_process_is_computing_is_read_not_computed(tmp_path: Path,
                                                                     monkeypatch):
    package = load_package(FIXTURES / "double")
    test = package.tests[0]
    key = expected.test_key(package, test)
    runs: list[list[str]] = []
    monkeypatch.setattr(expected, "_run", lambda p, items, *a: runs.append(
        [i["key"] for i in items]))
    d = tmp_path / "expected"
    d.mkdir()
    with expected._key_locks(d, [key]):  # the other worker, computing it
        waiter = _in_thread(expected.run_trusted, package, [{"name": test.name, "key": key}],
                            False, d)
        time.sleep(0.5)
        assert waiter.is_alive(), "did not wait for the process computing it"
        np.save(d / f"{key}.npy", np.zeros(3))
        (d / f"{key}.variables.json").write_text("{}")
    waiter.join(30)
    assert not waiter.is_alive()
    assert runs == []


@pytest.mark.parametrize("filled_meanwhile", [True, False])
def test_a_kind_another_judge_is_filling_is_waited_for(tmp_path: Path, filled_meanwhile: bool):
    record = xla_cache.MarkerFiles(tmp_path)
    kind = Kind(("jax",), warmup=Warmup("w", "def warmup(cases, preload):\n    pass\n"))
    assert xla_cache.needs_fill(kind)
    spawned: list[Kind] = []

    def spawn_filler(k: Kind, memory: int):  # noqa: ANN202
        spawned.append(k)
        raise RuntimeError("stop here: only whether a fill started matters")

    outcome: list[object] = []

    def fill() -> None:
        try:
            outcome.append(xla_cache.fill(kind, 1 << 28, record, spawn_filler))
        except RuntimeError as e:
            outcome.append(e)

    with record.lock(kind):  # the other judge, filling it
        waiter = _in_thread(fill)
        time.sleep(0.5)
        assert waiter.is_alive(), "did not wait for the judge filling it"
        if filled_meanwhile:
            record.add(kind)
    waiter.join(30)
    if filled_meanwhile:
        assert outcome == [True] and spawned == []
    else:  # the other judge failed: this one fills
        assert spawned == [kind]
