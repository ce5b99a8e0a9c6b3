"""Runs a package's reference on its tests, in its own process (`python -m
judge.trusted.reference_run`, a JSON request on stdin), and stores each flat float64 output.

An item may name another trusted file (`module`: a packaged wrong answer, a known mistake; or
a mutant of the reference written to the cache, by absolute path). Such a file failing on a
test is recorded (`<key>.failed`, "ExceptionType: message"), not fatal: the mistake is then
simply not known on that test. An item may carry its own inputs (`spec`: JSON of `seed` and
`params`, its `redraw` and the sub-layers it switches `off`, for inputs that are no test of
the package) and a `precision`
(`float16` or `bfloat16`: the float32 inputs, and a Flax model's variables, narrowed to it; the
tolerance's check in the other direction). A test's `redraw` is applied to every item of it, as
the sandbox applies it to a submission (judge/portable/flax_redraw.py)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from judge.package.location import switched_off
from judge.portable.flax_redraw import ParamRedraw
from judge.portable.flax_variables import InitRecorder

WATCH_S = 0.5  # how often it checks that the judge that asked is still there


def to_float64(out: Any) -> np.ndarray:
    mod = type(out).__module__ or ""
    if mod.startswith("torch"):
        out = out.detach().cpu().numpy()
    return np.asarray(out, dtype=np.float64).reshape(-1)


def widen(value: Any) -> Any:
    """float32 inputs as float64, for the precision check of the tolerance."""
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value.astype(np.float64)
    if isinstance(value, dict):
        return {k: widen(v) for k, v in value.items()}
    return value


def narrow(value: Any, dtype: Any) -> Any:
    """float32 inputs as `dtype` (float16, or ml_dtypes' bfloat16 that JAX reads)."""
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value.astype(dtype)
    if isinstance(value, dict):
        return {k: narrow(v, dtype) for k, v in value.items()}
    return value


@contextlib.contextmanager
def low_precision(name: str) -> Any:
    """Flax models keep float32 parameters whatever their inputs are (`param_dtype`), and
    promote to them: while this is open, `Module.apply` narrows the variables too, so the
    layers compute in `name`."""
    if "flax" not in sys.modules:
        yield
        return
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    dtype = jnp.dtype(name)
    original = nn.Module.apply

    def apply(self: Any, variables: Any, *args: Any, **kwargs: Any) -> Any:
        def cast(a: Any) -> Any:
            floating = hasattr(a, "dtype") and jnp.issubdtype(a.dtype, jnp.floating)
            return a.astype(dtype) if floating else a
        return original(self, jax.tree_util.tree_map(cast, variables),
                        *jax.tree_util.tree_map(cast, args), **kwargs)

    nn.Module.apply = apply  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module.apply = original  # type: ignore[method-assign]


def _lower_priority() -> None:
    """Work no job waits for. This process leads a session of its own (run_trusted), and the
    kernel shares the CPU between sessions' autogroups first: both are lowered."""
    os.nice(15)
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text("15")


def _end_with(judge_pid: int) -> None:
    """Exit once the judge that asked is gone (this process is then another's child): its
    outputs are stored for whoever asks again, and a stopped judge leaves nothing running."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == judge_pid:
            time.sleep(WATCH_S)
        os._exit(3)

    threading.Thread(target=watch, name="judge-watch", daemon=True).start()


def main() -> None:
    request = json.loads(sys.stdin.read())
    if request.get("judge_pid"):
        _end_with(int(request["judge_pid"]))
    if request.get("background"):
        _lower_priority()
    float64 = bool(request["float64"])
    if float64:
        import jax

        jax.config.update("jax_enable_x64", True)
    from judge.package import load_module, load_package

    package = load_package(request["package"], check_generator=False)
    entries: dict[str | None, Any] = {}

    redraw = ParamRedraw()

    def entry_of(module: str | None) -> Any:
        if module not in entries:
            path = package.reference_path if module is None else package.path / module
            loaded = load_module(path, f"tj_trusted_{len(entries)}")
            entries[module] = getattr(loaded, package.entry_point)
            redraw.install()  # once Flax is imported, if it is
        return entries[module]

    # The reference's Flax variables (paths and shapes), recorded as the sandbox records a
    # submission's, for the parameter-tree diagnosis (judge/diagnosis/params.py).
    recorder = InitRecorder()
    by_name = {t.name: t for t in package.tests}
    out_dir = Path(request["out_dir"])
    for item in request["tests"]:
        if item.get("spec"):
            spec = json.loads(item["spec"])
            args = package.generator.generate(spec["seed"], **spec["params"])
            drawn = spec.get("redraw")
            if spec.get("off") is not None and package.manifest.location is not None:
                args, drawn = switched_off(package.manifest.location, tuple(spec["off"]),
                                           args, drawn, "flax" in package.manifest.frameworks)
        else:
            test = by_name[item["name"]]
            args = package.generator.generate(test.seed, **test.params)
            drawn = test.redraw.model_dump() if test.redraw else None
        if float64:
            args = widen(args)
        precision = item.get("precision")
        if precision:
            import ml_dtypes

            args = narrow(args, np.dtype(getattr(ml_dtypes, precision, precision)))
        module = item.get("module")
        if module is None:
            entry = entry_of(None)
            recorder.install()
            recorder.take()
            with redraw.applied(drawn):
                flat = to_float64(entry(**args))
            if not float64:
                _write(out_dir / f"{item['key']}.variables.json",
                       json.dumps(recorder.take()).encode())
        else:
            try:
                entry = entry_of(module)  # imported first: low_precision looks for Flax
                with (low_precision(precision) if precision else contextlib.nullcontext(),
                      redraw.applied(drawn)):
                    flat = to_float64(entry(**args))
            except Exception as e:  # noqa: BLE001 - a mistake may fail where it fails
                _write(out_dir / f"{item['key']}.failed", f"{type(e).__name__}: {e}".encode())
                continue
        fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            np.save(f, flat, allow_pickle=False)
        os.replace(tmp, out_dir / f"{item['key']}.npy")


def _write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
