"""Problem versions: stored whole, self-contained, materialised anywhere; updates add versions."""

from __future__ import annotations

import io
import tarfile

import pytest
from sqlalchemy import select

from app.db.models import ProblemVersion, Submission
from app.services import archives, problems, queue, submissions, users
from app.services.archives import PackageRejected
from app.services.errors import Conflict, NotFound
from tests.app.tj_testlib import AC_CODE, DOUBLE, PASSWORD, copy_package


def test_add_then_add_again_conflicts(ctx, tmp_path):
    pkg = copy_package(DOUBLE, tmp_path, "triple", title='"Triple it"')
    v = problems.store(ctx, pkg, mode="add", validator=None)
    assert (v.slug, v.number, v.created) == ("triple", 1, True)
    with pytest.raises(Conflict):
        problems.store(ctx, pkg, mode="add", validator=None)
    with pytest.raises(NotFound):
        problems.store(ctx, copy_package(DOUBLE, tmp_path / "x", "quad"), mode="update",
                       validator=None)


def test_update_adds_a_version_and_old_submissions_keep_theirs(ctx, tmp_path):
    user = users.create_user(ctx, "alice", PASSWORD)
    old = submissions.create(ctx, user, "double", AC_CODE)["id"]
    job = queue.claim(ctx, "w")
    queue.complete(ctx, job, {"verdict": "AC", "score": {"passed": 3, "total": 3},
                              "message": None, "tests": []}, 1.0)
    same = problems.store(ctx, DOUBLE, mode="update", validator=None)
    assert not same.created and same.number == 1  # unchanged: nothing added
    changed = copy_package(DOUBLE, tmp_path, "double", title='"Double it (v2)"')
    v2 = problems.store(ctx, changed, mode="update", validator=None)
    assert v2.created and v2.number == 2
    new = submissions.create(ctx, user, "double", AC_CODE)["id"]
    with ctx.db.transaction() as s:
        versions = {sid: s.scalar(select(ProblemVersion.number).join(
            Submission, Submission.version_id == ProblemVersion.id).where(Submission.id == sid))
            for sid in (old, new)}
    assert versions == {old: 1, new: 2}
    view = submissions.get(ctx, user, old)
    assert view["version"] == 1 and view["verdict"] == "AC"
    assert problems.get_problem(ctx, "double")["title"] == "Double it (v2)"
    assert [v["version"] for v in problems.versions(ctx, "double")] == [1, 2]
    # A rejudge may keep the version or move to the current one.
    submissions.rejudge(ctx, [old], latest_version=False)
    assert submissions.get(ctx, user, old)["version"] == 1
    submissions.rejudge(ctx, [old])
    assert submissions.get(ctx, user, old)["version"] == 2


def test_a_reference_outside_the_folder_is_brought_in(ctx, tmp_path):
    pkgs, refs = tmp_path / "problems", tmp_path / "reference_solutions"
    refs.mkdir()
    pkg = copy_package(DOUBLE, pkgs, "triple", reference='"../../reference_solutions/t.py"')
    (pkg / "reference.py").rename(refs / "t.py")
    v = problems.store(ctx, pkg, mode="add", validator=None)
    with ctx.db.transaction() as s:
        archive = s.scalar(select(ProblemVersion.archive)
                           .where(ProblemVersion.content_hash == v.content_hash))
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        names = tar.getnames()
        toml = tar.extractfile("triple/problem.toml").read().decode()
    assert "triple/reference.py" in names
    assert 'reference = "reference.py"' in toml
    # Exported, it is a package of its own, and packs to the very same bytes.
    out = problems.export(ctx, "triple", tmp_path / "export")
    assert out == tmp_path / "export" / "triple"
    again = archives.pack(out)
    try:
        assert again.content_hash == v.content_hash
        # The folder and its stored copy are one package to the judge: what `problems
        # prepare` computes for the folder (warm-ups' compilation, trusted outputs, keyed
        # by the package's hash) is what a service judging the stored copy looks for.
        from judge import load_package

        assert again.package.content_hash == load_package(pkg).content_hash
    finally:
        again.cleanup()


