"""A pool's line of running jobs: the first, one per core, weigh as jobs; those behind them
yield until they move up; light jobs keep their own weight and take no place."""

from __future__ import annotations

from judge.sandbox.priority import CpuPriority
from judge.sandbox.turns import Turns


def test_places_beyond_the_cores_yield_and_move_up_as_those_before_them_leave():
    line = Turns(cores=2)
    a, b, c, d = (line.enter(light=False) for _ in range(4))
    light = line.enter(light=True)
    assert [t.priority for t in (a, b, c, d, light)] == [
        CpuPriority.NORMAL, CpuPriority.NORMAL, CpuPriority.YIELD, CpuPriority.YIELD,
        CpuPriority.LIGHT]
    seen_c: list[CpuPriority] = []
    seen_d: list[CpuPriority] = []
    c.follow(seen_c.append)
    stop_d = d.follow(seen_d.append)
    assert seen_c == [CpuPriority.YIELD] and seen_d == [CpuPriority.YIELD]
    stop_d()
    line.leave(b)
    assert c.priority is CpuPriority.NORMAL and seen_c == [CpuPriority.YIELD, CpuPriority.NORMAL]
    assert d.priority is CpuPriority.YIELD
    line.leave(light)  # no place: nothing moves
    line.leave(a)
    assert d.priority is CpuPriority.NORMAL
    assert seen_d == [CpuPriority.YIELD]  # it stopped following
    line.leave(a)  # twice: no harm
    assert seen_c == [CpuPriority.YIELD, CpuPriority.NORMAL]
