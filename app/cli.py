"""The `tensorjudge` command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from app.settings import get_settings

cli = typer.Typer(add_completion=False, no_args_is_help=True, help="tensorjudge: an online "
                  "judge for machine-learning implementation problems.")
problems_cli = typer.Typer(no_args_is_help=True, help="Problem packages.")
cli.add_typer(problems_cli, name="problems")


def _fail(msg: str, code: int = 2) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def _sandbox():  # noqa: ANN202
    from judge.sandbox import SandboxUnavailable, make_sandbox

    try:
        return make_sandbox(get_settings().sandbox)
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
    from judge.engine import judge
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
    result = judge(package, code, _sandbox(), samples_only=samples)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        typer.echo(result_table(result))
    if result.verdict.value == "IE":
        raise typer.Exit(1)


@problems_cli.command("list")
def problems_list() -> None:
    """The bundled problems."""
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


def main() -> None:
    try:
        cli()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
