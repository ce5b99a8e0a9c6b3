"""Similarity inside an assignment: the structural measure survives renaming and
reformatting, ranks a copy above an independent solution, shows the matching lines; staff
only."""

from __future__ import annotations

from app.services import similarity

ORIGINAL = '''import numpy as np


def double(x):
    x = np.asarray(x, dtype=np.float64)
    rows, cols = x.shape
    out = np.zeros(rows * cols)
    for i in range(rows):
        for j in range(cols):
            out[i * cols + j] = 2 * x[i, j]
    return out
'''
RENAMED = '''import numpy as np

def double(values):
    # my own work, honestly
    values = np.asarray(values, dtype=np.float64)
    n, m = values.shape
    result = np.zeros(n * m)
    for a in range(n):
        for b in range(m):
            result[a * m + b] = (
                2 * values[a, b])
    return result
'''
INDEPENDENT = '''def double(x):
    return [2.0 * v for row in x.tolist() for v in row]
'''


def doc(i: int, code: str) -> similarity._Doc:
    st = similarity.structure(code)
    return similarity._Doc(i, f"u{i}", code, st, frozenset(similarity.winnow(st.runs())))


def test_renaming_and_reformatting_do_not_hide_a_copy():
    a, b, c = doc(1, ORIGINAL), doc(2, RENAMED), doc(3, INDEPENDENT)
    copy = similarity.compare(a, b, "double")
    other = similarity.compare(a, c, "double")
    assert copy.similarity == 1.0
    assert other.similarity < 0.2
    # The matching regions cover the function's body on both sides.
    assert copy.a.regions[0][0] <= 5 and copy.a.regions[-1][1] >= 10
    assert copy.b.regions[-1][1] >= 11
    assert similarity.structure("def broken(:\n") == similarity.Structure((), ())


def test_pairs_through_the_api_for_staff_only(client, workers):
    from tests.app.courses.conftest import Course_
    from tests.app.courses.test_grading import submit
    from tests.app.tj_testlib import FakeJudge, register

    c = Course_(client)
    third = register(client, "clearn3")
    client.post("/api/v1/courses/join", json={"code": c.code}, headers=third)
    aid = c.assignment()["id"]
    workers(1, judge_fn=FakeJudge("AC"))
    ids = [submit(client, who, code) for who, code in
           ((c.learner, ORIGINAL), (c.other, RENAMED), (third, INDEPENDENT))]
    r = client.get(f"/api/v1/assignments/{aid}/similarity?problem=double", headers=c.ta)
    assert r.status_code == 200, r.text
    pairs = r.json()
    assert len(pairs) == 3
    top = pairs[0]
    assert {top["a"]["submission_id"], top["b"]["submission_id"]} == {ids[0], ids[1]}
    assert top["similarity"] == 1.0 and pairs[-1]["similarity"] < 0.2
    r = client.get(f"/api/v1/assignments/{aid}/similarity/{ids[0]}/{ids[1]}?problem=double",
                   headers=c.instructor)
    assert r.json()["a"]["code"] == ORIGINAL and r.json()["b"]["regions"]
    assert client.get(f"/api/v1/assignments/{aid}/similarity?problem=double",
                      headers=c.learner).status_code == 403
