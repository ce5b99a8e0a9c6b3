"""The runner's dealings with JAX inside the sandbox: compile-time accounting, the warm-up's
shared MLIR context and the hand-over of compilations in a sandbox forked warm. The last two
patch JAX's internals: the runner reaches them only through the guard (library_patches.py).

Part of the runner: its source comes before the runner's in the one source a sandbox runs
(`judge.sandbox.sources.RUNNER_SOURCE`), so it imports only the standard library at the top and
reaches JAX through `sys.modules`, once the runner has imported it.
"""

import contextlib
import os
import sys
import threading
import time

# JAX's events around a compilation: lowering to MLIR, then XLA's compile (or a read of the
# compilation cache). Tracing happens on every call and is run time.
COMPILE_EVENTS = frozenset({"/jax/core/compile/jaxpr_to_mlir_module_duration",
                            "/jax/core/compile/backend_compile_duration"})
LOWERED = "/jax/core/compile/jaxpr_to_mlir_module_duration"


class CompileClock:
    """Sums the CPU time JAX's compilations use, so it can be charged apart from run time: the
    process's CPU (every thread's: XLA compiles on threads of its own too) from each event's
    start, which JAX announces as a scalar, to its end, which it reports with its wall
    duration. CPU, not the wall duration: a busy host stretches the wall clock, not the work
    a compilation does, and the same code must be charged the same on any host."""

    def __init__(self):
        self.total_s = 0.0
        self._started = {}  # (thread, event) -> the process's CPU time at the event's start
        # Called once a computation is lowered, before XLA compiles it (the runner tells the
        # judge, whose time limit then allows for the compilation).
        self.on_lowered = None

    def started(self, event, value, **kwargs):
        """JAX's scalar at a timed event's start (its listener)."""
        if event in COMPILE_EVENTS:
            self._started[(threading.get_ident(), event)] = time.process_time()

    def __call__(self, event, duration_secs, **kwargs):
        if event not in COMPILE_EVENTS:
            return
        start = self._started.pop((threading.get_ident(), event), None)
        # Without its start (never, with the pinned JAX), the wall duration is all there is.
        self.total_s += (max(0.0, time.process_time() - start) if start is not None
                         else duration_secs)
        if event == LOWERED and self.on_lowered:
            self.on_lowered()

    def listen(self, monitoring):
        monitoring.register_scalar_listener(self.started)
        monitoring.register_event_duration_secs_listener(self)

    @property
    def ms(self):
        return self.total_s * 1000.0


def announce_compiles(clock, chan, test):
    """The judge hears of a test's first compilation as it starts (a `compiling` frame): the
    test's CPU limit then allows for it. From the main thread only, the one that sends."""
    def once():
        if threading.current_thread() is threading.main_thread():
            clock.on_lowered = None
            chan.send({"ev": "compiling", "test": test})

    clock.on_lowered = once


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
