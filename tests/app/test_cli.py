"""The admin command line against the test databases."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.services import queue, submissions, users
from app.settings import Settings, get_settings
from judge import SandboxConfig
from tests.app.tj_testlib import AC_CODE, DOUBLE, FIXTURE_PROBLEMS, PASSWORD, copy_package


@pytest.fixture
def run(ctx, monkeypatch):
    st = ctx.settings
    env = {
        "TENSORJUDGE_DATABASE_URL": ctx.db.url,
        "TENSORJUDGE_DATA_DIR": str(st.data_dir),
        "TENSORJUDGE_CACHE_DIR": str(st.cache_dir),
        "TENSORJUDGE_PROBLEMS_DIR": str(FIXTURE_PROBLEMS),
        "TENSORJUDGE_SECRET_KEY": st.secret_key,
        "TENSORJUDGE_ARGON2_TIME_COST": "1",
        "TENSORJUDGE_ARGON2_MEMORY_KIB": "1024",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    get_settings.cache_clear()
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, code: int = 0):
        r = runner.invoke(cli, list(args), input=input)
        assert r.exit_code == code, (args, r.exit_code, r.output, r.exception)
        return r.output

    yield invoke
    get_settings.cache_clear()


def test_users_create(run, ctx):
    out = run("users", "create", "boss", "--admin", "--password-stdin", input=PASSWORD + "\n")
    assert "created" in out and "admin" in out
    run("users", "create", "carol", "--password-stdin", input=PASSWORD + "\n")
    assert users.authenticate(ctx, "boss", PASSWORD).is_admin
    assert not users.authenticate(ctx, "carol", PASSWORD).is_admin
    out = run("users", "create", "carol", "--password-stdin", input=PASSWORD + "\n", code=1)
    assert "taken" in out
    out = run("users", "create", "dave", "--password-stdin", input="short\n", code=1)
    assert "password" in out
    assert "boss" in run("users", "list")


def test_users_create_prompts(run, ctx):
    run("users", "create", "erin", input=f"{PASSWORD}\n{PASSWORD}\n")
    assert users.authenticate(ctx, "erin", PASSWORD).username == "erin"


@pytest.mark.sandbox
def test_problems_add_update_list_export(run, ctx, tmp_path):
    pkg = copy_package(DOUBLE, tmp_path / "src", "triple")
    out = run("problems", "add", str(pkg))
    assert "ok   reference" in out and "triple: version 1 stored" in out
    run("problems", "add", str(pkg), code=1)
    assert "unchanged" in run("problems", "update", str(pkg))
    listing = run("problems", "list")
    assert "triple" in listing and "v1" in listing
    assert "double" in run("problems", "list", "--bundled")
    out = run("problems", "export", "triple", str(tmp_path / "out"))
    assert (tmp_path / "out" / "triple" / "problem.toml").is_file()
    bad = copy_package(DOUBLE, tmp_path / "bad", "triple", title='"Triple, broken"')
    (bad / "submissions" / "accepted" / "plain.py").write_text("def double(x):\n    return x\n")
    out = run("problems", "update", str(bad), code=1)
    assert "FAIL accepted/plain.py" in out and "failed validation" in out
    assert "v1" in run("problems", "versions", "triple")


def test_problems_add_refuses_a_broken_package(run, tmp_path):
    pkg = copy_package(DOUBLE, tmp_path, "triple")
    (pkg / "generator.py").unlink()
    out = run("problems", "add", str(pkg), code=1)
    assert "generator.py: missing" in out


def test_rejudge(run, ctx):
    user = users.create_user(ctx, "alice", PASSWORD)
    sid = submissions.create(ctx, user, "double", AC_CODE)["id"]
    job = queue.claim(ctx, "w")
    queue.complete(ctx, job, {"verdict": "WA", "score": {"passed": 0, "total": 3},
                              "message": None, "tests": []}, 1.0)
    assert "1 submissions queued again" in run("rejudge", "--submission", str(sid))
    assert submissions.get(ctx, user, sid)["status"] == "queued"
    assert "1 submissions queued again" in run("rejudge", "--problem", "double")
    run("rejudge", code=2)
    assert "no problem" in run("rejudge", "--problem", "nope", code=1)
    assert "no submission" in run("rejudge", "--submission", "99999", code=1)
    # The old judgement stays.
    assert [j["verdict"] for j in submissions.get(ctx, user, sid)["judgements"]] == ["WA"]


def test_db_upgrade(run, tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORJUDGE_DATABASE_URL", f"sqlite:///{tmp_path / 'new.db'}")
    get_settings.cache_clear()
    assert "database: empty" in run("db", "current")
    assert "database at revision" in run("db", "upgrade")
    assert "already current" in run("db", "upgrade")


def test_commands_refuse_an_unmigrated_database(run, tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORJUDGE_DATABASE_URL", f"sqlite:///{tmp_path / 'new.db'}")
    get_settings.cache_clear()
    out = run("users", "list", code=2)
    assert "tensorjudge db upgrade" in out


@pytest.mark.sandbox
def test_judge_still_works_without_a_database(run, tmp_path):
    f = tmp_path / "s.py"
    f.write_text(AC_CODE)
    out = run("judge", "--problem", "double", str(f), "--json")
    assert json.loads(out)["verdict"] == "AC"


@pytest.mark.sandbox
def test_judge_prints_what_went_wrong(run, tmp_path):
    f = tmp_path / "s.py"
    f.write_text("def double(x):\n    return x + 1\n")
    out = run("judge", "--problem", "double", str(f))
    assert "What went wrong:" in out
    # The fixture package's own mistake, named with its title and the tests it explains.
    part = out.split("What went wrong:", 1)[1]
    assert "[known-mistake] Adds one instead of doubling" in part
    assert "tests: " in part
    f.write_text(AC_CODE)
    assert "What went wrong" not in run("judge", "--problem", "double", str(f))


def test_every_sandbox_setting_reaches_the_sandbox_config(monkeypatch):
    """The settings feed the sandbox in one place, for serve, the workers, the commands,
    validation and the benchmark alike: a setting left out there would be ignored by all."""
    env = {"SANDBOX": "docker", "POOL_SIZE": "5", "POOL_MAX_IDLE": "9", "POOL_MAX_IDLE_MB": "999",
           "POOL_SPLIT": "false", "COMPILE_CACHE": "false", "BWRAP": "/opt/bwrap",
           "FORK_SERVER": "false", "FORK_WARMED": "false", "DOCKER_HOST": "tcp://engine:2375",
           "DOCKER_IMAGE": "sandbox:1", "DOCKER_CACHE_VOLUME": "cache",
           "LIBRARY_PATCHES": "false"}
    for k, v in env.items():
        monkeypatch.setenv(f"TENSORJUDGE_{k}", v)
    config = Settings().sandbox_config()
    assert config == SandboxConfig(
        kind="docker", pool_per_key=5, pool_max_idle=9, pool_max_idle_mb=999, pool_split=False,
        compile_cache=False, bwrap="/opt/bwrap", fork_server=False, fork_warmed=False,
        docker_host="tcp://engine:2375", docker_image="sandbox:1", docker_cache_volume="cache",
        library_patches=False)
    # A field added to the config is fed from the settings too (the cache's root aside: the
    # judge finds it).
    fed = {f.name for f in fields(config) if getattr(config, f.name) != getattr(SandboxConfig(),
                                                                                  f.name)}
    assert fed == {f.name for f in fields(SandboxConfig)} - {"cache_root"}


def test_an_empty_compile_cache_root_means_the_default(monkeypatch):
    monkeypatch.setenv("TENSORJUDGE_COMPILE_CACHE_ROOT", "")
    assert Settings().compile_cache_root is None
    monkeypatch.setenv("TENSORJUDGE_COMPILE_CACHE_ROOT", "/srv/cache")
    assert Settings().compile_cache_root == Path("/srv/cache")


def test_judge_opens_the_configured_sandbox(run, tmp_path, monkeypatch):
    f = tmp_path / "s.py"
    f.write_text(AC_CODE)
    monkeypatch.setenv("TENSORJUDGE_BWRAP", str(tmp_path / "no-bwrap"))
    get_settings.cache_clear()
    out = run("judge", "--problem", "double", str(f), code=2)
    assert "no-bwrap" in out and "was not found" in out


@pytest.mark.sandbox
def test_problems_prepare(run):
    """`problems prepare`: the trusted outputs computed (and the compilation cache filled) for
    a package; a second time it finds them done."""
    from judge import load_package
    from judge.trusted.expected import cache_dir, test_key
    from tests.conftest import FIXTURES

    folder = FIXTURES / "double"
    package = load_package(folder)
    out = run("problems", "prepare", str(folder))
    assert out.startswith("double ") and "not filled" not in out
    assert all((cache_dir() / f"{test_key(package, t)}.npy").is_file() for t in package.tests)
    assert "trusted outputs (0.0 s)" in run("problems", "prepare", "--all")
    run("problems", "prepare", code=2)  # neither a folder nor --all


def test_problems_mutants(run, tmp_path):
    """`problems mutants` on a package folder: the report in words, and as JSON."""
    from tests.conftest import FIXTURES

    folder = str(FIXTURES.parent / "mutation" / "norm-attention")
    out = json.loads(run("problems", "mutants", folder, "--json"))
    assert set(out) == {"problem", "score", "mutants", "float16", "margin"}
    assert out["problem"] == "norm-attention" and out["float16"]["verdict"] == "WA"
    survivors = [m for m in out["mutants"] if m["status"] == "survived"]
    assert out["score"] < 1 and survivors
    text = run("problems", "mutants", folder, "--no-killed")
    assert text.startswith(f"norm-attention: score {out['score']:.2f}")
    assert all(m["id"] in text for m in survivors) and "[[tests]]" in text
    assert "killed     " not in text
    run("problems", "mutants", "no-such-problem", code=2)
