"""`tensorjudge judge`: judging a local file offline, and printing the result."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import fail, find_package, open_sandbox

if TYPE_CHECKING:
    from judge import JudgeResult


def judge_cmd(
    file: Annotated[Path, typer.Argument(help="the submission, a Python file")],
    problem: Annotated[str, typer.Option("--problem", "-p", help="problem slug")],
    as_json: Annotated[bool, typer.Option("--json", help="print the result object")] = False,
    samples: Annotated[bool, typer.Option("--samples", help="sample tests only (Run)")] = False,
) -> None:
    """Judge a local file with the same sandbox and comparison as the service."""
    from app.render import result_table
    from judge import PackageError, fill_compile_cache, judge, load_package

    try:
        code = file.read_bytes().decode("utf-8")
    except OSError as e:
        fail(f"cannot read {file}: {e.strerror}")
    except UnicodeDecodeError:
        fail(f"{file} is not UTF-8 text")
    try:
        package = load_package(find_package(problem))
    except PackageError as e:
        fail(str(e))
    sandbox = open_sandbox()
    fill_compile_cache(package, sandbox)
    result = judge(package, code, sandbox, samples_only=samples)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        typer.echo(result_table(result) + findings_text(result), nl=False)
    if result.verdict.value == "IE":
        raise typer.Exit(1)


def findings_text(result: JudgeResult) -> str:
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
