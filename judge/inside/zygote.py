"""The fork server: imports the libraries once, then forks every new sandbox from itself, so
a sandbox starts with numpy, JAX and Flax already imported (about a third of a Flax sandbox's
start-up CPU). An import-only server forks before JAX's backend starts. A warmed server (the
config's `warm`: a sandbox's preparation message) runs the runner's whole preparation first,
backend and warm-up included, and its sandboxes start where it ended: safe because every
operation ran to its end on this thread (synchronous dispatch, no concurrent schedule), and
a compilation, which would need XLA's threads, is handed back by the runner.

Self-contained like the runner: the host hands this file's source over through a descriptor
(judge/sandbox/sources.py's bootstrap, `python -I -S -B -c`), inside bubblewrap run by the
host's root without a user namespace. Its view is the sandbox's read-only layout plus the
sandbox cgroups' parent folders; no network, no judge files. It never runs submitted code
itself.

Each request (one message on the control socket, fd in argv) carries five descriptors: the
sandbox's stdin, stdout, stderr, result channel and a status pipe. For each, three processes:

    monitor   forked here; joins the sandbox's cgroup, unshares mount, pid, network, IPC, UTS
              and cgroup namespaces, waits for init and writes its exit status and CPU time
              to the status pipe (the judge is not its parent, so cannot wait for it);
    init      pid 1 of the new pid namespace: a fresh /proc and a private, size-capped /tmp
              owned by the sandbox's uid, the cgroup folders unmounted, every capability
              dropped, the sandbox's own host uid taken; then it reaps;
    runner    pid 2: the runner's main(), exactly as in a sandbox bubblewrap started.
"""

import array
import contextlib
import ctypes
import fcntl
import gc
import json
import os
import select
import signal
import socket
import sys
import time
import traceback

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
# What bubblewrap's --proc covers read-only.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
FIRST_FD = 5  # 0-2 stdio, 3 the result channel, 4 the status pipe
MADV_POPULATE_WRITE = 23  # Linux 5.14
PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT, EXCLUSIVE = 1 << 63, 1 << 56  # /proc/PID/pagemap's bits
# Pages of a warmed server that its sandboxes write first (see _pages_written_after_fork).
FIRST_WRITES: list = []
# A sandbox forked warm can compile only by handing its job back, through a patch of JAX's
# (library_patches.py): where the guard allows none, no sandbox is forked warm.
NO_PATCHES = ("a warmed fork server needs the library patches: they are off, or the libraries "
              "are not the releases they were written for")

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _b(s):
    return None if s is None else s.encode()


def _mount(src, dst, fstype, flags, data=None):
    _check(libc.mount(_b(src), _b(dst), _b(fstype), flags, _b(data)), f"mount {dst}")


def _prctl(option, arg):
    _check(libc.prctl(option, arg, 0, 0, 0), f"prctl {option}")


def _last_cap():
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except OSError:
        return 63


