"""The runner's shortcuts through the costs of eager Flax inside the sandbox: a submission
that builds and initialises its layers on every call (as Flax's examples do) pays, at the
judge's small shapes, more for Flax's bookkeeping than for its arithmetic. Each shortcut gives
exactly what Flax's own code gives, in the cases it can tell it does, and leaves every other
case to Flax. They replace Flax's internals (and `jax.eval_shape`, for the whole process): the
runner installs them only through the guard (library_patches.py), which checks that JAX and
Flax are the releases they were read against.

Part of the runner: its source comes early in the one source a sandbox runs
(`judge.sandbox.sources.RUNNER_SOURCE`), so it imports only the standard library at the top and
reaches JAX and Flax through `sys.modules`, once the runner has imported them.
"""

import dataclasses
import functools
import hashlib
import sys
import types
from typing import Any


class Unkeyable(Exception):
    """A value the memo cannot key by what it is (see ParamShapeMemo.key)."""


# Where a function or class must come from to be keyed by its code and contents: the pinned
# libraries, never the submission (its functions may depend on anything).
LIBRARIES = frozenset({"jax", "jaxlib", "flax", "numpy", "ml_dtypes"})
PLAIN = (int, float, bool, str, bytes, complex, type(None))


def _library(name):
    return isinstance(name, str) and name.partition(".")[0] in LIBRARIES


