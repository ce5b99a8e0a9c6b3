"""The `tensorjudge` command line."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.settings import get_settings

if TYPE_CHECKING:
    from judge.verdicts import JudgeResult

cli = typer.Typer(add_completion=False, no_args_is_help=True, help="tensorjudge: an online "
                  "judge for machine-learning implementation problems.")
problems_cli = typer.Typer(no_args_is_help=True, help="Problem packages.")
cli.add_typer(problems_cli, name="problems")
users_cli = typer.Typer(no_args_is_help=True, help="User accounts.")
cli.add_typer(users_cli, name="users")
db_cli = typer.Typer(no_args_is_help=True, help="The database.")
cli.add_typer(db_cli, name="db")


def _fail(msg: str, code: int = 2) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def _sandbox(pooled: bool = False):  # noqa: ANN202
    """A fresh sandbox per judgement for one-off commands; a pool of prepared ones for
    workers."""
    from app.worker import make_worker_sandbox
    from judge.sandbox import SandboxUnavailable, make_sandbox

    st = get_settings()
    try:
        if pooled:
            return make_worker_sandbox(st)
        return make_sandbox(st.sandbox, compile_cache=st.compile_cache, bwrap=st.bwrap,
                            docker_host=st.docker_host, docker_image=st.docker_image,
                            docker_cache_volume=st.docker_cache_volume)
    except SandboxUnavailable as e:
        _fail(str(e))


def _find_package(slug: str) -> Path:
    root = get_settings().problems_dir
    path = root / slug
    if not (path / "problem.toml").is_file():
        from judge.package import discover

        known = ", ".join(p.name for p in discover(root)) if root.is_dir() else "none"
        _fail(f"no problem {slug!r} in {root} (known: {known})")
    return path


@cli.command("judge")
def judge_cmd(
    file: Annotated[Path, typer.Argument(help="the submission, a Python file")],
    problem: Annotated[str, typer.Option("--problem", "-p", help="problem slug")],
    as_json: Annotated[bool, typer.Option("--json", help="print the result object")] = False,
    samples: Annotated[bool, typer.Option("--samples", help="sample tests only (Run)")] = False,
) -> None:
    """Judge a local file with the same sandbox and comparison as the service."""
    from app.render import result_table
    from judge.engine import fill_compile_cache, judge
    from judge.package import PackageError, load_package

    try:
        code = file.read_bytes().decode("utf-8")
    except OSError as e:
        _fail(f"cannot read {file}: {e.strerror}")
    except UnicodeDecodeError:
        _fail(f"{file} is not UTF-8 text")
    try:
        package = load_package(_find_package(problem))
    except PackageError as e:
        _fail(str(e))
    sandbox = _sandbox()
    fill_compile_cache(package, sandbox)
    result = judge(package, code, sandbox, samples_only=samples)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        typer.echo(result_table(result) + _findings_text(result), nl=False)
    if result.verdict.value == "IE":
        raise typer.Exit(1)


def _findings_text(result: JudgeResult) -> str:
    """The "What went wrong" part of the human output: each finding, most certain first."""
    if not result.diagnosis:
        return ""
    out = "\nWhat went wrong:\n"
    for f in result.diagnosis:
        tests = ", ".join(f.tests[:6]) + (f" and {len(f.tests) - 6} more" if len(f.tests) > 6
                                          else "")
        out += f"\n  [{f.kind}] {f.title}\n"
        out += textwrap.fill(f.detail, width=92, initial_indent="    ",
                             subsequent_indent="    ") + "\n"
        if tests:
            out += f"    tests: {tests}\n"
    return out


@problems_cli.command("list")
def problems_list(
    bundled: Annotated[bool, typer.Option("--bundled", help="the package folders in the "
                                          "problems directory, not the database")] = False,
) -> None:
    """The problems in the database (when one is set up), else the bundled packages."""
    if not bundled and _database_configured():
        from app.services import problems

        ctx = _ctx()
        rows = problems.list_problems(ctx)
        if not rows:
            typer.echo("no problems in the database (tensorjudge problems add PATH)")
        for row in rows:
            typer.echo(f"{row['slug']:24} v{row['version']:<3} {row['difficulty']:7} "
                       f"{'/'.join(row['frameworks']):17} {row['title']}")
        return
    from judge.package import PackageError, discover, load_package

    root = get_settings().problems_dir
    for path in discover(root):
        try:
            p = load_package(path, check_generator=False)
        except PackageError as e:
            typer.echo(f"{path.name:24} BROKEN ({len(e.defects)} defects)")
            continue
        hidden = len(p.tests) - len(p.samples)
        typer.echo(f"{p.slug:24} {p.manifest.difficulty:7} {'/'.join(p.manifest.frameworks):17} "
                   f"{len(p.samples)} samples {hidden:2} hidden  {p.title}")


@problems_cli.command("validate")
def problems_validate(
    path: Annotated[Path | None, typer.Argument(help="a package folder")] = None,
    all_: Annotated[bool, typer.Option("--all", help="every bundled package")] = False,
    parallel: Annotated[int, typer.Option(help="submissions judged at once")] = 2,
) -> None:
    """Run the reference and every packaged submission; fail unless each gets its verdict."""
    from judge.package import discover
    from judge.validate import validate

    if all_ == (path is not None):
        _fail("give a PATH or --all")
    paths = discover(get_settings().problems_dir) if all_ else [path]
    sandbox = _sandbox()
    failed = 0

    def show(c) -> None:  # noqa: ANN001
        mark = "ok  " if c.ok else "FAIL"
        typer.echo(f"  {mark} {c.what:44} {c.detail}")

    for p in paths:
        assert p is not None
        typer.echo(f"{p}")
        report = validate(p, sandbox, parallel=parallel, progress=show)
        failed += not report.ok
        typer.echo(f"  => {'valid' if report.ok else 'INVALID'}")
    if failed:
        _fail(f"{failed} of {len(paths)} packages invalid", 1)


# --- the service -------------------------------------------------------------------------


def _database_configured() -> bool:
    st = get_settings()
    return bool(st.database_url) or (st.data_dir / "tensorjudge.db").is_file()


def _ctx():  # noqa: ANN202
    """The service context for an admin command. The embedded database is created or
    migrated on the spot; a configured one must already be current (`db upgrade`)."""
    from app.context import Context
    from app.db import migrate
    from app.logs import setup_logging

    st = get_settings()
    setup_logging("WARNING", "text")
    ctx = Context.create(st)
    try:
        if st.is_embedded_database:
            migrate.upgrade(ctx.db)
        else:
            migrate.require_current(ctx.db)
    except migrate.SchemaOutdated as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001
        _fail(f"cannot use the database: {e}")
    return ctx


def _service_call(fn, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
    from app.services.errors import ServiceError
    from app.services.problems import PackageRejected

    try:
        return fn(*args, **kwargs)
    except PackageRejected as e:
        _fail(str(e), 1)
    except ServiceError as e:
        _fail(e.message, 1)


@cli.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    workers: Annotated[int | None, typer.Option(
        help="embedded judge workers (default TENSORJUDGE_WORKERS, else 1)")] = None,
) -> None:
    """Web pages, REST API and N embedded judge workers. Migrates the schema and loads the
    bundled problems that the database does not have yet."""
    import uvicorn

    from app.context import Context
    from app.db import migrate
    from app.logs import setup_logging
    from app.main import create_app
    from app.services import problems

    st = get_settings()
    setup_logging(st.log_level, st.log_format)
    n = st.workers if workers is None else workers
    sandbox = _sandbox(pooled=True) if n > 0 else None
    ctx = Context.create(st)
    try:
        migrate.upgrade(ctx.db)
    except Exception as e:  # noqa: BLE001
        _fail(f"cannot migrate the database: {e}")
    added = problems.sync_bundled(ctx)
    for v in added:
        typer.echo(f"loaded bundled problem {v.slug} (version {v.number})", err=True)
    app = create_app(st, workers=n, sandbox=sandbox, warm_samples=True, ctx=ctx)
    uvicorn.run(app, host=host, port=port, log_config=None, timeout_graceful_shutdown=10)


@cli.command("worker")
def worker_cmd(
    concurrency: Annotated[int, typer.Option(help="submissions judged at once")] = 1,
) -> None:
    """A standalone judge worker against the configured database."""
    import signal

    from app.logs import setup_logging
    from app.worker import WorkerPool

    if concurrency < 1:
        _fail("--concurrency must be at least 1")
    st = get_settings()
    sandbox = _sandbox(pooled=True)
    ctx = _ctx()
    setup_logging(st.log_level, st.log_format)
    pool = WorkerPool(ctx, concurrency, kind="standalone", sandbox=sandbox)
    signals = 0

    def on_signal(signum, _frame) -> None:  # noqa: ANN001
        nonlocal signals
        signals += 1
        if signals > 1:  # a second signal: do not wait for the judgements in progress
            pool.abandon()
            sys.exit(128 + signum)
        pool.stopping.set()
        ctx.hub.queue_changed()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    pool.start()
    while not pool.stopping.wait(1.0):
        pass
    # Judging in progress finishes; a second signal cuts it short (the lease covers that).
    pool.stop()


@problems_cli.command("add")
def problems_add(path: Annotated[Path, typer.Argument(help="a package folder")]) -> None:
    """Validate a package (reference and packaged submissions) and add it as version 1."""
    _store(path, "add")


@problems_cli.command("update")
def problems_update(path: Annotated[Path, typer.Argument(help="a package folder")]) -> None:
    """Validate a changed package and add it as the problem's next version (submissions
    keep the version they were judged against)."""
    _store(path, "update")


def _store(path: Path, mode: str) -> None:
    from app.services import problems

    ctx = _ctx()

    def show(c) -> None:  # noqa: ANN001
        typer.echo(f"  {'ok  ' if c.ok else 'FAIL'} {c.what:44} {c.detail}")

    typer.echo(f"validating {path}")
    v = _service_call(problems.store, ctx, path, mode=mode,
                      validator=problems.sandbox_validator(ctx, progress=show))
    if v.created:
        typer.echo(f"{v.slug}: version {v.number} stored ({v.content_hash[:12]})")
    else:
        typer.echo(f"{v.slug}: unchanged, still version {v.number}")


@problems_cli.command("export")
def problems_export(
    slug: Annotated[str, typer.Argument(help="problem slug")],
    dest: Annotated[Path, typer.Argument(help="folder to write DEST/SLUG into")],
    version: Annotated[int | None, typer.Option(help="a version number (default: current)")]
    = None,
    force: Annotated[bool, typer.Option("--force", help="replace DEST/SLUG")] = False,
) -> None:
    """Write a stored version as a self-contained package folder DEST/SLUG."""
    from app.services import problems

    ctx = _ctx()
    target = _service_call(problems.export, ctx, slug, dest, version=version, force=force)
    typer.echo(str(target))


@problems_cli.command("versions")
def problems_versions(slug: Annotated[str, typer.Argument(help="problem slug")]) -> None:
    """A problem's versions and how many submissions each has."""
    from app.services import problems

    for v in _service_call(problems.versions, _ctx(), slug):
        typer.echo(f"v{v['version']:<3} {v['content_hash'][:12]}  {v['created_at']}  "
                   f"{v['submissions']} submissions")


