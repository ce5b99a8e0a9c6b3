"""The runner's dealings with JAX and Flax inside the sandbox: compile-time accounting, the
warm-up's shared MLIR context, the hand-over of compilations in a sandbox forked warm, the
record of the variables Flax's `init` created, and the memo of Flax's parameter shape checks.

Part of the runner: its source comes first in the one source a sandbox runs
(`judge.sandbox.base.RUNNER_SOURCE`), so it imports only the standard library at the top and
reaches JAX and Flax through `sys.modules`, once the runner has imported them.
"""

import contextlib
import dataclasses
import functools
import os
import sys
import types


class CompileClock:
    """Sums JAX's compile events, so compile time can be reported apart from run time."""

    def __init__(self):
        self.total_s = 0.0

    def __call__(self, event, duration_secs, **kwargs):
        # Lowering and XLA compilation; tracing happens on every call and is run time.
        if event in ("/jax/core/compile/backend_compile_duration",
                     "/jax/core/compile/jaxpr_to_mlir_module_duration"):
            self.total_s += duration_secs

    @property
    def ms(self):
        return self.total_s * 1000.0


@contextlib.contextmanager
def one_ir_context():
    """JAX builds a new MLIR context, loading every dialect, for each computation it lowers:
    about 3 ms, the largest single cost of an eager operation's first call once its executable
    comes from the compilation cache. The warm-up lowers a few hundred of them, so they share
    one context. The modules, and so the cache keys, are the same either way; the user's code
    then runs with JAX as it ships."""
    mlir = sys.modules.get("jax._src.interpreters.mlir")
    original = getattr(mlir, "make_ir_context", None)
    if original is None:  # no JAX here, or one that builds contexts differently
        yield
        return
    shared = original()
    mlir.make_ir_context = lambda: shared  # type: ignore[union-attr]
    try:
        yield
    finally:
        mlir.make_ir_context = original  # type: ignore[union-attr]


def hand_over_compiles(chan, exit_code):
    """A sandbox forked from a warmed fork server has only the thread that forked it, and XLA
    compiles on threads of its own: a compilation there would wait forever. Every one (and
    every read of the compilation cache) passes through this function of JAX's, so the first
    ends the run with a request the judge answers by running the job again, from its start,
    in a sandbox that prepared itself. os._exit: no handler of the user's can keep it waiting.
    Lowering to MLIR comes first, and may not be followed by a compilation (JAX keeps
    compiled modules by content): MLIR verifies a module of several functions on a thread
    pool the fork does not have (the server's warm-up started it), so here every new MLIR
    context works on the calling thread alone."""
    compiler = sys.modules.get("jax._src.compiler")
    if compiler is None:
        return

    def hand_over(*args, **kwargs):
        with contextlib.suppress(Exception):
            chan.send({"ev": "handover"})
        os._exit(exit_code)

    compiler.compile_or_get_cached = hand_over  # type: ignore[attr-defined]
    mlir = sys.modules.get("jax._src.interpreters.mlir")
    if mlir is not None:
        make_context = mlir.make_ir_context

        def single_threaded_context():
            context = make_context()
            context.enable_multithreading(False)
            return context

        mlir.make_ir_context = single_threaded_context  # type: ignore[attr-defined]


class InitRecorder:
    """The structure of the variables the first Flax `Module.init` of each test returns:
    paths and shapes, in creation order, as plain data for the judge's comparison with the
    reference's (judge/params.py). Installed only where Flax is imported already; it does not
    touch what `init` returns. The trusted reference run uses it too."""

    MAX_ENTRIES = 256

    def __init__(self):
        self.tree = None
        self.installed = False

    def install(self):
        linen = sys.modules.get("flax.linen")
        if self.installed or linen is None:
            return
        recorder = self
        cls = linen.Module
        for name in ("init", "init_with_output"):
            original = getattr(cls, name, None)
            if original is None:
                continue

            def hooked(module, *args, _original=original, _name=name, **kwargs):
                out = _original(module, *args, **kwargs)
                if recorder.tree is None:
                    variables = out[1] if _name == "init_with_output" else out
                    with contextlib.suppress(Exception):
                        recorder.tree = variable_paths(variables, recorder.MAX_ENTRIES)
                return out

            hooked.__name__, hooked.__doc__ = original.__name__, original.__doc__
            setattr(cls, name, hooked)
        self.installed = True

    def take(self):
        tree, self.tree = self.tree, None
        return tree


