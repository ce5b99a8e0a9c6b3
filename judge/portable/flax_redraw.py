"""Redrawn parameters: tests that run a Flax model with other values of its parameters than its
initialisers give, as trained weights would have (docs/judging.md, "Redrawn parameters").

While a test's redraw is applied, every parameter a Flax module creates is drawn by the
judge's initialiser in place of its own: by NumPy, from the random key Flax hands the
parameter's initialiser (itself derived from the seed given to `init` and the parameter's
path), by the parameter's name and shape:

- `scale` (a LayerNorm's gain): uniform in [1 - scale, 1 + scale];
- `bias`, and any other parameter of fewer than two axes: normal, of deviation `bias`;
- `embedding`: normal, of deviation `gain`;
- any other (a kernel): normal, of deviation `gain / sqrt(n)`, `n` its first axis's size;

all but the scales times the `gains` factor of each submodule on the parameter's path.

So a model right only at its initialisation (biases at zero, LayerNorms at identity, scores
kept small) computes something else here, and the reference, run the same way, says what.
The same code runs in the sandbox, for a submission, and in the trusted process, for the
reference and the mistakes: this file is part of the runner's source (judge/sandbox/sources.py)
and imports only the standard library at the top, reaching Flax and JAX through `sys.modules`
once they are imported.

JAX keeps compiled functions by their arguments' shapes: a function jitted once, outside a
redraw, would give the initialisers' values again on a later test. Redraws therefore run
inside a JAX user context (`jax.make_user_context`), a key of every cache JAX has: inside it,
a function jitted outside is traced afresh, with the judge's initialiser; and the values a
jitted function draws are computed when it runs, under the redraw then in force.
"""

import contextlib
import math
import sys
from typing import Any

# Seeds the judge's draw with the key Flax hands an initialiser: not the initialiser's draw.
SALT = 0x7E5D
FIELDS = ("gain", "bias", "scale")
# The JAX user context every redraw runs in: one for all, since a value drawn under jax.jit
# reads the redraw in force when it runs (`draw`), and eager operations compiled under it once
# serve every redraw.
REDRAWN = ("tensorjudge-redraw",)


def redraw_key(spec):
    """A redraw's value as a hashable key (None: no redraw)."""
    if not spec:
        return None
    gains = tuple(sorted((str(k), float(v)) for k, v in (spec.get("gains") or {}).items()))
    return tuple((name, float(spec[name])) for name in FIELDS) + (("gains", gains),)


def host_draw(words, name, shape, dtype, spec, factor=1.0):
    """The judge's value for a parameter called `name`, of `shape` and `dtype` (`factor`:
    its submodules' gains), from the words of the key Flax hands its initialiser: NumPy's
    generator, seeded with them, so that the value is the same eager or under jax.jit, in the
    sandbox and in the trusted process."""
    np = sys.modules["numpy"]
    rng = np.random.default_rng([int(w) for w in np.asarray(words).reshape(-1)] + [SALT])
    if name == "scale":
        spread = spec["scale"]
        return rng.uniform(1.0 - spread, 1.0 + spread, shape).astype(dtype)
    if name == "embedding":
        deviation = spec["gain"]
    elif name == "bias" or len(shape) < 2:
        deviation = spec["bias"]
    else:
        deviation = spec["gain"] / math.sqrt(max(int(shape[0]), 1))
    return ((deviation * factor) * rng.standard_normal(shape)).astype(dtype)


def draw(rng, name, shape, dtype, current):
    """`host_draw` of the key `rng`, under the redraw `current()` gives (its spec and the
    parameter's factor): computed at once for a concrete key (an eager `init`), and by a host
    callback for a traced one (under jax.jit), which compiles to a call, not to a random number
    generator's arithmetic, and reads the redraw when it runs, not when it was traced."""
    jax = sys.modules["jax"]
    words = jax.random.key_data(rng) if jax.dtypes.issubdtype(
        rng.dtype, jax.dtypes.prng_key) else rng
    if not isinstance(words, jax.core.Tracer):
        return jax.numpy.asarray(host_draw(words, name, shape, dtype, *current()))
    return jax.pure_callback(
        lambda w: host_draw(w, name, shape, dtype, *current()),
        jax.ShapeDtypeStruct(shape, dtype), words, vmap_method="sequential")


class ParamRedraw:
    """Flax's `Scope.param`, with the judge's initialiser in place of the module's own for a
    parameter created while a redraw is applied. Installed only where Flax is imported; with
    no redraw applied, every parameter is made as Flax makes it."""

    def __init__(self):
        self.spec = None
        self.installed = False
        self.context: Any = None  # the JAX user context a redraw runs in
        self.drawn = 0  # parameters drawn by the judge

    def install(self):
        scope = sys.modules.get("flax.core.scope")
        jax = sys.modules.get("jax")
        if self.installed or scope is None or jax is None:
            return
        self.context = jax.make_user_context(None)
        original = scope.Scope.param
        metadata = sys.modules.get("flax.core.meta")
        boxed = getattr(metadata, "AxisMetadata", ())
        floating = jax.numpy.floating
        redraw = self

        def param(self, name, init_fn, *init_args, **init_kwargs):
            spec = redraw.spec
            if spec is None or not callable(init_fn) or self.has_variable("params", name):
                return original(self, name, init_fn, *init_args, **init_kwargs)
            path = tuple(self.path)

            def current():
                # The redraw in force when the value is made (a function jitted under one
                # redraw runs under another with the same trace), and the parameter's factor.
                now = redraw.spec or spec
                factor = 1.0
                for module in path:
                    factor *= now["gains"].get(module, 1.0)
                return now, factor

            def judges_init(rng, *args, **kwargs):
                # Only the shape and dtype of the initialiser's value: its own draw is not
                # computed (nor compiled, under jax.jit).
                value = jax.eval_shape(lambda: init_fn(rng, *args, **kwargs))
                box = value if boxed and isinstance(value, boxed) else None
                raw = box.unbox() if box is not None else value
                dtype = getattr(raw, "dtype", None)
                if dtype is None or not jax.numpy.issubdtype(dtype, floating):
                    return init_fn(rng, *args, **kwargs)  # not a number to draw: its own
                redraw.drawn += 1
                new = draw(rng, name, tuple(raw.shape), dtype, current)
                return box.replace_boxed(new) if box is not None else new

            return original(self, name, judges_init, *init_args, **init_kwargs)

        param.__name__, param.__doc__ = original.__name__, original.__doc__
        param.__wrapped__ = original  # type: ignore[attr-defined]  # read through by others
        scope.Scope.param = param
        self.installed = True

    @contextlib.contextmanager
    def applied(self, spec):
        """Parameters created inside are the judge's draw under `spec` (a dict of FIELDS; None:
        Flax's own initialisers, as outside)."""
        key = redraw_key(spec)
        if key is None or not self.installed:
            yield
            return
        before = self.spec
        self.spec = dict(key)
        self.spec["gains"] = dict(self.spec["gains"])
        try:
            with self.context(REDRAWN):
                yield
        finally:
            self.spec = before


# One per process: the sandbox's (its warmed fork server's, inherited by its forks) and each
# trusted process's.
param_redraw = ParamRedraw()