def _read_password(password_stdin: bool) -> str:
    if password_stdin:
        pw = sys.stdin.readline().rstrip("\r\n")
    else:
        pw = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    return pw


@users_cli.command("create")
def users_create(
    name: Annotated[str, typer.Argument(help="username")],
    admin: Annotated[bool, typer.Option("--admin", help="an administrator")] = False,
    password_stdin: Annotated[bool, typer.Option(
        "--password-stdin", help="read the password from the first line of stdin")] = False,
) -> None:
    """Create a user (password from a prompt or --password-stdin)."""
    from app.services import users

    ctx = _ctx()
    u = _service_call(users.create_user, ctx, name, _read_password(password_stdin),
                      admin=admin)
    typer.echo(f"user {u.username} created (id {u.id}{', admin' if u.is_admin else ''})")


@users_cli.command("list")
def users_list() -> None:
    from app.services import users

    for u in users.list_users(_ctx()):
        typer.echo(f"{u.id:6} {u.username:32} {'admin' if u.is_admin else ''}")


@users_cli.command("set-password")
def users_set_password(
    name: Annotated[str, typer.Argument(help="username")],
    password_stdin: Annotated[bool, typer.Option("--password-stdin")] = False,
) -> None:
    from app.services import users

    _service_call(users.set_password, _ctx(), name, _read_password(password_stdin))
    typer.echo("password changed")