def install_flax_shortcuts():
    """The Flax shortcuts, where Flax is imported (before the warm-up). Only the guard calls
    this (library_patches.py): it has checked the releases."""
    param_shapes.install()
    plain_attributes.install()
    static_fold_in.install()
    plain_promotion.install()


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
        if self.installed or jax is None or scope is None or linen is None:
            return
        # The lambda Scope.param hands to jax.eval_shape, told apart by its code object (in
        # Flax's own Scope.param, under the redraw's wrapper: judge/portable/flax_redraw.py).
        param = getattr(scope.Scope.param, "__wrapped__", scope.Scope.param)
        check = next((c for c in param.__code__.co_consts
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


class Shortcut:
    """A shortcut of this module: whether it is installed, and how often it took its direct
    path."""

    def __init__(self):
        self.installed = False
        self.direct = 0


class PlainAttributes(Shortcut):
    """Every Flax layer, each time it is bound, passes each of its fields through
    `Module._register_submodules`, which adopts the layers found in it: a walk through Flax's
    serialisation registry and a new weak dictionary every time, for numbers and functions
    that hold no layer (about a tenth of an eager decoder block's call). For a value of a kind
    that can hold none and that the registry does not know, the walk ends where it starts:
    the field keeps its value and the root scope its (possibly new) cache of adopted layers.
    That much is done directly; every other value goes through Flax's own code."""

    KINDS = frozenset({int, float, bool, str, bytes, complex, type(None), types.FunctionType,
                       types.BuiltinFunctionType, functools.partial})

    def install(self):
        module = sys.modules.get("flax.linen.module")
        serialization = sys.modules.get("flax.serialization")
        if self.installed or module is None or serialization is None:
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


# Threefry-2x32's rotations, by round group (they alternate), and its key schedule constant.
THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
THREEFRY_PARITY = 0x1BD11BDA
WORD = 0xFFFFFFFF


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 (20 rounds) of one pair of 32-bit words under one key, as JAX computes
    it (jax._src.prng's threefry2x32_p), in Python integers."""
    ks = (k0, k1, (k0 ^ k1 ^ THREEFRY_PARITY) & WORD)
    x0 = (x0 + ks[0]) & WORD
    x1 = (x1 + ks[1]) & WORD
    for group in range(5):
        for r in THREEFRY_ROTATIONS[group % 2]:
            x0 = (x0 + x1) & WORD
            x1 = ((x1 << r) | (x1 >> (32 - r))) & WORD
            x1 ^= x0
        x0 = (x0 + ks[(group + 1) % 3]) & WORD
        x1 = (x1 + ks[(group + 2) % 3] + group + 1) & WORD
    return x0, x1


class StaticFoldIn(Shortcut):
    """Flax gives each layer and parameter its own RNG key by folding a hash of its path into
    the root key (`flax.core.scope._fold_in_static`): an eager `jax.random.fold_in`, after a
    `jnp.uint32` of the hash, for every parameter of every `init` (about a fifth of an eager
    encoder block's call). For a concrete raw key (uint32[2]) of JAX's default Threefry
    implementation, JAX's fold-in is Threefry-2x32 of the words (0, hash) under the key: that
    is computed here in Python integers and put on the device once. Any other key (typed,
    traced, of another implementation) and anything else Flax would refuse go to Flax's code."""

    def install(self):
        scope = sys.modules.get("flax.core.scope")
        jax = sys.modules.get("jax")
        np = sys.modules.get("numpy")
        array = sys.modules.get("jax._src.array")
        if self.installed or scope is None or jax is None or np is None or array is None:
            return
        original = scope._fold_in_static
        concrete = array.ArrayImpl
        uint32 = np.dtype(np.uint32)
        pair = (2,)
        config, flax_config = jax.config, scope.config
        to_device, host = jax.numpy.asarray, np.asarray
        shortcut = self

        def fold_in_static(rng, data):
            if (not data or type(rng) is not concrete or rng.dtype != uint32
                    or rng.shape != pair or config.jax_default_prng_impl != "threefry2x32"):
                return original(rng, data)
            m = hashlib.sha1()
            separate = flax_config.flax_fix_rng_separator
            for x in data:
                if separate:
                    m.update(b"\00")
                if isinstance(x, str):
                    m.update(x.encode("utf-8"))
                elif isinstance(x, int):
                    m.update(x.to_bytes((x.bit_length() + 7) // 8, byteorder="big"))
                else:
                    return original(rng, data)  # which raises Flax's own error
            k0, k1 = host(rng).tolist()
            folded = threefry2x32(k0, k1, 0, int.from_bytes(m.digest()[:4], byteorder="big"))
            shortcut.direct += 1
            return to_device(np.array(folded, dtype=uint32))

        functools.update_wrapper(fold_in_static, original)
        scope._fold_in_static = fold_in_static  # type: ignore[attr-defined]
        self.installed = True


static_fold_in = StaticFoldIn()


class PlainPromotion(Shortcut):
    """Every Flax layer call passes its inputs and parameters through `promote_dtype`, which
    calls `jnp.asarray(x, dtype)` on each: about 25 microseconds a call for an array that
    already has that dtype, for which JAX returns the array itself. Flax's dtype module is
    given a jax.numpy whose `asarray` returns such an array (concrete, of that dtype, not
    weakly typed) at once; every other call, and every other name, is jax.numpy's own."""

    def install(self):
        dtypes = sys.modules.get("flax.linen.dtypes")
        jnp = sys.modules.get("jax.numpy")
        array = sys.modules.get("jax._src.array")
        if self.installed or dtypes is None or jnp is None or array is None:
            return
        if getattr(dtypes, "jnp", None) is not jnp:
            return
        concrete = array.ArrayImpl
        api: Any = jnp  # captured below, where a checker no longer sees it is not None
        real_asarray = api.asarray
        shortcut = self

        class Numpy(types.ModuleType):
            def __getattr__(self, name):
                return getattr(api, name)

        def asarray(a, dtype=None, *args, **kwargs):
            if (type(a) is concrete and not args and not kwargs and not a.weak_type
                    and (dtype is None or a.dtype == dtype)):
                shortcut.direct += 1
                return a
            return real_asarray(a, dtype, *args, **kwargs)

        functools.update_wrapper(asarray, real_asarray)
        numpy = Numpy(api.__name__)
        numpy.asarray = asarray  # type: ignore[attr-defined]
        dtypes.jnp = numpy  # type: ignore[attr-defined]
        self.installed = True


plain_promotion = PlainPromotion()
