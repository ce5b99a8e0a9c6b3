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


# --- courses (app/services/courses.py, assignments.py, gradebook.py, regrades.py) ---------


class Course(Base):
    """A class brought to the judge: staff and learners, who join by `invite_code` or through
    an LTI launch from the learning platform's context (`lti_registration_id`, `lti_context_id`)."""

    __tablename__ = "courses"
    __table_args__ = (UniqueConstraint("lti_registration_id", "lti_context_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    invite_code: Mapped[str] = mapped_column(String(32), unique=True)
    lti_registration_id: Mapped[int | None] = mapped_column(
        ForeignKey("lti_registrations.id", ondelete="SET NULL"))
    lti_context_id: Mapped[str | None] = mapped_column(String(255))
    # The platform's roster (Names and Role Provisioning Services), from the last launch.
    lti_memberships_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CourseMember(Base):
    __tablename__ = "course_members"
    __table_args__ = (UniqueConstraint("course_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))  # instructor | ta | learner
    joined_via: Mapped[str] = mapped_column(String(16))  # invite | lti | roster | staff
    joined_at: Mapped[datetime] = mapped_column(default=utcnow)


class Assignment(Base):
    """Problems with an opening time, a due time and a late policy. A learner's submission of
    one of its problems made between `opens_at` and its close counts for it (services/scope.py)."""

    __tablename__ = "assignments"

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"),
                                           index=True)
    title: Mapped[str] = mapped_column(String(200))
    opens_at: Mapped[datetime]
    due_at: Mapped[datetime]
    late_until: Mapped[datetime | None]  # the last moment a late submission counts
    late_penalty_pct: Mapped[float] = mapped_column(Float, default=0.0)  # per day late
    scoring: Mapped[str] = mapped_column(String(8), default="best")  # best | last
    feedback: Mapped[str] = mapped_column(String(8), default="full")  # full | exam
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    problems: Mapped[list[AssignmentProblem]] = relationship(
        order_by="AssignmentProblem.position", cascade="all, delete-orphan")


class AssignmentProblem(Base):
    __tablename__ = "assignment_problems"
    __table_args__ = (UniqueConstraint("assignment_id", "problem_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(
        ForeignKey("assignments.id", ondelete="CASCADE"))
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"),
                                            index=True)
    position: Mapped[int]
    points: Mapped[float] = mapped_column(Float)


class RegradeRun(Base):
    """A regrade of an assignment's submissions of one problem against `version_id`: first a
    preview (each submission judged again as a hidden copy), then, when applied, a rejudge."""

    __tablename__ = "regrade_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(
        ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"))
    version_id: Mapped[int] = mapped_column(ForeignKey("problem_versions.id"))
    requested_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    applied_at: Mapped[datetime | None]


class RegradeItem(Base):
    __tablename__ = "regrade_items"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("regrade_runs.id", ondelete="CASCADE"),
                                        index=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    # The hidden copy judged against the new version (mode "preview", owned by nobody's
    # account); its judgement is the preview's verdict.
    preview_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    before_verdict: Mapped[str | None] = mapped_column(String(4))
    before_passed: Mapped[int | None]
    before_total: Mapped[int | None]


# --- LTI 1.3 (app/lti/) ------------------------------------------------------------------


class LtiRegistration(Base):
    """A learning platform this tool is registered with: its issuer and our client id there,
    its endpoints, its deployments, and the key pair this tool signs with for it."""

    __tablename__ = "lti_registrations"
    __table_args__ = (UniqueConstraint("issuer", "client_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    issuer: Mapped[str] = mapped_column(String(255))
    client_id: Mapped[str] = mapped_column(String(255))
    auth_login_url: Mapped[str] = mapped_column(Text)
    auth_token_url: Mapped[str] = mapped_column(Text)
    key_set_url: Mapped[str] = mapped_column(Text)
    auth_audience: Mapped[str | None] = mapped_column(Text)
    deployment_ids: Mapped[list[Any]]
    tool_private_key: Mapped[str] = mapped_column(Text)
    tool_public_key: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class LtiUser(Base):
    """A platform's user (`sub`) and the account it signs in as."""

    __tablename__ = "lti_users"
    __table_args__ = (UniqueConstraint("registration_id", "subject"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    registration_id: Mapped[int] = mapped_column(
        ForeignKey("lti_registrations.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)


class LtiLink(Base):
    """A platform's resource link launching an assignment, and the line item its grades go to
    (Assignment and Grade Services)."""

    __tablename__ = "lti_links"
    __table_args__ = (UniqueConstraint("registration_id", "resource_link_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    registration_id: Mapped[int] = mapped_column(
        ForeignKey("lti_registrations.id", ondelete="CASCADE"))
    resource_link_id: Mapped[str] = mapped_column(String(255))
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"),
                                               index=True)
    ags: Mapped[dict[str, Any] | None]  # the launch's AGS endpoint claim


class LtiGrade(Base):
    """What was last sent to the platform for a learner on a link."""

    __tablename__ = "lti_grades"
    __table_args__ = (UniqueConstraint("link_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    link_id: Mapped[int] = mapped_column(ForeignKey("lti_links.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    sent_points: Mapped[float | None] = mapped_column(Float)
    sent_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)


class LtiState(Base):
    """pylti1p3's launch data (nonces, states, validated launches) kept between the OIDC login
    and the launch, whichever server answers each."""

    __tablename__ = "lti_state"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[dict[str, Any]]
    expires_at: Mapped[datetime] = mapped_column(index=True)
