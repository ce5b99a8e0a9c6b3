"""What a judge's sandbox is to be: the backend and its options, made once from the settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

KINDS = ("bwrap", "docker")


@dataclass(frozen=True)
class SandboxConfig:
    # `bwrap` (bubblewrap on this host) or `docker` (a container per submission).
    kind: str = "bwrap"
    # Prepared single-use sandboxes kept ready per kind of submission, when the sandbox is
    # opened pooled (0: a fresh sandbox per submission even then); at most `pool_max_idle`
    # of them and `pool_max_idle_mb` of memory in all. With `pool_split`, an idle pool
    # judges a Submit in two sandboxes at once.
    pool_per_key: int = 0
    pool_max_idle: int = 6
    pool_max_idle_mb: int = 2048
    pool_split: bool = True
    # A judge-filled JAX compilation cache shared read-only by every sandbox, under
    # `cache_root` (None: a system folder for root, else the user's cache folder).
    compile_cache: bool = True
    cache_root: Path | None = None
    # The bubblewrap binary: a name on PATH or a path.
    bwrap: str = "bwrap"
    # Start sandboxes by forking a process that imported the libraries once, where that is
    # as safe as bubblewrap (root and cgroups); `fork_warmed`: for the kinds whose warm-up
    # runs JAX, from one that has run the warm-up as well.
    fork_server: bool = True
    fork_warmed: bool = True
    # The docker kind: the engine (None: DOCKER_HOST or the default socket), the sandbox
    # image (None: the backend's default) and the compilation cache's volume (empty: named
    # after the image).
    docker_host: str | None = None
    docker_image: str | None = None
    docker_cache_volume: str = ""
    # The in-sandbox patches of JAX and Flax internals that make a sandbox fast; off, every
    # sandbox runs the libraries as released.
    library_patches: bool = True
