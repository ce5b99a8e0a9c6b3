"""The wrong-answer picture: |got - want| over the unflattened output as an inline SVG.

The judge sends `error_grid`: rows = positions (every axis but the last, flattened), columns =
features (the last axis), max-pooled down to at most 48 x 48, NaN/inf cells as -1. The
picture marks the worst element (`worst_index`, in the unflattened shape) and draws NaN/inf
cells hatched. It has role="img" and an aria-label that says what it shows and where the
worst element is; `largest_cells` gives the short text table that goes with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

# Perceptually ordered stops from "no error" (light) to "largest error" (dark): a light
# yellow through orange and red to a deep purple (after matplotlib's "magma", reversed).
_STOPS = [
    (0.00, (252, 253, 191)),
    (0.15, (254, 215, 153)),
    (0.30, (253, 164, 107)),
    (0.45, (246, 110, 92)),
    (0.60, (222, 73, 104)),
    (0.75, (158, 47, 127)),
    (0.90, (95, 24, 127)),
    (1.00, (40, 11, 84)),
]
NAN_COLOUR = "#0b6e99"
GRID_MAX = 48


def colour(t: float) -> str:
    """The fill for a value scaled to [0, 1]."""
    t = min(1.0, max(0.0, t))
    for (t0, c0), (t1, c1) in zip(_STOPS, _STOPS[1:], strict=False):
        if t <= t1:
            f = 0 if t1 == t0 else (t - t0) / (t1 - t0)
            r, g, b = (round(a + (bb - a) * f) for a, bb in zip(c0, c1, strict=True))
            return f"#{r:02x}{g:02x}{b:02x}"
    r, g, b = _STOPS[-1][1]
    return f"#{r:02x}{g:02x}{b:02x}"


def fmt(x: float | None) -> str:
    if x is None:
        return "NaN/inf"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e4:
        return f"{x:.4g}"
    return f"{x:.3e}"


def _shape_text(shape: list[int]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


@dataclass
class Heatmap:
    svg: str
    label: str
    rows: int  # of the grid drawn
    cols: int
    row_step: int  # positions per grid row (1 unless downsampled)
    col_step: int
    worst_cell: tuple[int, int] | None
    largest: list[dict[str, Any]]
    has_nan: bool
    max_err: float


def _steps(shape: list[int]) -> tuple[int, int, int, int]:
    positions = math.prod(shape[:-1]) if len(shape) > 1 else 1
    features = shape[-1] if shape else 1
    return (positions, features, max(1, -(-positions // GRID_MAX)),
            max(1, -(-features // GRID_MAX)))


def _worst_cell(shape: list[int], worst: list[int] | None, rs: int, cs: int
                ) -> tuple[int, int] | None:
    if not worst or len(worst) != len(shape):
        return None
    row = 0
    for i, n in zip(worst[:-1], shape[:-1], strict=True):
        row = row * n + i
    return row // rs, worst[-1] // cs


def _span(i: int, step: int, limit: int) -> str:
    if step == 1:
        return str(i)
    lo, hi = i * step, min(limit, (i + 1) * step) - 1
    return f"{lo}–{hi}"


def build(test: dict[str, Any]) -> Heatmap | None:
    """The picture of one test result, or None when it has no error grid."""
    grid = test.get("error_grid")
    shape = test.get("shape") or []
    if not grid or not grid[0] or not shape:
        return None
    rows, cols = len(grid), len(grid[0])
    positions, features, rs, cs = _steps(shape)
    finite = [v for row in grid for v in row if v >= 0]
    vmax = max(finite) if finite else 0.0
    has_nan = any(v < 0 for row in grid for v in row)
    worst = _worst_cell(shape, test.get("worst_index"), rs, cs)
    if worst is not None and not (0 <= worst[0] < rows and 0 <= worst[1] < cols):
        worst = None

    # The label: what is drawn, and where the worst element is.
    if len(shape) == 2:
        over = f"the {_shape_text(shape)} output (rows = positions, columns = features)"
    elif len(shape) == 1:
        over = f"the {_shape_text(shape)} output (one row, columns = elements)"
    else:
        over = (f"the {_shape_text(shape)} output, drawn as {positions} positions by "
                f"{features} features")
    if rs > 1 or cs > 1:
        over += f", each cell the largest error of a {rs} × {cs} block"
    where = ""
    wi = test.get("worst_index")
    if wi:
        where = (f"; the worst element is at [{', '.join(str(i) for i in wi)}] "
                 f"(got {fmt(test.get('got'))}, want {fmt(test.get('want'))})")
    label = f"Error heatmap of |got − want| over {over}{where}"
    if has_nan:
        label += "; hatched cells are NaN or infinite"
    label += f". Largest finite error {fmt(vmax)}."

    # Layout, in CSS pixels: cells at least 8 px, the whole grid at most 560 px wide.
    cell = max(8, min(52, 560 // max(cols, 1)))
    cell_h = max(6, min(cell, 420 // max(rows, 1))) if rows > 24 else cell
    left, top, right = 36, 8, 8
    bottom = 22
    legend_h = 24
    w = left + cols * cell + right
    h = top + rows * cell_h + bottom + legend_h
    w = max(w, 300)
    parts: list[str] = []
    parts.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" '
        f'aria-label="{escape(label)}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        f'style="max-width:100%;height:auto">')
    parts.append(f"<title>{escape(label)}</title>")
    parts.append(
        '<defs><pattern id="tj-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="'
        f'{NAN_COLOUR}"/><rect width="2.5" height="6" fill="#ffffff"/></pattern></defs>')
    parts.append(f'<g transform="translate({left},{top})" shape-rendering="crispEdges">')
    for r, row in enumerate(grid):
        y = r * cell_h
        for c, v in enumerate(row):
            x = c * cell
            fill = "url(#tj-hatch)" if v < 0 else colour(v / vmax if vmax > 0 else 0.0)
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell_h}" '
                         f'fill="{fill}"/>')
    parts.append(f'<rect x="0" y="0" width="{cols * cell}" height="{rows * cell_h}" '
                 'fill="none" stroke="#6b7280" stroke-width="1"/>')
    if worst is not None:
        wr, wc = worst
        x, y = wc * cell, wr * cell_h
        parts.append(f'<rect class="worst" x="{x - 1.5}" y="{y - 1.5}" width="{cell + 3}" '
                     f'height="{cell_h + 3}" fill="none" stroke="#ffffff" stroke-width="4"/>')
        parts.append(f'<rect x="{x - 1.5}" y="{y - 1.5}" width="{cell + 3}" '
                     f'height="{cell_h + 3}" fill="none" stroke="#00c2ff" stroke-width="2"/>')
    parts.append("</g>")

    # Axes: the first and last index (the caption under the picture names the axes).
    gy = top + rows * cell_h
    font = 'font-family="inherit" font-size="11" fill="currentColor"'
    parts.append(f'<text x="{left - 6}" y="{top + cell_h / 2 + 4}" text-anchor="end" {font}>0'
                 "</text>")
    if rows > 1:
        parts.append(f'<text x="{left - 6}" y="{gy - cell_h / 2 + 4}" text-anchor="end" '
                     f'{font}>{positions - 1}</text>')
    parts.append(f'<text x="{left + cell / 2}" y="{gy + 14}" text-anchor="middle" {font}>0'
                 "</text>")
    if cols > 1:
        parts.append(f'<text x="{left + cols * cell - cell / 2}" y="{gy + 14}" '
                     f'text-anchor="middle" {font}>{features - 1}</text>')

    # Legend: the colour scale from 0 to the largest error, and the NaN swatch.
    ly = gy + bottom - 4
    lw = 120
    parts.append('<defs><linearGradient id="tj-scale">' + "".join(
        f'<stop offset="{t}" stop-color="{colour(t)}"/>' for t, _ in _STOPS)
        + "</linearGradient></defs>")
    parts.append(f'<text x="{left}" y="{ly + 14}" {font}>0</text>')
    parts.append(f'<rect x="{left + 12}" y="{ly + 4}" width="{lw}" height="12" '
                 'fill="url(#tj-scale)" stroke="#6b7280" stroke-width="0.5"/>')
    parts.append(f'<text x="{left + 18 + lw}" y="{ly + 14}" {font}>{escape(fmt(vmax))}</text>')
    if has_nan:
        nx = left + lw + 90
        parts.append(f'<rect x="{nx}" y="{ly + 4}" width="12" height="12" '
                     'fill="url(#tj-hatch)"/>')
        parts.append(f'<text x="{nx + 16}" y="{ly + 14}" {font}>NaN/inf</text>')
    parts.append("</svg>")

    cells = [(v, r, c) for r, row in enumerate(grid) for c, v in enumerate(row)]
    # NaN/inf cells first (they are the worst), then the largest finite errors.
    ordered = ([t for t in cells if t[0] < 0]
               + sorted((t for t in cells if t[0] >= 0), key=lambda t: -t[0]))
    largest = [{"positions": _span(r, rs, positions), "features": _span(c, cs, features),
                "error": None if v < 0 else v} for v, r, c in ordered[:5]]
    return Heatmap("".join(parts), label, rows, cols, rs, cs, worst, largest, has_nan, vmax)