@users_cli.command("revoke-tokens")
def users_revoke_tokens(name: Annotated[str, typer.Argument(help="username")]) -> None:
    """Revoke every token of a user."""
    from app.services import users

    n = _service_call(users.revoke_all_tokens, _ctx(), name)
    typer.echo(f"{n} tokens revoked")


@cli.command("rejudge")
def rejudge_cmd(
    submission: Annotated[list[int] | None, typer.Option(
        "--submission", help="a submission id (repeatable)")] = None,
    problem: Annotated[str | None, typer.Option(
        "--problem", help="every submission of this problem")] = None,
    same_version: Annotated[bool, typer.Option(
        "--same-version", help="judge against the version each was judged against "
        "(default: the problem's current version)")] = False,
) -> None:
    """Queue submissions again; their old results are kept."""
    from app.services import submissions

    if bool(submission) == bool(problem):
        _fail("give --submission ID or --problem SLUG")
    ctx = _ctx()
    ids = list(submission or []) or _service_call(submissions.ids_of_problem, ctx, problem)
    n = _service_call(submissions.rejudge, ctx, ids, latest_version=not same_version)
    typer.echo(f"{n} submissions queued again")


@db_cli.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="target revision")] = "head",
) -> None:
    """Apply the migrations."""
    from app.context import Context
    from app.db import migrate

    st = get_settings()
    ctx = Context.create(st)
    before = migrate.current_revision(ctx.db)
    migrate.upgrade(ctx.db, revision)
    after = migrate.current_revision(ctx.db)
    typer.echo(f"database at revision {after}" + ("" if after != before
                                                  else " (already current)"))


