"""The tables. Migrations in `migrations/` must agree with these (a test checks)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, on every backend (SQLite keeps none)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON, list[Any]: JSON}


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(32), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Token(Base):
    """Opaque bearer tokens; only a keyed hash of each is stored."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]

    user: Mapped[User] = relationship()


class Problem(Base):
    __tablename__ = "problems"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    versions: Mapped[list[ProblemVersion]] = relationship(
        back_populates="problem", order_by="ProblemVersion.number")


class ProblemVersion(Base):
    """One immutable state of a package. Updating a package adds a version; submissions keep
    the version they were judged against. `archive` is the self-contained package (tar.gz)."""

    __tablename__ = "problem_versions"
    __table_args__ = (UniqueConstraint("problem_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"))
    number: Mapped[int]
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    title: Mapped[str] = mapped_column(String(120))
    difficulty: Mapped[str] = mapped_column(String(16))
    entry_point: Mapped[str] = mapped_column(String(128))
    signature: Mapped[str] = mapped_column(Text)
    manifest: Mapped[dict[str, Any]]
    statement: Mapped[str] = mapped_column(Text)
    starter: Mapped[str | None] = mapped_column(Text)
    archive: Mapped[bytes] = mapped_column(LargeBinary)
    samples: Mapped[list[Any] | None]  # summaries, computed once (lazily) per version
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    problem: Mapped[Problem] = relationship(back_populates="versions")
    tests: Mapped[list[ProblemTest]] = relationship(
        back_populates="version", order_by="ProblemTest.position")


class ProblemTest(Base):
    __tablename__ = "problem_tests"
    __table_args__ = (UniqueConstraint("version_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(
        ForeignKey("problem_versions.id", ondelete="CASCADE"))
    position: Mapped[int]
    name: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    seed: Mapped[int] = mapped_column(BigInteger)
    params: Mapped[dict[str, Any]]
    description: Mapped[str] = mapped_column(Text, default="")

    version: Mapped[ProblemVersion] = relationship(back_populates="tests")


class Submission(Base):
    """A submission and its place in the queue. The queue is this table: `status` queued ->
    running -> done; a running row belongs to `lease_owner` until `lease_expires_at`, and only
    the holder of the current `fence` may write its judgement."""

    __tablename__ = "submissions"
    __table_args__ = (
        Index("ix_submissions_queue", "status", "available_at"),
        Index("ix_submissions_user", "user_id", "id"),
        Index("ix_submissions_user_created", "user_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"),
                                            index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("problem_versions.id"))
    mode: Mapped[str] = mapped_column(String(8))  # submit | run
    code: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(8), default="queued")  # queued|running|done
    verdict: Mapped[str | None] = mapped_column(String(4))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    queued_at: Mapped[datetime] = mapped_column(default=utcnow)
    available_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Judged in milliseconds once claimed (no JAX to compile): the quick lane may claim it.
    quick: Mapped[bool] = mapped_column(default=False, server_default=false())
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    fence: Mapped[int] = mapped_column(BigInteger, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    # Tests judged so far by the current attempt, shown live; cleared when it ends.
    progress: Mapped[list[Any] | None]

    user: Mapped[User] = relationship()
    problem: Mapped[Problem] = relationship()
    version: Mapped[ProblemVersion] = relationship()


class Judgement(Base):
    """One final judgement of a submission. A rejudge adds another; the old ones stay."""

    __tablename__ = "judgements"
    __table_args__ = (UniqueConstraint("submission_id", "fence"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("problem_versions.id"))
    fence: Mapped[int] = mapped_column(BigInteger)
    worker: Mapped[str] = mapped_column(String(255))
    verdict: Mapped[str] = mapped_column(String(4), index=True)
    passed: Mapped[int]
    total: Mapped[int]
    result: Mapped[dict[str, Any]]
    attempts: Mapped[int]
    judge_ms: Mapped[float] = mapped_column(Float)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime] = mapped_column(default=utcnow)

    tests: Mapped[list[TestResultRow]] = relationship(
        back_populates="judgement", order_by="TestResultRow.position",
        cascade="all, delete-orphan")


class TestResultRow(Base):
    __tablename__ = "test_results"
    __test__ = False  # not a pytest class

    id: Mapped[int] = mapped_column(primary_key=True)
    judgement_id: Mapped[int] = mapped_column(
        ForeignKey("judgements.id", ondelete="CASCADE"), index=True)
    position: Mapped[int]
    name: Mapped[str] = mapped_column(String(64))
    verdict: Mapped[str | None] = mapped_column(String(4))
    time_ms: Mapped[float | None] = mapped_column(Float)
    max_abs_err: Mapped[float | None] = mapped_column(Float)
    max_rel_err: Mapped[float | None] = mapped_column(Float)
    mismatches: Mapped[int | None]
    message: Mapped[str | None] = mapped_column(Text)

    judgement: Mapped[Judgement] = relationship(back_populates="tests")


class WorkerRow(Base):
    """A judge worker's identity and heartbeat, for /healthz."""

    __tablename__ = "workers"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int]
    kind: Mapped[str] = mapped_column(String(16))  # embedded | standalone
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    current_submission_id: Mapped[int | None]
    judged: Mapped[int] = mapped_column(Integer, default=0)
