"""`tensorjudge problems ...`: problem packages, bundled and in the database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import admin_context, database_configured, fail, open_sandbox, service_call
from app.settings import get_settings

if TYPE_CHECKING:
    from judge import Package

problems_cli = typer.Typer(no_args_is_help=True, help="Problem packages.")


@problems_cli.command("list")
def problems_list(
    bundled: Annotated[bool, typer.Option("--bundled", help="the package folders in the "
                                          "problems directory, not the database")] = False,
) -> None:
    """The problems in the database (when one is set up), else the bundled packages."""
    if not bundled and database_configured():
        from app.services import problems

        ctx = admin_context()
        rows = problems.list_problems(ctx)
        if not rows:
            typer.echo("no problems in the database (tensorjudge problems add PATH)")
        for row in rows:
            typer.echo(f"{row['slug']:24} v{row['version']:<3} {row['difficulty']:7} "
                       f"{'/'.join(row['frameworks']):17} {row['title']}")
        return
    from judge import PackageError, discover, load_package

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
    from judge import discover, validate_package

    if all_ == (path is not None):
        fail("give a PATH or --all")
    paths = discover(get_settings().problems_dir) if all_ else [path]
    sandbox = open_sandbox()
    failed = 0

    def show(c) -> None:  # noqa: ANN001
        mark = "ok  " if c.ok else "FAIL"
        typer.echo(f"  {mark} {c.what:44} {c.detail}")

    for p in paths:
        assert p is not None
        typer.echo(f"{p}")
        report = validate_package(p, sandbox, parallel=parallel, progress=show)
        failed += not report.ok
        if report.mutation is not None and report.mutation.suggested:
            from judge import render_mutation_report

            # The survivors and the tests that would kill them (`problems mutants SLUG`).
            typer.echo(render_mutation_report(report.mutation, all_killed=False))
        typer.echo(f"  => {'valid' if report.ok else 'INVALID'}")
    if failed:
        fail(f"{failed} of {len(paths)} packages invalid", 1)


def _packages(path: Path | None, all_: bool) -> Iterator[Package]:
    """The package at PATH, or every bundled one with --all, loaded (a broken one fails)."""
    from judge import PackageError, discover, load_package

    if all_ == (path is not None):
        fail("give a PATH or --all")
    for p in discover(get_settings().problems_dir) if all_ else [path]:
        assert p is not None
        try:
            yield load_package(p)
        except PackageError as e:
            fail(str(e))


@problems_cli.command("calibrate")
def problems_calibrate(
    path: Annotated[Path | None, typer.Argument(help="a package folder")] = None,
    all_: Annotated[bool, typer.Option("--all", help="every bundled package")] = False,
    runs: Annotated[int, typer.Option(min=1, max=20, help="judgements of each accepted "
                                      "submission")] = 3,
) -> None:
    """Measure what each accepted submission spends (judged alone, RUNS times, the most
    kept) and write the package's calibration.toml: the limits problem.toml leaves out are
    `multiple` times the slowest figure (docs/judging.md, "Limits"). Run it on a quiet
    machine, and again after an accepted submission changes (validation says when)."""
    from judge import calibrate_package, load_package

    sandbox = open_sandbox()
    for package in _packages(path, all_):
        typer.echo(f"{package.slug}")

        def show(label: str, spent) -> None:  # noqa: ANN001
            typer.echo(f"  {label:48} {spent.test_ms:8.0f} ms per test  "
                       f"{spent.compile_ms:8.0f} ms compiling")

        try:
            calibrate_package(package, sandbox, runs=runs, progress=show)
        except RuntimeError as e:
            fail(f"{package.slug}: {e}")
        limits = load_package(package.path).limits
        typer.echo(f"  time per test: {limits.time_ms.value} ms ({limits.time_ms.basis})")
        typer.echo(f"  compile budget: {limits.compile_budget_ms.value} ms "
                   f"({limits.compile_budget_ms.basis})")


@problems_cli.command("prepare")
def problems_prepare(
    path: Annotated[Path | None, typer.Argument(help="a package folder")] = None,
    all_: Annotated[bool, typer.Option("--all", help="every bundled package")] = False,
) -> None:
    """Do now what a problem's first submissions would otherwise wait for: the JAX
    compilation cache of every kind's warm-up, and the trusted expected outputs (and the
    known mistakes', and the reference's mutants'). `./dev setup` runs it for the bundled
    problems; it is quick once done."""
    from judge import prepare_ahead

    sandbox = open_sandbox()
    for package in _packages(path, all_):
        done = prepare_ahead(package, sandbox)
        failed = f", {done.kinds_failed} not filled" if done.kinds_failed else ""
        typer.echo(f"{done.slug:24} compilation cache: {done.kinds} kinds{failed} "
                   f"({done.compile_cache_s:.1f} s); trusted outputs "
                   f"({done.trusted_outputs_s:.1f} s)")


@problems_cli.command("mutants")
def problems_mutants(
    slug: Annotated[str, typer.Argument(help="a bundled problem's slug, or a package folder")],
    json_: Annotated[bool, typer.Option("--json", help="the report as JSON")] = False,
    killed: Annotated[bool, typer.Option("--killed/--no-killed", help="list the killed "
                                         "mutants too")] = True,
    markdown: Annotated[bool, typer.Option("--markdown", help="as a section of "
                                           "docs/mutants.md")] = False,
) -> None:
    """Every mutant of the reference (a classic mistake made on purpose) on every test: killed,
    survived, equivalent or accepted; the score; for each survivor, inputs that would kill it;
    the tolerance checked both ways (float16 must fail it) and the smallest margin."""
    import json

    from judge import (
        PackageError,
        load_package,
        markdown_mutation_report,
        mutation_report,
        render_mutation_report,
    )

    folder = Path(slug) if Path(slug).is_dir() else get_settings().problems_dir / slug
    if not (folder / "problem.toml").is_file():
        fail(f"no problem {slug!r} (a bundled slug or a package folder)")
    try:
        package = load_package(folder)
    except PackageError as e:
        fail(str(e))
    report = mutation_report(package)
    if json_:
        typer.echo(json.dumps(report.to_json(), indent=2))
    elif markdown:
        typer.echo(markdown_mutation_report(report))
    else:
        typer.echo(render_mutation_report(report, all_killed=killed))


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

    ctx = admin_context()

    def show(c) -> None:  # noqa: ANN001
        typer.echo(f"  {'ok  ' if c.ok else 'FAIL'} {c.what:44} {c.detail}")

    typer.echo(f"validating {path}")
    v = service_call(problems.store, ctx, path, mode=mode,
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

    ctx = admin_context()
    target = service_call(problems.export, ctx, slug, dest, version=version, force=force)
    typer.echo(str(target))


@problems_cli.command("versions")
def problems_versions(slug: Annotated[str, typer.Argument(help="problem slug")]) -> None:
    """A problem's versions and how many submissions each has."""
    from app.services import problems

    for v in service_call(problems.versions, admin_context(), slug):
        typer.echo(f"v{v['version']:<3} {v['content_hash'][:12]}  {v['created_at']}  "
                   f"{v['submissions']} submissions")