@db_cli.command("current")
def db_current() -> None:
    """The schema revision of the database and the one this code needs."""
    from app.context import Context
    from app.db import migrate

    ctx = Context.create(get_settings())
    typer.echo(f"database: {migrate.current_revision(ctx.db) or 'empty'}; "
               f"code: {migrate.head_revision()}")


@cli.command("bench")
def bench_cmd(
    out: Annotated[Path, typer.Option(help="where the Markdown table goes")] = Path(
        "bench/RESULTS.md"),
    runs: Annotated[int, typer.Option(help="timed submissions per row")] = 10,
    baseline_runs: Annotated[int, typer.Option(help="the same, for the naive judge")] = 10,
    burst: Annotated[int, typer.Option(help="submissions in the burst")] = 50,
    problem: Annotated[list[str] | None, typer.Option(help="only these problems")] = None,
    rate: Annotated[float, typer.Option(
        help="sustained load: Flax submissions per second arriving at random (0: none)")] = 1.0,
    load_seconds: Annotated[float, typer.Option(
        help="sustained load: how long submissions keep arriving")] = 60.0,
    docker: Annotated[bool, typer.Option(
        help="also measure the docker sandbox backend (needs an engine and the images)")] = True,
) -> None:
    """Time POST-to-verdict through real servers: the judge as configured against a naive
    judge (fresh sandbox per submission, no pool, no cache), and the same judge with the
    docker backend; print and write the table."""
    from app.bench import run_bench

    text = run_bench(out, runs, baseline_runs, burst, problem,
                     progress=lambda m: typer.echo(m, err=True), with_docker=docker,
                     rate=rate, load_seconds=load_seconds)
    typer.echo(text)
    typer.echo(f"written to {out}", err=True)


def main() -> None:
    try:
        cli()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
