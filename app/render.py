"""Plain-text rendering of results for the terminal."""

from __future__ import annotations

from judge import JudgeResult, Timing


def _g(x: float | None, fmt: str = ".2e") -> str:
    return "-" if x is None else format(x, fmt)


_TIMING_WORDS = (("queue_ms", "queue"), ("preparation_ms", "preparation"), ("tests_ms", "tests"),
                 ("compile_ms", "compilation"), ("rerun_ms", "rerun"),
                 ("diagnosis_ms", "diagnosis"), ("other_ms", "other"))


def timing_line(timing: Timing) -> str:
    """Where the time went, in one line: the parts that took any."""
    parts = [f"{words} {_ms(ms)}" for key, words in _TIMING_WORDS
             if (ms := getattr(timing, key)) is not None and ms >= 0.05]
    return f"time {_ms(timing.total_ms)}: " + ", ".join(parts)


def _ms(x: float) -> str:
    return f"{x / 1000:.2f} s" if x >= 1000 else f"{x:.0f} ms" if x >= 10 else f"{x:.1f} ms"


def result_table(result: JudgeResult) -> str:
    rows = [("test", "verdict", "time ms", "max abs err", "max rel err", "bad", "message")]
    for t in result.tests:
        rows.append((
            t.name,
            t.verdict.value if t.verdict else "-",
            _g(t.time_ms, ".1f"),
            _g(t.max_abs_err),
            _g(t.max_rel_err),
            "-" if t.mismatches is None else str(t.mismatches),
            (t.message or "").splitlines()[0][:90] if t.message else "",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:6], widths, strict=True)) + "  " + r[6]
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    out = "\n".join(line.rstrip() for line in lines)
    out += f"\n\n{result.verdict.words} ({result.verdict.value}): {result.passed}/" \
        f"{len(result.tests)} tests passed"
    if result.wall_ms is not None:
        out += f" in {result.wall_ms / 1000:.2f} s"
    if result.timing is not None:
        out += "\n" + timing_line(result.timing)
    if result.message:
        out += "\n\n" + result.message.rstrip()
    if result.stdout:
        out += "\n\n--- stdout ---\n" + result.stdout.rstrip()
    if result.stderr:
        out += "\n\n--- stderr ---\n" + result.stderr.rstrip()
    return out + "\n"
