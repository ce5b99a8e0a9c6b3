"""A warmed fork server learns which of its pages a sandbox forked from it writes first, and
each sandbox copies those before its job (judge/inside/zygote.py): the same copies a first
write would make, made while the sandbox waits, with nothing changed in them."""

from __future__ import annotations

import ctypes
import os
import struct

import pytest

from judge.engine import judge
from judge.inside import zygote
from judge.package import load_package
from judge.verdicts import Verdict
from tests.conftest import REPO
from tests.judge.conftest import forked_sandbox

PAGE = os.sysconf("SC_PAGE_SIZE")
PAGES = 64


def _buffer() -> tuple[bytearray, int]:
    """A page-aligned run of PAGES pages inside a bytearray, every page present."""
    buf = bytearray(PAGE * (PAGES + 1))
    base = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    start = -base % PAGE
    for i in range(PAGES):
        buf[start + i * PAGE] = i + 1
    return buf, start


def _exclusive(address: int, count: int) -> list[bool]:
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(address // PAGE * 8)
        data = f.read(8 * count)
    return [bool(v & zygote.PRESENT and v & zygote.EXCLUSIVE)
            for (v,) in struct.iter_unpack("<Q", data)]


def _in_child(work) -> bytes:
    """`work()`'s bytes, computed in a forked child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.write(w, work())
        finally:
            os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 1 << 16):
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return out


def test_the_pages_a_fork_writes_are_found_and_copied_ahead_unchanged():
    buf, start = _buffer()
    address = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf)) + start
    written = [3, 4, 5, 40]

    def rehearse() -> None:
        for i in written:
            buf[start + i * PAGE] += 1

    runs = zygote._pages_written_after_fork(rehearse)
    pages = {(p - address) // PAGE for first, n in runs for p in range(first, first + n, PAGE)
             if address <= p < address + PAGES * PAGE}
    assert pages == set(written)
    assert [buf[start + i * PAGE] for i in written] == [i + 1 for i in written]  # as they were

    def copy_ahead() -> bytes:
        before = _exclusive(address, PAGES)
        zygote._copy_ahead(runs)
        after = _exclusive(address, PAGES)
        contents = bytes(buf[start + i * PAGE] for i in range(PAGES))
        return bytes(before) + bytes(after) + contents

    out = _in_child(copy_ahead)
    before, after, contents = out[:PAGES], out[PAGES:2 * PAGES], out[2 * PAGES:]
    assert not any(before)  # shared with the parent after the fork
    assert [i for i in range(PAGES) if after[i]] == written
    assert list(contents) == [i + 1 for i in range(PAGES)]


def test_a_rehearsal_that_fails_or_hangs_finds_nothing():
    def fails() -> None:
        raise RuntimeError("a warm-up that fails")

    assert zygote._pages_written_after_fork(fails) == []

    def hangs() -> None:
        import time

        time.sleep(60)

    assert zygote._pages_written_after_fork(hangs, timeout_s=0.5) == []


# The encoder block as the statement describes it, counting the page faults of its first call.
COUNTS_FAULTS = '''
import resource
import jax
import jax.numpy as jnp
import flax.linen as nn

FAULTS = []


class PreLNEncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        y = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(y)
        y = nn.LayerNorm()(x)
        y = jax.nn.relu(nn.Dense(self.d_ff)(y))
        return x + nn.Dense(x.shape[-1])(y)


def encoder_block_forward(seed, x, num_heads, d_ff):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    model = PreLNEncoderBlock(num_heads, d_ff)
    x = jnp.asarray(x)
    out = jnp.ravel(model.apply(model.init(jax.random.PRNGKey(seed), x), x))
    FAULTS.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    print(FAULTS[-1])
    return out
'''


@pytest.mark.sandbox
def test_a_warm_forked_sandbox_does_not_copy_pages_in_its_first_test():
    """Without the copies ahead, this first call made about 2,100 page faults on the machine
    the judge was built on; with them, about 200."""
    sandbox = forked_sandbox()
    try:
        res = judge(load_package(REPO / "problems" / "encoder-block"), COUNTS_FAULTS, sandbox,
                    samples_only=True, probes=False)
        assert sandbox.fork_servers is not None and sandbox.fork_servers.forked_warm >= 1
    finally:
        sandbox.close()
    assert res.verdict is Verdict.AC, [(t.verdict, t.message) for t in res.tests]
    first = int(res.stdout.split()[0])
    assert first < 800, res.stdout