def _fresh_mounts(req):
    """Runs as root in the sandbox's new mount namespace, as pid 1 of its pid namespace."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    for path in req["unmount"]:
        _check(libc.umount2(_b(path), MNT_DETACH), f"umount {path}")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    uid = req["uid"]
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={req['tmpfs_bytes']},mode=0755,uid={uid},gid={uid}")


def _drop_privileges(uid):
    """From the host's root to the sandbox's own host uid, with nothing to regain."""
    for cap in range(_last_cap() + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears the permitted and effective capabilities
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    with open("/proc/self/status") as f:
        caps = [line.split()[1] for line in f if line.startswith("Cap")]
    if any(int(c, 16) for c in caps) or os.getuid() != uid or os.getgid() != uid:
        raise RuntimeError("privileges were not dropped")


def _init(req, runner_main):
    """pid 1 of the sandbox: sets it up, starts the runner, reaps until the runner ends."""
    _fresh_mounts(req)
    _drop_privileges(req["uid"])
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    os.chdir("/tmp")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    runner = os.fork()
    if runner == 0:
        os.close(4)  # the status pipe is the monitor's word, not the submission's
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh Python
        _copy_ahead(FIRST_WRITES)
        runner_main()
        os._exit(0)
    os.closerange(0, FIRST_FD)
    code = 0
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == runner:
            code = os.waitstatus_to_exitcode(status)
            break
    os._exit(code if code >= 0 else 128 - code)


def _monitor(req, fds, runner_main):
    """The sandbox's first process, forked from the server with the request's descriptors."""
    os.setsid()
    # Above every target first, so no descriptor is overwritten before it is moved.
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, FIRST_FD) for fd in fds]
    for target, fd in enumerate(moved):
        os.dup2(fd, target)
    os.closerange(FIRST_FD, os.sysconf("SC_OPEN_MAX"))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for procs in req["cgroup_procs"]:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    if req.get("background"):
        os.setpriority(os.PRIO_PROCESS, 0, 15)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    flags = (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
             | CLONE_NEWCGROUP)
    _check(libc.unshare(flags), "unshare")
    init = os.fork()
    if init == 0:
        try:
            _init(req, runner_main)
        except BaseException:
            traceback.print_exc()
        os._exit(125)
    os.closerange(0, 4)
    _, status, usage = os.wait4(init, 0)
    report = {"returncode": os.waitstatus_to_exitcode(status),
              "cpu_s": usage.ru_utime + usage.ru_stime}
    os.write(4, json.dumps(report).encode())
    os._exit(0)


def _threads():
    return len(os.listdir("/proc/self/task"))


def _load(config):
    """The runner's main, to call in each sandbox, and for a warmed server the rehearsal of
    its warm-up (None for one that only imports)."""
    runner: dict = {"__name__": "tensorjudge_runner"}
    exec(compile(config["runner_source"], "runner.py", "exec"), runner)
    runner["_setup_paths"](config)
    warm = config.get("warm")
    if warm:
        if not runner["allowed_by"](warm):
            raise RuntimeError(NO_PATCHES)
        import warnings

        # Python warns at every fork of a process with threads; these are XLA's, idle, and
        # the warning would reach every sandbox's stderr as if the user's.
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called",
                                category=RuntimeWarning)
        # A warmed server: the runner's whole preparation (imports, JAX's backend, the
        # problem's warm-up) happens once, here, and every sandbox starts where it ended.
        prepared = runner["prepare_quietly"](warm)
        *_, patches = prepared
        if not patches.active:
            raise RuntimeError(NO_PATCHES)
        return (lambda: runner["main"](prepared)), (lambda: runner["rehearse"](warm, patches))
    for name in ["numpy"] + config["preload"]:  # the runner always needs numpy
        # A failure here fails again in the runner, and is reported there.
        with contextlib.suppress(Exception):
            __import__(name)
    return runner["main"], None


def _seal_layout():
    """bubblewrap run by root makes the folders above its mount points (/opt, say) 0700; the
    sandbox's uid must pass through them. Then the layout, shared by every sandbox forked
    from here, is made read-only: only each sandbox's own /tmp can be written."""
    root_dev = os.stat("/").st_dev
    for top, subdirs, _ in os.walk("/"):
        os.chmod(top, 0o755)
        subdirs[:] = [d for d in subdirs if os.lstat(os.path.join(top, d)).st_dev == root_dev]
    for path in ("/", "/dev"):
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _private_writable():
    """[(start, end)] of this process's private writable mappings."""
    spans = []
    with open("/proc/self/maps") as f:
        for line in f:
            addresses, perms = line.split()[:2]
            if perms == "rw-p":
                start, end = (int(a, 16) for a in addresses.split("-"))
                spans.append((start, end))
    return spans


