"""The structure of the variables a Flax `Module.init` returns (paths and shapes), recorded the
same way for a submission, inside the sandbox, and for the reference, in the trusted process:
the judge compares the two (judge/diagnosis/params.py).

Part of the runner's source too (judge/sandbox/sources.py), where it comes first: it imports
only the standard library and reaches Flax through `sys.modules`, once someone imported it.
"""

import contextlib
import sys
from typing import Any


class InitRecorder:
    """The structure of the variables the first Flax `Module.init` of each test returns:
    paths and shapes, in creation order, as plain data for the judge's comparison with the
    reference's. Installed only where Flax is imported already; it does not touch what
    `init` returns."""

    MAX_ENTRIES = 256

    def __init__(self) -> None:
        self.tree: list | None = None
        self.installed = False

    def install(self) -> None:
        linen = sys.modules.get("flax.linen")
        if self.installed or linen is None:
            return
        recorder = self
        cls = linen.Module
        for name in ("init", "init_with_output"):
            original = getattr(cls, name, None)
            if original is None:
                continue

            def hooked(module: Any, *args: Any, _original: Any = original, _name: str = name,
                       **kwargs: Any) -> Any:
                out = _original(module, *args, **kwargs)
                if recorder.tree is None:
                    variables = out[1] if _name == "init_with_output" else out
                    with contextlib.suppress(Exception):
                        recorder.tree = variable_paths(variables, recorder.MAX_ENTRIES)
                return out

            hooked.__name__, hooked.__doc__ = original.__name__, original.__doc__
            setattr(cls, name, hooked)
        self.installed = True

    def take(self) -> list | None:
        tree, self.tree = self.tree, None
        return tree


def variable_paths(variables: Any, limit: int) -> list:
    """[[path, shape], ...] of a nested mapping's array leaves, in its own order."""
    out: list = []

    def walk(node: Any, prefix: list[str]) -> None:
        for key, value in node.items():
            if len(out) >= limit:
                return
            path = prefix + [str(key)[:80]]
            if hasattr(value, "items"):
                walk(value, path)
            else:
                shape = getattr(value, "shape", None)
                out.append(["/".join(path), [int(d) for d in shape] if shape is not None else None])

    walk(variables, [])
    return out
