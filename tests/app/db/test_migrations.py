"""The migrations and the models agree, on both databases; the schema goes up and down."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from app.db import Database
from app.db import migrate as migrations
from app.db.models import Base


def test_models_match_migrations(base_ctx):
    with base_ctx.db.engine.connect() as conn:
        mc = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(mc, Base.metadata)
    assert diff == [], diff


def test_schema_is_at_head(base_ctx):
    assert migrations.current_revision(base_ctx.db) == migrations.head_revision()
    migrations.require_current(base_ctx.db)


def test_up_down_up(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        migrations.upgrade(db)
        assert "submissions" in inspect(db.engine).get_table_names()
        from alembic import command

        cfg = migrations.alembic_config()
        with db.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "base")
        assert "submissions" not in inspect(db.engine).get_table_names()
        migrations.upgrade(db)
        assert migrations.current_revision(db) == migrations.head_revision()
    finally:
        db.dispose()


def test_an_outdated_schema_is_refused(tmp_path):
    import pytest

    db = Database(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        with pytest.raises(migrations.SchemaOutdated, match="tensorjudge db upgrade"):
            migrations.require_current(db)
    finally:
        db.dispose()


def test_sqlite_pragmas(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'p.db'}")
    try:
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        db.dispose()
