"""The program that runs inside the sandbox. Self-contained: the host hands this file's source
over, after those of its parts (judge/sandbox/sources.py: the Flax variables' record, the Flax
shortcuts, the JAX part, the guard of the libraries' patches, the lockdown), as one source run
by `python -I -S`, so nothing of the judge's tree is visible inside.

Order matters: read the job from stdin, import the libraries, then lock the process down
(rlimits counted from the CPU already spent, seccomp) and only then touch the user's code.
Results leave on a private pipe as length-prefixed JSON headers plus raw float64 bytes.
"""

import contextlib
import json
import os
import struct
import sys
import time
import traceback

if "install_library_patches" not in globals():  # imported as a module, not the sandbox's source
    from judge.inside.library_patches import install_library_patches
    from judge.inside.lockdown import apply_rlimits, build_seccomp
    from judge.inside.runner_jax import CompileClock, announce_compiles
    from judge.portable.flax_redraw import param_redraw
    from judge.portable.flax_variables import InitRecorder

SOLUTION_FILE = "solution.py"
# The exit of a sandbox forked warm that met a compilation (see hand_over_compiles).
HANDOVER_EXIT = 75


def _read_exact(fd, n):
    chunks = []
    while n:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError("job frame truncated")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


class Channel:
    def __init__(self, fd):
        self.fd = fd

    def send(self, header, data=b""):
        header = dict(header, nbytes=len(data))
        head = json.dumps(header).encode()
        msg = struct.pack(">I", len(head)) + head
        self._write(msg)
        if data:
            self._write(data)

    def _write(self, b):
        view = memoryview(b)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]


def _flush_std():
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


def _finish(chan, header):
    """Flush the user's output first: the host stops reading once it sees a final frame."""
    _flush_std()
    chan.send(header)
    os._exit(0)


def _setup_paths(job):
    import site

    for p in job["site_dirs"]:
        site.addsitedir(p)

def _quiet_fds():
    """Point stdout/stderr at /dev/null; returns a function that restores them. Nobody reads
    an idle sandbox's output, so anything written while preparing would fill the pipe and
    block, and none of it is the user's."""
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)

    def restore():
        for fd, orig in zip((1, 2), saved, strict=True):
            os.dup2(orig, fd)
            os.close(orig)

    return restore


def _prepare(prep):
    """Imports, backend start and the judge's warm-up: everything before the job arrives."""
    import gc

    # Almost everything made here lives until the job (modules, JAX's caches): the collector
    # would only walk it again and again. One collection at the end clears the warm-up's
    # garbage. (Freezing what is left as well made the user's calls slower, not faster.)
    gc.disable()
    try:
        return _prepare_uncollected(prep)
    finally:
        gc.collect()
        gc.enable()


