"""Configuration: environment variables prefixed TENSORJUDGE_, with embedded defaults."""

from __future__ import annotations

import contextlib
import os
import secrets
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from judge import SandboxConfig

REPO_ROOT = Path(__file__).resolve().parents[1]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TENSORJUDGE_", extra="ignore")

    # Where things live.
    data_dir: Path = Path(platformdirs.user_data_dir("tensorjudge"))
    cache_dir: Path = Path(platformdirs.user_cache_dir("tensorjudge"))
    database_url: str = ""
    secret_key: str = ""
    # `bwrap` (bubblewrap on this host) or `docker` (a container per submission).
    sandbox: str = "bwrap"
    # The docker kind: the engine (empty: DOCKER_HOST, or the default socket) and the
    # sandbox image (`./dev images` builds it).
    docker_host: str = ""
    docker_image: str = "tensorjudge-sandbox:latest"
    docker_cache_volume: str = ""  # the compilation cache's volume (empty: named after the image)
    # The bubblewrap binary: a name looked up on PATH or a path. Workers check it at start-up.
    bwrap: str = "bwrap"
    problems_dir: Path = REPO_ROOT / "problems"
    # Prepared single-use sandboxes kept ready per kind of submission (0: a fresh sandbox
    # per submission), at most `pool_max_idle` of them and `pool_max_idle_mb` of memory in
    # all (a prepared Flax sandbox holds 350-550 MB, a NumPy one about 40 MB): the defaults
    # leave half of a 4 GiB worker to judging.
    pool_size: int = Field(default=2, ge=0, le=16)
    pool_max_idle: int = Field(default=6, ge=1, le=64)
    pool_max_idle_mb: int = Field(default=2048, ge=64)
    # An idle worker judges a Submit in two prepared sandboxes at once (half the latency on
    # two cores); under load every job keeps to one.
    pool_split: bool = True
    compile_cache: bool = True  # the judge-filled, read-only JAX compilation cache
    # Where it lives (None: a system folder for root, else the user's cache folder).
    compile_cache_root: Path | None = None
    # Sandboxes forked from a server that imported the libraries once (root with cgroups;
    # elsewhere, and with false, every sandbox imports them itself).
    fork_server: bool = True
    # And for the kinds whose warm-up runs JAX, sandboxes forked from a server that has run
    # the warm-up too: a prepared sandbox costs a fork, not seconds of CPU.
    fork_warmed: bool = True
    # At start-up, each framework's fork server started at once (not when the first of its
    # submissions comes): on a fresh machine that first Submit then skips most of its
    # import. The test suite turns it off (every pool it starts would import them all).
    import_ahead: bool = True
    # The in-sandbox patches of JAX and Flax internals that make sandboxes fast (false: the
    # libraries run as released, slower).
    library_patches: bool = True

    # The queue.
    lease_seconds: float = Field(default=60.0, gt=0, description="a worker's hold on a submission")
    ie_retries: int = Field(default=3, ge=0, description="judge faults retried before IE is shown")
    ie_retry_delay_seconds: float = Field(default=2.0, ge=0)
    poll_seconds: float = Field(default=5.0, gt=0, description="idle workers look this often")
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    queue_max: int = Field(default=1000, ge=1, description="queued submissions before 503")
    workers: int = Field(default=1, ge=0, description="embedded workers of `serve`")
    quick_workers: int = Field(
        default=2, ge=0, description="per judge process with workers: extra workers that take "
        "only submissions without JAX (judged in milliseconds), so that those never wait "
        "behind compilations")

    # Submissions.
    max_code_bytes: int = 64 * 1024
    rate_limit: int = Field(default=30, ge=1, description="submissions per user per window")
    rate_window_seconds: float = Field(default=60.0, gt=0)
    max_wait_seconds: float = Field(default=60.0, ge=0, description="cap of ?wait= on long polls")

    # Users.
    token_ttl_hours: float = Field(default=24 * 30, gt=0)
    argon2_time_cost: int = Field(default=3, ge=1)
    argon2_memory_kib: int = Field(default=65536, ge=8)

    # Courses: how often each serving process rejudges assignment submissions the judge
    # failed on and sends changed grades to learning platforms (0: never).
    course_upkeep_seconds: float = Field(default=5.0, ge=0)

    log_level: str = "INFO"
    log_format: str = "json"  # json | text

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'tensorjudge.db'}"

    @property
    def is_embedded_database(self) -> bool:
        return not self.database_url

    @property
    def package_cache_dir(self) -> Path:
        return self.cache_dir / "packages"

    def sandbox_config(self) -> SandboxConfig:
        """The judge's sandbox as these settings configure it (serve, workers, the command
        line, validation and the benchmark all open theirs from this)."""
        from judge import SandboxConfig

        return SandboxConfig(
            kind=self.sandbox, pool_per_key=self.pool_size, pool_max_idle=self.pool_max_idle,
            pool_max_idle_mb=self.pool_max_idle_mb, pool_split=self.pool_split,
            compile_cache=self.compile_cache, cache_root=self.compile_cache_root,
            bwrap=self.bwrap, fork_server=self.fork_server,
            fork_warmed=self.fork_warmed, docker_host=self.docker_host or None,
            docker_image=self.docker_image, docker_cache_volume=self.docker_cache_volume,
            library_patches=self.library_patches)

    @field_validator("compile_cache_root", mode="before")
    @classmethod
    def _empty_is_unset(cls, v: object) -> object:
        # TENSORJUDGE_COMPILE_CACHE_ROOT= (empty) means the default, not the current folder.
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("secret_key")
    @classmethod
    def _no_placeholder(cls, v: str) -> str:
        # .env.example's placeholder must never sign a real session.
        if v.strip().upper() in {"CHANGE-ME", "CHANGEME", "CHANGE_ME"}:
            raise ValueError("TENSORJUDGE_SECRET_KEY is the example's placeholder: set a "
                             "long random value (./dev images writes one into .env)")
        return v

    def effective_secret_key(self) -> str:
        """The configured key, or one generated once and kept in the data directory (fine for
        a single server; several servers must share TENSORJUDGE_SECRET_KEY)."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        try:
            return path.read_text().strip()
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            key = secrets.token_urlsafe(32)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(key)
            tmp.chmod(0o600)
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)  # the first writer wins
            tmp.unlink(missing_ok=True)
            return path.read_text().strip()


@lru_cache
def get_settings() -> Settings:
    return Settings()
