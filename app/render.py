"""Plain-text rendering of results for the terminal."""

from __future__ import annotations

from judge import JudgeResult


def _g(x: float | None, fmt: str = ".2e") -> str:
    return "-" if x is None else format(x, fmt)


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
    if result.message:
        out += "\n\n" + result.message.rstrip()
    if result.stdout:
        out += "\n\n--- stdout ---\n" + result.stdout.rstrip()
    if result.stderr:
        out += "\n\n--- stderr ---\n" + result.stderr.rstrip()
    return out + "\n"