def test_export_refuses_to_overwrite(ctx, tmp_path):
    problems.export(ctx, "double", tmp_path)
    with pytest.raises(Conflict):
        problems.export(ctx, "double", tmp_path)
    assert problems.export(ctx, "double", tmp_path, force=True).is_dir()
    with pytest.raises(NotFound):
        problems.export(ctx, "double", tmp_path / "v9", version=9)


def test_a_broken_package_is_refused_with_every_defect(ctx, tmp_path):
    pkg = copy_package(DOUBLE, tmp_path, "broken", difficulty='"impossible"')
    (pkg / "statement.md").unlink()
    with pytest.raises(PackageRejected) as e:
        problems.store(ctx, pkg, mode="add", validator=None)
    text = "\n".join(e.value.reasons)
    assert "statement.md" in text and "difficulty" in text


def test_a_failing_validation_stores_nothing(ctx, tmp_path):
    pkg = copy_package(DOUBLE, tmp_path, "triple")
    with pytest.raises(PackageRejected, match="failed validation"):
        problems.store(ctx, pkg, mode="add", validator=lambda p: ["accepted/x.py: got WA"])
    with pytest.raises(NotFound):
        problems.get_problem(ctx, "triple")


@pytest.mark.sandbox
def test_add_validates_in_the_sandbox(ctx, tmp_path):
    pkg = copy_package(DOUBLE, tmp_path, "triple")
    (pkg / "submissions" / "accepted" / "wrong.py").write_text(
        "def double(x):\n    return 3 * x.reshape(-1)\n")
    with pytest.raises(PackageRejected) as e:
        problems.store(ctx, pkg, mode="add", validator=problems.sandbox_validator(ctx))
    assert any("accepted/wrong.py" in r and "WA" in r for r in e.value.reasons)
    (pkg / "submissions" / "accepted" / "wrong.py").unlink()
    v = problems.store(ctx, pkg, mode="add", validator=problems.sandbox_validator(ctx))
    assert v.created


def test_materialise_once_per_hash_and_check_it(ctx, tmp_path):
    v = problems.store(ctx, copy_package(DOUBLE, tmp_path, "triple"), mode="add",
                       validator=None)
    with ctx.db.transaction() as s:
        vid, archive = s.execute(select(ProblemVersion.id, ProblemVersion.archive)
                                 .where(ProblemVersion.content_hash == v.content_hash)).one()
    root = tmp_path / "cache"
    calls = []

    def fetch():
        calls.append(1)
        return archive

    folder = archives.materialise(root, v.content_hash, "triple", fetch)
    assert folder == root / v.content_hash / "triple" and (folder / "reference.py").is_file()
    assert archives.materialise(root, v.content_hash, "triple", fetch) == folder
    assert len(calls) == 1
    with pytest.raises(RuntimeError, match="corrupt"):
        archives.materialise(tmp_path / "other", v.content_hash, "triple",
                             lambda: archive[:-10] + b"0" * 10)
    pkg = problems.load_version(ctx, vid)
    assert pkg.slug == "triple" and pkg.entry_point == "double"


def test_sync_bundled_adds_the_missing_and_skips_the_broken(ctx, tmp_path):
    root = tmp_path / "bundled"
    copy_package(DOUBLE, root, "double")
    copy_package(DOUBLE, root, "triple")
    (copy_package(DOUBLE, root, "broken") / "generator.py").unlink()
    added = problems.sync_bundled(ctx, root)
    assert [v.slug for v in added] == ["triple"]
    assert problems.sync_bundled(ctx, root) == []
    assert [p["slug"] for p in problems.list_problems(ctx)] == ["double", "triple"]