def variable_paths(variables, limit):
    """[[path, shape], ...] of a nested mapping's array leaves, in its own order."""
    out: list = []

    def walk(node, prefix):
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


class Unkeyable(Exception):
    """A value the memo cannot key by what it is (see ParamShapeMemo.key)."""


# Where a function or class must come from to be keyed by its code and contents: the pinned
# libraries, never the submission (its functions may depend on anything).
LIBRARIES = frozenset({"jax", "jaxlib", "flax", "numpy", "ml_dtypes"})
PLAIN = (int, float, bool, str, bytes, complex, type(None))


# The Flax releases whose internals the two shortcuts below were read against (the judge pins
# one); under any other, Flax runs as it ships.
FLAX_RELEASES = ("0.12.8",)


def _library(name):
    return isinstance(name, str) and name.partition(".")[0] in LIBRARIES


def _flax_checked():
    flax = sys.modules.get("flax")
    return getattr(flax, "__version__", None) in FLAX_RELEASES


def install_flax_shortcuts():
    """Both of the Flax shortcuts, where Flax is imported (before the warm-up)."""
    if _flax_checked():
        param_shapes.install()
        plain_attributes.install()


class ParamShapeMemo:
    """At every `apply`, Flax checks each existing parameter against the shape its initializer
    would give, by tracing the initializer with `jax.eval_shape`: about a third of the time of
    an eager Flax layer, spent again on every call. Where that answer cannot change, the first
    trace's is kept: the initializer and its arguments are keyed by what they are (numbers,
    shapes, dtypes; library functions by their code, defaults and closure contents; Flax's own
    layers by their class and fields), together with the JAX settings a trace depends on.
    Anything else (a function or layer of the submission's, an object of unknown kind) is
    traced every time, as without the memo. Only Flax's own check is answered from it: every
    other `jax.eval_shape` goes straight to JAX's. Installed where Flax is imported, before
    the warm-up, whose `apply`s fill it for the shapes of the tests.

    Flax's check that a raw RNG key has the shape and dtype of one (each `init`, for each of
    its keys, traces a new function to learn them) is answered the same way: that answer
    depends on nothing but the argument and the JAX settings in the key."""

    LIMIT = 4096
    MAX_DEPTH = 12

    def __init__(self):
        self.shapes = {}
        self.installed = False
        self.hits = 0
        self.traced = 0  # checks traced for the memo
        self.unkeyed = 0  # checks traced because their initializer could not be keyed
        self.rng_checks = 0  # RNG key checks answered from the memo
        self.module_type: type = type(None)
        self.dtype_type: type = type(None)

    def install(self):
        jax = sys.modules.get("jax")
        scope = sys.modules.get("flax.core.scope")
        linen = sys.modules.get("flax.linen")
        if self.installed or jax is None or scope is None or linen is None or not _flax_checked():
            return
        # The lambda Scope.param hands to jax.eval_shape, told apart by its code object.
        check = next((c for c in scope.Scope.param.__code__.co_consts
                      if isinstance(c, types.CodeType) and c.co_name == "<lambda>"
                      and set(c.co_freevars) == {"init_fn", "init_args", "init_kwargs"}), None)
        if check is None:  # a Flax that checks otherwise: left as it is
            return
        code: types.CodeType = check
        # The one _is_valid_rng hands it: `lambda s: key_data(key(s))`, closing over nothing.
        rng_code = next((c for c in scope._is_valid_rng.__code__.co_consts
                         if isinstance(c, types.CodeType) and c.co_name == "<lambda>"
                         and not c.co_freevars), None)
        original = jax.eval_shape
        config = jax.config
        memo = self
        self.module_type = linen.Module
        self.dtype_type = sys.modules["numpy"].dtype

        def eval_shape(fun, *args, **kwargs):
            fun_code = getattr(fun, "__code__", None)
            if (fun_code is rng_code and rng_code is not None and not kwargs
                    and len(args) == 1 and type(args[0]) is int):
                rng_key = ("rng", config.jax_enable_x64, config.jax_default_prng_impl, args[0])
                found = memo.shapes.get(rng_key)
                if found is None:
                    found = original(fun, *args)
                    if len(memo.shapes) < memo.LIMIT:
                        memo.shapes[rng_key] = found
                else:
                    memo.rng_checks += 1
                return found
            if args or kwargs or fun_code is not code:
                return original(fun, *args, **kwargs)
            try:
                cells = dict(zip(code.co_freevars, [c.cell_contents for c in fun.__closure__],
                                 strict=True))
                key = (config.jax_enable_x64, config.jax_default_prng_impl,
                       memo.key(cells["init_fn"]), memo.key(cells["init_args"]),
                       memo.key(cells["init_kwargs"]))
                found = memo.shapes.get(key)
            except (Unkeyable, TypeError, ValueError, AttributeError, RecursionError):
                memo.unkeyed += 1
                return original(fun)
            if found is not None:
                memo.hits += 1
                return found
            memo.traced += 1
            found = original(fun)  # an error here is the check's own, raised as it would be
            if len(memo.shapes) < memo.LIMIT:
                memo.shapes[key] = found
            return found

        functools.update_wrapper(eval_shape, original)
        jax.eval_shape = eval_shape  # type: ignore[attr-defined]
        self.installed = True

    def key(self, value, depth=0):
        """A hashable value equal for two arguments exactly when they are the same plain data,
        or library code with the same contents; Unkeyable for anything else."""
        if depth > self.MAX_DEPTH:
            raise Unkeyable
        kind = type(value)
        if kind in PLAIN:
            return (kind, value)  # the type too: 1, 1.0 and True are equal keys otherwise
        deeper = depth + 1
        if kind is tuple or kind is list:
            return (kind, tuple([self.key(v, deeper) for v in value]))
        if kind is dict:
            return (kind, tuple([(self.key(k, deeper), self.key(v, deeper))
                                 for k, v in value.items()]))
        if kind is types.FunctionType:
            home = value.__globals__.get("__name__")
            if not _library(home) or value.__globals__ is not getattr(
                    sys.modules.get(home), "__dict__", None):
                raise Unkeyable
            return (kind, value.__code__, self.key(value.__defaults__, deeper),
                    self.key(value.__kwdefaults__, deeper),
                    tuple([self.key(c.cell_contents, deeper) for c in value.__closure__ or ()]))
        if kind is functools.partial:
            return (kind, self.key(value.func, deeper), self.key(value.args, deeper),
                    self.key(value.keywords, deeper))
        if isinstance(value, type) or kind is types.BuiltinFunctionType:
            # A class (jnp.float32, say) or a compiled function, by identity.
            if not _library(getattr(value, "__module__", None)):
                raise Unkeyable
            return ("same", value)
        if isinstance(value, self.dtype_type):
            return ("dtype", value)  # NumPy's dtypes, compared by value
        if isinstance(value, self.module_type):
            # Flax's own layers are frozen dataclasses: their fields are all they are.
            if not _library(kind.__module__):
                raise Unkeyable
            return (kind, tuple([(f.name, self.key(getattr(value, f.name), deeper))
                                 for f in dataclasses.fields(value)  # type: ignore[arg-type]
                                 if f.name not in ("parent", "name")]))
        raise Unkeyable


