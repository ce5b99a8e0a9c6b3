"""The samples' summaries: shapes, dtypes and the first few values of each input."""

from __future__ import annotations

from app.services import samples


def test_sample_summaries():
    import numpy as np

    s = samples.summarise({"x": np.arange(20, dtype=np.float32).reshape(4, 5) / 3, "n": 3,
                           "m": np.array([True, False]), "none": None})
    assert s["x"]["shape"] == [4, 5] and s["x"]["dtype"] == "float32"
    assert s["x"]["size"] == 20 and len(s["x"]["values"]) == samples.SAMPLE_VALUES
    assert s["x"]["values"][1] == 0.333333
    assert s["n"] == 3 and s["m"]["values"] == [True, False] and s["none"] is None
