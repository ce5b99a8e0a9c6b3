"""Schema migrations (alembic, scripts in `migrations/`), run from code."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from app.db import Database
from app.settings import REPO_ROOT

MIGRATIONS_DIR = REPO_ROOT / "migrations"
# Any fixed number: serialises concurrent `upgrade`s (several servers starting at once).
_PG_LOCK_KEY = 0x74_6A_75_64_67_65  # "tjudge"


class SchemaOutdated(RuntimeError):
    pass


def alembic_config(url: str | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(db: Database, revision: str = "head") -> None:
    cfg = alembic_config()
    with db.engine.begin() as conn:
        if db.is_postgres:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def require_current(db: Database) -> None:
    """Refuse to work on a database whose schema is not the one this code expects."""
    have, want = current_revision(db), head_revision()
    if have != want:
        raise SchemaOutdated(
            f"the database schema is at revision {have or 'none'}, this code needs {want}: "
            "run `tensorjudge db upgrade`")
