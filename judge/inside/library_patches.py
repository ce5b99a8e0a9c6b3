"""The one guard of the sandbox's patches of JAX's and Flax's internals: the Flax shortcuts
(runner_flax.py, `jax.eval_shape` for the whole process among them), the warm-up's shared MLIR
context (`make_ir_context`) and the hand-over of compilations in a sandbox forked warm
(`compile_or_get_cached`, runner_jax.py). Each was written against the internals of one
release of each library: they are installed only where JAX, jaxlib and Flax are those
releases (the pins of pyproject.toml) and the sandbox's preparation message allows them
(`library_patches`). Otherwise the libraries run as they ship: the same results, more slowly,
and no sandbox is forked warm (a warm fork cannot compile without the hand-over).

Not a patch in this sense: the record of the variables Flax's `init` returns
(judge/portable/flax_variables.py). It wraps Flax's public `Module.init`, returns what `init`
returned, untouched, and swallows its own failures, so it cannot change a result under any
release; the trusted side records the reference's variables the same way, unguarded, and the
diagnosis compares the two. Turning it off would change the judge's feedback, not its speed.

Part of the runner: its source comes before the runner's in the one source a sandbox runs
(`judge.sandbox.sources.RUNNER_SOURCE`).
"""

import contextlib
import sys

if "install_flax_shortcuts" not in globals():  # imported as a module, not the sandbox's source
    from judge.inside.runner_flax import install_flax_shortcuts
    from judge.inside.runner_jax import hand_over_compiles, one_ir_context

# The releases whose internals the patches were read against (pyproject.toml pins them).
JAX_RELEASES = ("0.10.2",)  # jax and jaxlib
FLAX_RELEASES = ("0.12.8",)


def _release(name):
    return getattr(sys.modules.get(name), "__version__", None)


def allowed_by(prep):
    """Whether the preparation message `prep` allows the patches (the releases are checked
    once the libraries are imported)."""
    return bool(prep.get("library_patches", True))


def releases_match():
    """JAX and jaxlib are the releases the patches were read against, and so is Flax where
    it is imported. A Flax not imported needs no check: every Flax patch is installed at the
    preparation, on a Flax imported by then, or never."""
    if _release("jax") not in JAX_RELEASES or _release("jaxlib") not in JAX_RELEASES:
        return False
    return "flax" not in sys.modules or _release("flax") in FLAX_RELEASES


class LibraryPatches:
    """What the guard allowed (`active`); the patches that apply for a while only (the
    warm-up's, a warm fork's) are installed through it, and are no-ops when not allowed."""

    def __init__(self, active):
        self.active = active

    def warm_up(self):
        """The context the judge's warm-up runs in: one shared MLIR context, if allowed."""
        return one_ir_context() if self.active else contextlib.nullcontext()

    def hand_over_compiles(self, chan, exit_code):
        if self.active:
            hand_over_compiles(chan, exit_code)


def install_library_patches(prep):
    """The guard: installs the patches that last (the Flax shortcuts, where Flax is imported)
    if the message `prep` allows them and the releases match, and returns what it allowed.
    Called once, after the imports and before the warm-up."""
    patches = LibraryPatches(allowed_by(prep) and releases_match())
    if patches.active:
        install_flax_shortcuts()
    return patches
