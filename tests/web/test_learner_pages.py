"""The learner's loop on the pages (issue 27), through the application: the history's columns
and filters, tags that filter the problem list, the fragment that refreshes a problem's head
when a verdict arrives, the starter switcher and the sample downloads on a problem's page."""

from __future__ import annotations

import re

from app.services.history import framework_of
from app.settings import REPO_ROOT
from tests.app.tj_testlib import AC_CODE, WA_CODE, FakeJudge, slow_checks_for
from tests.web.test_pages import wait_done

TORCH_CODE = "import torch\nimport numpy as np\n\ndef double(x):\n    return torch.tensor(x) * 2\n"


def submit(web, code: str, mode: str = "submit") -> int:
    web.get("/problems/double")
    r = web.post("/problems/double/submit", {"code": code, "mode": mode}, json=True)
    assert r.status_code == 202, r.text
    return r.json()["id"]


def test_framework_read_from_imports():
    assert framework_of("import numpy as np\nimport torch.nn.functional as F\n") == "PyTorch"
    assert framework_of("import jax\nimport flax.linen as nn\n") == "Flax"
    assert framework_of("from jax import numpy as jnp\n") == "JAX"
    assert framework_of("import numpy\n") == "NumPy"
    assert framework_of("def f(x):\n    return x\n") is None
    assert framework_of("import torch\ndef broken(:\n") == "PyTorch"  # does not parse


def test_history_columns_and_filters(web, workers):
    workers(1, judge_fn=FakeJudge("AC", "WA"))
    web.sign_up("alice")
    first = submit(web, "import numpy as np\n" + AC_CODE)
    wait_done(web, first)
    second = submit(web, TORCH_CODE)
    wait_done(web, second)

    page = web.get("/submissions").text
    heads = re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', page)
    assert heads == ["#", "Problem", "Kind", "Framework", "Verdict", "Score", "Time", "Submitted"]
    rows = re.findall(r"<tr>\s*<td><a href=\"/submissions/(\d+)\">.*?</tr>", page, re.S)
    assert rows == [str(second), str(first)]
    assert "PyTorch" in page and "NumPy" in page and "3/3" in page and "ms</td>" in page

    only_wa = web.get("/submissions?verdict=WA").text
    assert f'href="/submissions/{second}"' in only_wa
    assert f'href="/submissions/{first}"' not in only_wa
    assert '<option value="WA" selected>' in only_wa
    none = web.get("/submissions?verdict=TLE").text
    assert "No submission matches these filters" in none
    assert f'href="/submissions/{first}"' in web.get("/submissions?problem=double").text
    assert "No submission matches" in web.get("/submissions?problem=nope").text
    # An unknown verdict is no filter at all.
    assert f'href="/submissions/{first}"' in web.get("/submissions?verdict=bogus").text


def test_tags_filter_the_problem_list(web, ctx):
    from app.services import problems

    problems.store(ctx, REPO_ROOT / "problems" / "encoder-block", mode="ensure",
                   validator=None)
    listing = web.get("/").text
    assert 'href="/?tag=warm-up"' in listing and 'href="/?tag=flax"' in listing
    assert "Easy" in listing
    flax = web.get("/?tag=flax").text
    assert "/problems/encoder-block" in flax and "/problems/double" not in flax
    assert "Show all problems" in flax
    empty = web.get("/?tag=nothing-has-this").text
    assert "No problem is tagged" in empty
    # The tags of a problem's page lead to the same filter.
    assert 'href="/?tag=warm-up"' in web.get("/problems/double").text


def test_the_live_fragment_follows_the_verdicts(web, workers):
    workers(1, judge_fn=FakeJudge("AC"))
    web.sign_up("alice")
    before = web.get("/problems/double/live").text
    assert "No submissions yet" in before and "Solved" not in before
    assert "Your attempts: 0 submits, 0 runs" in before
    assert 'id="recent"' in before and "hidden" in before
    sid = submit(web, AC_CODE)
    wait_done(web, sid)
    after = web.get("/problems/double/live").text
    assert "No submissions yet" not in after and "Acceptance 100%" in after
    assert "✓ Solved" in after and "Your attempts: 1 submit, 0 runs" in after
    assert f'href="/submissions/{sid}"' in after
    assert web.get("/problems/nope/live").status_code == 404


def test_problem_page_offers_downloads_and_starters(web, ctx):
    from app.services import problems

    page = web.get("/problems/double").text
    for name in ("samples.npz", "samples.json", "checker.py"):
        assert f'href="/api/v1/problems/double/{name}"' in page
    assert "python check.py my_solution.py double-samples.npz" in page
    assert 'id="starter-framework"' not in page  # one framework: no switcher
    assert "NotImplementedError" in page  # the starter made from the signature

    problems.store(ctx, REPO_ROOT / "problems" / "decoder-block", mode="ensure",
                   validator=None)
    page = web.get("/problems/decoder-block").text
    options = re.findall(r'<option value="(\w+)">([^<]+)</option>', page)
    assert options == [("numpy", "NumPy"), ("jax", "JAX"), ("torch", "PyTorch")]
    assert 'id="starters"' in page and "import torch" in page
    assert "Medium" in page


def test_page_submit_errors_are_problem_details(web):
    web.get("/problems/double")
    r = web.post("/problems/double/submit", {"code": WA_CODE, "mode": "submit"}, json=True)
    assert r.status_code == 401
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"] == "sign in to run or submit code"


def test_a_pages_submissions_are_queued_in_the_order_they_were_posted(web, monkeypatch):
    import threading
    import time

    web.sign_up("alice")
    first_code = AC_CODE + "\n# first\n"
    slow_checks_for(monkeypatch, first_code, 0.5)
    ids: dict[str, int] = {}
    t = threading.Thread(target=lambda: ids.setdefault("first", submit(web, first_code)))
    t.start()
    time.sleep(0.15)
    ids["second"] = submit(web, AC_CODE)
    t.join()
    assert ids["first"] < ids["second"]