# One per sandbox process; the warmed fork server fills it, and its forks start with it.
param_shapes = ParamShapeMemo()


class PlainAttributes:
    """Every Flax layer, each time it is bound, passes each of its fields through
    `Module._register_submodules`, which adopts the layers found in it: a walk through Flax's
    serialisation registry and a new weak dictionary every time, for numbers and functions
    that hold no layer (about a tenth of an eager decoder block's call). For a value of a kind
    that can hold none and that the registry does not know, the walk ends where it starts:
    the field keeps its value and the root scope its (possibly new) cache of adopted layers.
    That much is done directly; every other value goes through Flax's own code."""

    KINDS = frozenset({int, float, bool, str, bytes, complex, type(None), types.FunctionType,
                       types.BuiltinFunctionType, functools.partial})

    def __init__(self):
        self.installed = False
        self.direct = 0

    def install(self):
        module = sys.modules.get("flax.linen.module")
        serialization = sys.modules.get("flax.serialization")
        if self.installed or module is None or serialization is None or not _flax_checked():
            return
        original = module.Module._register_submodules
        registry = serialization._STATE_DICT_REGISTRY
        caches = module._caches
        kinds = self.KINDS
        weak_values = sys.modules["weakref"].WeakValueDictionary
        attributes = self

        def register_submodules(self, name, val):
            kind = type(val)
            if (kind in kinds or isinstance(val, type)) and kind not in registry:
                assert self.scope, "Trying to register submodules on unbound scope."
                root = self.scope.root
                if root not in caches:
                    caches[root] = weak_values()
                object.__setattr__(self, name, val)
                attributes.direct += 1
                return
            original(self, name, val)

        functools.update_wrapper(register_submodules, original)
        module.Module._register_submodules = register_submodules
        self.installed = True


plain_attributes = PlainAttributes()