def _prepare_uncollected(prep):
    import warnings

    # The shared cache is read-only here: failing to add entries for new compilations
    # (the user's own jit, say) is expected, not worth a warning each time.
    warnings.filterwarnings("ignore", message="Error writing persistent compilation cache")
    t0 = time.perf_counter()
    import numpy  # noqa: F401  (always needed to rebuild inputs)

    for name in prep["preload"]:
        # A library that fails here fails again for the user, visibly.
        with contextlib.suppress(Exception):
            __import__(name)
    clock = None
    # Before any JAX work: the redraws' user context is a key of JAX's caches from here on.
    param_redraw.install()
    if "jax" in sys.modules:
        import jax

        cache = prep.get("jax_cache_dir")
        if cache:
            jax.config.update("jax_compilation_cache_dir", cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
            # With XLA's own caches on, the key depends on the cache's path: nothing would hit.
            jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
            import logging

            # The cache is read-only here: failing to add the user's new entries is expected.
            logging.getLogger("jax._src.compilation_cache").setLevel(logging.CRITICAL)
            logging.getLogger("jax._src.compiler").setLevel(logging.CRITICAL)
        # Each operation runs to its end on the thread that called it: a process forked from
        # this one (a warmed fork server) has no other thread to wait for.
        jax.config.update("jax_cpu_enable_async_dispatch", False)
        # Start the backend now, so its threads and allocations are not charged to the user.
        jax.numpy.zeros(1).block_until_ready()
        clock = CompileClock()
        clock.listen(jax.monitoring)
    patches = install_library_patches(prep)  # before the warm-up, whose applies fill the memo
    import_ms = (time.perf_counter() - t0) * 1000.0
    t1 = time.perf_counter()
    warm_error = None
    warm = prep.get("warmup")
    if warm:
        try:
            with patches.warm_up():
                _warm_up(warm, prep["preload"])
        except Exception:
            warm_error = traceback.format_exc(limit=-3)
    return import_ms, (time.perf_counter() - t1) * 1000.0, warm_error, clock, patches


def _warm_up(warm, preload):
    """The problem's warm-up on its tests' shapes, then again on the shapes of the tests
    with each redraw of their parameters, under it (each redraw is traced apart)."""
    ns: dict = {"__name__": "tensorjudge_warmup"}
    exec(compile(warm["source"], "warmup.py", "exec"), ns)
    ns["warmup"](warm["cases"], list(preload))
    for redraw in warm.get("redraws", ()):
        with param_redraw.applied(redraw["spec"]):
            ns["warmup"](redraw["cases"], list(preload))


def _read_frame(fd):
    if _read_exact(fd, 4) != b"TJ1\n":
        raise SystemExit("bad frame")
    (hlen,) = struct.unpack(">Q", _read_exact(fd, 8))
    header = json.loads(_read_exact(fd, hlen))
    return header, _read_exact(fd, header.get("blob_bytes", 0))


def _arrays(layout, blob):
    """The job's arrays (judge.wire.encode_job lays them out), as read-only views of the blob:
    every call gets its own copy anyway."""
    import numpy as np

    out = {}
    for key, d in layout.items():
        shape = tuple(d["shape"])
        count = 1
        for n in shape:
            count *= n
        dtype = np.dtype(d["dtype"])
        out[key] = (np.frombuffer(blob, dtype, count, d["offset"]).reshape(shape) if count
                    else np.empty(shape, dtype))
    return out


def _rebuild(spec, arrays):
    t = spec["t"]
    if t == "array":
        return arrays[spec["k"]]
    if t == "dict":
        return {k: _rebuild(v, arrays) for k, v in spec["v"].items()}
    if t == "none":
        return None
    return spec["v"]


def _fresh(value):
    """A private copy for each call, so mutating inputs cannot leak into the next test."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


# Notes libraries attach that say nothing about the user's error (JAX's, on every exception
# raised through its API, would otherwise be the last line a learner reads).
BOILERPLATE_NOTES = ("JAX has removed its internal frames",)


def _exception_text(exc):
    """The exception itself (type, message, the notes that matter), bounded."""
    te = traceback.TracebackException(type(exc), exc, None, lookup_lines=False)
    notes = getattr(te, "__notes__", None)
    if notes:
        te.__notes__ = [n for n in notes
                        if not any(b in str(n) for b in BOILERPLATE_NOTES)]
    text = "".join(te.format_exception_only()).strip()
    return text if len(text) < 2000 else text[:1400] + "\n...\n" + text[-400:]


def _user_traceback(exc):
    """Only the user's own frames, with their source lines, then the exception itself."""
    frames = [
        fs for fs in traceback.extract_tb(exc.__traceback__) if fs.filename == SOLUTION_FILE
    ]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    text = "".join(lines) + _exception_text(exc) + "\n"
    return text if len(text) < 8000 else text[:4000] + "\n...\n" + text[-3000:]


def _show_source(source):
    """Tracebacks of solution.py show its lines, not only their numbers (the entry stays:
    linecache keeps entries that have no modification time)."""
    import linecache

    linecache.cache[SOLUTION_FILE] = (len(source), None, source.splitlines(True), SOLUTION_FILE)


def _to_float64(out, expected_size):
    """Convert whatever the user returned into flat float64 bytes, or explain why not."""
    import numpy as np

    mod = type(out).__module__ or ""
    if mod.startswith("torch"):
        out = out.detach().cpu().numpy()
    elif mod.startswith(("jax", "jaxlib")):
        out = np.asarray(out)
    if isinstance(out, np.ndarray) and type(out) is not np.ndarray:
        out = out.view(np.ndarray)  # subclasses cannot bring their own arithmetic along
    try:
        arr = np.asarray(out)
    except Exception as e:
        return None, f"the output could not be read as an array: {type(e).__name__}: {e}"
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        return None, f"the output is not numeric (dtype {arr.dtype})"
    shape = [int(s) for s in arr.shape]
    if arr.size != expected_size:
        return shape, (
            f"the output has {arr.size} elements, the expected output has {expected_size}"
        )
    flat = np.ascontiguousarray(arr, dtype="<f8").reshape(-1)
    return (flat, shape), None


def prepare_quietly(prep):
    """`_prepare` with nothing written to the pipes nobody reads while a sandbox waits."""
    restore = _quiet_fds()
    try:
        return _prepare(prep)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        restore()


def rehearse(prep, patches):
    """The warm-up once more, in a process forked from a warmed fork server, which ends after
    it: the server learns which of its pages a sandbox forked from it writes first (zygote.py).
    Judge-owned code only. A compilation ends the process at once, as in a sandbox."""
    patches.hand_over_compiles(None, HANDOVER_EXIT)
    warm = prep.get("warmup")
    if not warm:
        return
    restore = _quiet_fds()
    try:
        _warm_up(warm, prep["preload"])
    finally:
        restore()


def main(prepared=None):
    """`prepared`: what `_prepare` returned in the warmed fork server this process was
    forked from (None: prepare here)."""
    t_start = time.perf_counter()
    prep, _ = _read_frame(0)
    chan = Channel(prep["channel_fd"])
    _setup_paths(prep)
    if prepared is None:
        import_ms, warmup_ms, warm_error, clock, patches = prepare_quietly(prep)
    else:
        import_ms, warmup_ms, warm_error, clock, patches = prepared
    seccomp_filter = build_seccomp()
    chan.send({"ev": "warm", "import_ms": import_ms, "warmup_ms": warmup_ms,
               "warmup_error": warm_error,
               "startup_ms": (time.perf_counter() - t_start) * 1000.0})
    try:
        job, blob = _read_frame(0)  # an idle pool sandbox waits here
    except (EOFError, SystemExit):
        os._exit(0)
    os.close(0)
    t_job = time.perf_counter()

    arrays = _arrays(job.get("arrays", {}), blob)
    tests = [_rebuild(spec, arrays) for spec in job["tests_args"]]
    sizes = job["expected_sizes"]
    redraws = job.get("redraws") or [None] * len(tests)

    apply_rlimits(job)
    if job.get("seccomp", True):
        seccomp_filter.load()
    del seccomp_filter
    chan.send({"ev": "ready", "setup_ms": (time.perf_counter() - t_job) * 1000.0})

    if prepared is not None:  # forked warm (the zygote forks warm only with the patches)
        patches.hand_over_compiles(chan, HANDOVER_EXIT)
    # From here on, everything may be hostile.
    try:
        code = compile(job["code"], SOLUTION_FILE, "exec", dont_inherit=True)
        _show_source(job["code"])
    except SyntaxError as e:
        msg = "".join(traceback.format_exception_only(type(e), e))
        _finish(chan, {"ev": "compile_error", "message": msg, "line": e.lineno})
    except (ValueError, MemoryError, RecursionError) as e:
        _finish(chan, {"ev": "compile_error", "message": f"{type(e).__name__}: {e}", "line": None})

    # A record, not a patch: outside the guard (library_patches.py says why).
    recorder = InitRecorder()
    recorder.install()
    namespace = {"__name__": "solution", "__file__": SOLUTION_FILE, "__builtins__": __builtins__}
    chan.send({"ev": "module_start"})
    t0 = time.perf_counter()
    try:
        exec(code, namespace)
    except BaseException as e:  # SystemExit included: the module must not leave early
        _finish(chan, {"ev": "module_error", "message": _user_traceback(e),
                       "time_ms": (time.perf_counter() - t0) * 1000.0})
    entry = namespace.get(job["entry"])
    if not callable(entry):
        what = "is not defined" if entry is None else f"is a {type(entry).__name__}, not a function"
        _finish(chan, {"ev": "missing_entry", "message": f"`{job['entry']}` {what}"})

    for i, args in enumerate(tests):
        kwargs = _fresh(args)
        chan.send({"ev": "begin", "test": i})
        compiled_before = clock.ms if clock else 0.0
        if clock:
            announce_compiles(clock, chan, i)
        recorder.take()
        t0, c0 = time.perf_counter(), time.process_time()  # the process's CPU: every thread
        try:
            with param_redraw.applied(redraws[i]):
                out = entry(**kwargs)  # type: ignore[operator]
                converted, problem = _to_float64(out, sizes[i])
        except BaseException as e:
            dt, cpu = (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0
            chan.send({"ev": "error", "test": i, "time_ms": dt, "message": _user_traceback(e),
                       "exception": _exception_text(e), "cpu_ms": cpu})
            continue
        dt, cpu = (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0
        compile_ms = (clock.ms - compiled_before) if clock else 0.0
        if problem is not None:
            chan.send({"ev": "bad_output", "test": i, "time_ms": dt, "message": problem,
                       "shape": converted, "compile_ms": compile_ms, "cpu_ms": cpu})
            continue
        flat, shape = converted
        header = {"ev": "result", "test": i, "time_ms": dt, "compile_ms": compile_ms,
                  "cpu_ms": cpu, "dtype": "<f8", "shape": shape}
        tree = recorder.take()
        if tree is not None:
            header["variables"] = tree
        chan.send(header, flat.tobytes())
        del out, flat, converted
    _finish(chan, {"ev": "done"})


if __name__ == "__main__":
    main()
