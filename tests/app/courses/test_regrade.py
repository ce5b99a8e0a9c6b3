"""A regrade's preview lists exactly the flips a full rejudge then makes: the fixture problem
`double` changes (its tolerance widened, a larger test added), four submissions of an
assignment are previewed against the new version in the real sandbox, then the regrade is
applied and the submissions' new verdicts compared with the preview's."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from app.services import problems
from tests.app.courses.conftest import Course_
from tests.app.tj_testlib import AC_CODE, DOUBLE, WA_CODE, copy_package

HALF = ("import numpy as np\n\ndef double(x):\n"
        "    return (2 * np.asarray(x)).astype(np.float16).reshape(-1)\n")
SMALL_ONLY = ("import numpy as np\n\ndef double(x):\n    x = np.asarray(x)\n"
              "    return x.reshape(-1) if x.shape[0] >= 5 else (2 * x).reshape(-1)\n")
NEW_TEST = '\n[[tests]]\nname = "hidden-3"\nkind = "hidden"\nseed = 4\nparams = { n = 5, m = 2 }\n'


def wait(client: TestClient, url: str, auth: dict[str, str], done: str = "done") -> dict:
    deadline = time.monotonic() + 90
    while True:
        body = client.get(url, headers=auth).json()
        if (body.get("status") == done) if done != "preview" else body["done"]:
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def test_the_preview_lists_exactly_the_flips_the_rejudge_makes(client, workers, ctx, tmp_path):
    c = Course_(client)
    aid = c.assignment()["id"]
    workers(1)
    codes = {"accepted": AC_CODE, "half": HALF, "small_only": SMALL_ONLY, "wrong": WA_CODE}
    ids = {}
    for i, (name, code) in enumerate(codes.items()):
        who = c.learner if i % 2 == 0 else c.other
        ids[name] = client.post("/api/v1/submissions", json={"problem": "double",
                                                              "code": code},
                                headers=who).json()["id"]
    before = {name: wait(client, f"/api/v1/submissions/{sid}", c.instructor)["verdict"]
              for name, sid in ids.items()}
    assert before == {"accepted": "AC", "half": "WA", "small_only": "AC", "wrong": "WA"}

    # The package changes: a wider tolerance, and a test of five rows.
    v2 = copy_package(DOUBLE, tmp_path, "double", atol="1e-2", rtol="1e-2")
    (v2 / "problem.toml").write_text((v2 / "problem.toml").read_text() + NEW_TEST)
    assert problems.store(ctx, v2, mode="update", validator=None).number == 2

    r = client.post(f"/api/v1/assignments/{aid}/regrades", json={"problem": "double"},
                    headers=c.ta)
    assert r.status_code == 202, r.text
    rid = r.json()["id"]
    preview = wait(client, f"/api/v1/regrades/{rid}", c.ta, done="preview")
    assert preview["version"] == 2
    flips = {i["submission_id"]: (i["before"]["verdict"], i["preview"]["verdict"])
             for i in preview["items"] if i["flips"]}
    assert flips == {ids["half"]: ("WA", "AC"), ids["small_only"]: ("AC", "WA")}
    assert sorted(preview["flips"]) == sorted(flips)
    # The preview changed nothing the learners or the gradebook see.
    for name, sid in ids.items():
        sub = client.get(f"/api/v1/submissions/{sid}", headers=c.instructor).json()
        assert sub["verdict"] == before[name] and len(sub["judgements"]) == 1
    # A learner may not apply it; the staff may, once.
    assert client.post(f"/api/v1/regrades/{rid}/apply", headers=c.learner).status_code == 403
    assert client.post(f"/api/v1/regrades/{rid}/apply", headers=c.ta).status_code == 202
    assert client.post(f"/api/v1/regrades/{rid}/apply", headers=c.ta).status_code == 409

    after = {sid: wait(client, f"/api/v1/submissions/{sid}", c.instructor)
             for sid in ids.values()}
    made = {sid: (before[name], after[sid]["verdict"]) for name, sid in ids.items()
            if after[sid]["verdict"] != before[name]}
    assert made == flips
    for sid, sub in after.items():
        # The history keeps both: the old judgement, and the new against version 2.
        assert [j["verdict"] for j in sub["judgements"]][0] == before[
            next(n for n, i in ids.items() if i == sid)]
        assert len(sub["judgements"]) == 2 and sub["version"] == 2
    applied = wait(client, f"/api/v1/regrades/{rid}", c.ta, done="preview")
    assert applied["applied_at"] is not None
    assert all(i["applied_verdict"] == i["preview"]["verdict"] for i in applied["items"])
