"""The code that runs inside the sandbox, as the host hands it over: the text of the files in
`judge/inside` and `judge/portable`, which the host reads but never imports, and the bootstrap
that reads such a text from a descriptor, so that it never travels in a command line."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

JUDGE = Path(__file__).resolve().parent.parent


def _read(*names: str) -> str:
    return "\n\n".join((JUDGE / name).read_text(encoding="utf-8") for name in names)


# What a sandbox runs, as one source (one namespace): the record of Flax's variables and the
# redraw of its parameters (both shared with the trusted side), the Flax shortcuts, the JAX
# part, the guard of those patches, the lockdown, then the runner. Each comes after what it
# uses.
RUNNER_PARTS = ("portable/flax_variables.py", "portable/flax_redraw.py", "inside/runner_flax.py",
                "inside/runner_jax.py", "inside/library_patches.py", "inside/lockdown.py",
                "inside/runner.py")
RUNNER_SOURCE = _read(*RUNNER_PARTS)
# The fork server (bubblewrap) and the first process of a sandbox container.
ZYGOTE_SOURCE = _read("inside/zygote.py")
CONTAINER_INIT_SOURCE = _read("inside/container_init.py")

# The whole `-c` of a process that runs one of the sources above, followed by the number of
# an inherited descriptor holding it (source_descriptor): it reads and closes the descriptor,
# then runs the source as `-c SOURCE` would, its own arguments after. A command line (which
# `ps` shows, for every process) stays a few hundred bytes.
BOOTSTRAP = (
    "import os,sys\n"
    "def _source(fd):\n"
    "    try:\n"
    "        return os.pread(fd, os.fstat(fd).st_size, 0)\n"
    "    finally:\n"
    "        os.close(fd)\n"
    "exec(compile(_source(int(sys.argv.pop(1))), '<string>', 'exec'))\n"
)


def source_descriptor(source: str) -> int:
    """A new in-memory file holding `source`, sealed (no process that inherits it can change
    it), for BOOTSTRAP; the caller passes it to one process and closes its own copy. Read
    with pread: no file offset is shared with anyone. Linux only, as bubblewrap is."""
    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    fd = os.memfd_create("tensorjudge-source", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(source.encode("utf-8"))
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except BaseException:
        os.close(fd)
        raise
    return fd
