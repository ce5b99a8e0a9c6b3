"""Who started a sandbox container, as its labels say, and whether that judge is gone.

Every sandbox container carries its judge's identity: the judge (`owner`: its container, or its
host and pid, and the mark of one backend in it), the compose project of the judge's container
and that container's name. A judge removes the sandboxes of judges that are gone: containers
that no longer run or were started again since (a worker killed and restarted), processes of
this host that no longer exist.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

LABEL = "org.tensorjudge.sandbox"  # on every sandbox container: who started it
SPAWN_LABEL = "org.tensorjudge.sandbox.spawn"  # which of that judge's spawns it is
# The compose project of the judge's container ("" elsewhere) and that container's name.
DEPLOYMENT_LABEL = "org.tensorjudge.deployment"
WORKER_LABEL = "org.tensorjudge.worker"


@dataclass(frozen=True)
class Identity:
    """Who starts the sandboxes, as their labels say. `owner`: a judge that is itself a
    container of this engine names that container (so a judge beside it can tell when it is
    gone); any other judge its host and pid. After the `#`, this sandbox backend's own mark:
    one process may hold several (a server's embedded workers, a test session), and each
    must tell its containers from its siblings', which are alive while the process is."""

    owner: str
    deployment: str = ""
    worker: str = ""

    def labels(self, mark: str) -> dict[str, str]:
        return {LABEL: self.owner, SPAWN_LABEL: mark, DEPLOYMENT_LABEL: self.deployment,
                WORKER_LABEL: self.worker}


def identity(api: Any) -> Identity:
    mark = secrets.token_hex(6)
    host = socket.gethostname()
    with contextlib.suppress(Exception):
        me = api.inspect_container(host)
        if str(me["Id"]).startswith(host):
            labels = me["Config"].get("Labels") or {}
            return Identity(f"container:{me['Id']}#{mark}",
                            labels.get("com.docker.compose.project", ""),
                            str(me.get("Name", "")).lstrip("/"))
    return Identity(f"host:{host}:{os.getpid()}#{mark}", "", host)


def created_before_start(sandbox: dict, judge_state: dict,
                         created: Callable[[], str] | None = None) -> bool:
    """Whether a sandbox container (a `containers` listing's entry) was made before its
    judge's container last started: it belongs to that judge's earlier life. The listing
    gives whole seconds; within the second of the start, `created` (the engine's exact
    `Created` of the sandbox) decides, else it counts as the present life's (a worker killed
    while starting a sandbox, then restarted at once, would otherwise keep it forever)."""
    when = _instant(str(judge_state.get("StartedAt", "")))
    if when is None:
        return False
    second = float(sandbox.get("Created", 0))  # the exact time, rounded down
    if second + 1.0 <= when:
        return True
    if second > when:
        return False
    if created is None:
        return False
    exact = None
    with contextlib.suppress(Exception):  # gone meanwhile: nothing to remove
        exact = _instant(created())
    return exact is not None and exact < when


def _instant(iso: str) -> float | None:
    """An engine's RFC 3339 time (nanoseconds, `Z`) as a timestamp, to the microsecond."""
    try:
        head, _, frac = iso.rstrip("Z").partition(".")
        return datetime.fromisoformat(head + "+00:00").timestamp() + float(f"0.{frac or 0}")
    except ValueError:
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def judge_gone(api: Any, owner: str, c: dict) -> bool:
    """Whether the judge `owner` of the sandbox container `c` (a `containers` listing's
    entry, running or just created) is gone: then so is the process that would end it."""
    kind, _, rest = owner.partition("#")[0].partition(":")
    if kind == "container":
        # Gone, stopped, or started again since (a worker killed and restarted, this
        # one maybe): its process that started the sandbox is gone.
        try:
            state = api.inspect_container(rest)["State"]
        except Exception:  # noqa: BLE001 - gone
            return True
        return not state.get("Running") or created_before_start(
            c, state, lambda: str(api.inspect_container(c["Id"])["Created"]))
    if kind == "host":
        host, _, pid = rest.rpartition(":")
        return host == socket.gethostname() and pid.isdigit() and not _pid_alive(int(pid))
    return False