def _exclusive_pages(spans):
    """[[start, length]] of the pages in `spans` that are present and this process's alone
    (after a fork: the ones it has copied or made since), runs merged."""
    runs: list = []
    with open("/proc/self/pagemap", "rb") as f:
        for start, end in spans:
            f.seek(start // PAGE * 8)
            entries = array.array("Q")
            entries.frombytes(f.read((end - start) // PAGE * 8))
            for i, entry in enumerate(entries):
                if entry & PRESENT and entry & EXCLUSIVE:
                    address = start + i * PAGE
                    if runs and runs[-1][0] + runs[-1][1] == address:
                        runs[-1][1] += PAGE
                    else:
                        runs.append([address, PAGE])
    return runs


def _pages_written_after_fork(rehearse, timeout_s=30.0):
    """The pages of this warmed server that a process forked from it writes while it runs the
    warm-up again. A sandbox forked from here shares every page with this process, and its
    first write to each costs a page fault and a copy: thousands of them, most in the first
    test (about 15 ms on an encoder block, more on larger ones), on the learner's clock. Each
    sandbox copies these ahead, before its job (_copy_ahead): the same copies, made while it
    waits instead. Found once, by a rehearsal in a child that then ends; [] if it fails."""
    spans = _private_writable()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            rehearse()
            with os.fdopen(w, "wb") as out:
                out.write(json.dumps(_exclusive_pages(spans)).encode())
        finally:
            os._exit(0)
    os.close(w)
    data, deadline = [], time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if select.select([r], [], [], max(deadline - time.monotonic(), 0))[0]:
                chunk = os.read(r, 1 << 20)
                if not chunk:
                    break
                data.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(data) or b"[]")
    except ValueError:
        return []


def _copy_ahead(runs):
    """Make this process's own copy of the pages its job would copy on first write. No
    content changes: the kernel copies each page as a write fault would, in one call a run."""
    for start, length in runs:
        if libc.madvise(start, length, MADV_POPULATE_WRITE) != 0 and ctypes.get_errno() == 22:
            return  # EINVAL: a kernel without it (the others: a run no longer mapped)


def _lower_priority():
    """A server started for spares, which no job waits for, prepares in the background: its
    threads' niceness and its session's (the kernel shares the CPU between sessions first).
    The judge restores both once it is ready, before any sandbox is forked from it."""
    os.nice(15)
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as f:
        f.write("15")


def serve(sock):
    config = json.loads(sock.recv(1 << 20))
    if config.get("background"):
        _lower_priority()
    _seal_layout()
    runner_main, rehearse = _load(config)
    warm = rehearse is not None
    # What the imports made lives as long as every sandbox forked from here, and a collection
    # in a sandbox would write to each of those objects, copying nearly every page it shares
    # with this process: about 80 ms and 17 MiB per sandbox. Frozen, they are never visited.
    gc.freeze()
    if warm:
        FIRST_WRITES[:] = _pages_written_after_fork(rehearse)
    # Monitors report to the judge through their status pipes; the kernel reaps them here.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    sock.send(json.dumps({"pid": os.getpid(), "threads": _threads()}).encode())
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, 8)
        except OSError:
            os._exit(1)
        if not msg:
            os._exit(0)  # the judge is gone
        try:
            req = json.loads(msg)
            # One thread only, or a child could inherit a lock some other thread held. A
            # warmed server's other threads are XLA's, idle: every operation ran to its end
            # on this thread (synchronous dispatch), and none compiles between jobs.
            if len(fds) != 5 or (_threads() != 1 and not warm):
                raise RuntimeError(f"cannot fork: {len(fds)} descriptors, {_threads()} threads")
            pid = os.fork()
        except Exception as e:  # noqa: BLE001 - said to the judge, which falls back
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": f"{type(e).__name__}: {e}"}).encode())
            continue
        if pid == 0:
            try:
                sock.close()
                _monitor(req, fds, runner_main)
            except BaseException:
                traceback.print_exc()
            os._exit(125)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
