"""courses, assignments, regrades and LTI 1.3

Revision ID: 0004
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lti_registrations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("issuer", sa.String(length=255), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("auth_login_url", sa.Text(), nullable=False),
        sa.Column("auth_token_url", sa.Text(), nullable=False),
        sa.Column("key_set_url", sa.Text(), nullable=False),
        sa.Column("auth_audience", sa.Text(), nullable=True),
        sa.Column("deployment_ids", sa.JSON(), nullable=False),
        sa.Column("tool_private_key", sa.Text(), nullable=False),
        sa.Column("tool_public_key", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_registrations")),
        sa.UniqueConstraint(
            "issuer", "client_id", name=op.f("uq_lti_registrations_issuer_client_id")
        ),
    )
    op.create_table(
        "lti_state",
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_lti_state")),
    )
    with op.batch_alter_table("lti_state", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_state_expires_at"), ["expires_at"], unique=False)

    op.create_table(
        "courses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("invite_code", sa.String(length=32), nullable=False),
        sa.Column("lti_registration_id", sa.Integer(), nullable=True),
        sa.Column("lti_context_id", sa.String(length=255), nullable=True),
        sa.Column("lti_memberships_url", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["lti_registration_id"],
            ["lti_registrations.id"],
            name=op.f("fk_courses_lti_registration_id_lti_registrations"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_courses")),
        sa.UniqueConstraint("invite_code", name=op.f("uq_courses_invite_code")),
        sa.UniqueConstraint(
            "lti_registration_id",
            "lti_context_id",
            name=op.f("uq_courses_lti_registration_id_lti_context_id"),
        ),
    )
    op.create_table(
        "lti_users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("registration_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["registration_id"],
            ["lti_registrations.id"],
            name=op.f("fk_lti_users_registration_id_lti_registrations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_lti_users_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_users")),
        sa.UniqueConstraint(
            "registration_id", "subject", name=op.f("uq_lti_users_registration_id_subject")
        ),
    )
    with op.batch_alter_table("lti_users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_users_user_id"), ["user_id"], unique=False)

    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("opens_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("late_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("late_penalty_pct", sa.Float(), nullable=False),
        sa.Column("scoring", sa.String(length=8), nullable=False),
        sa.Column("feedback", sa.String(length=8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["course_id"],
            ["courses.id"],
            name=op.f("fk_assignments_course_id_courses"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assignments")),
    )
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_assignments_course_id"), ["course_id"], unique=False)

    op.create_table(
        "course_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("joined_via", sa.String(length=16), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["course_id"],
            ["courses.id"],
            name=op.f("fk_course_members_course_id_courses"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_course_members_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_course_members")),
        sa.UniqueConstraint(
            "course_id", "user_id", name=op.f("uq_course_members_course_id_user_id")
        ),
    )
    with op.batch_alter_table("course_members", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_course_members_user_id"), ["user_id"], unique=False)

    op.create_table(
        "assignment_problems",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("points", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignments.id"],
            name=op.f("fk_assignment_problems_assignment_id_assignments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["problem_id"],
            ["problems.id"],
            name=op.f("fk_assignment_problems_problem_id_problems"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assignment_problems")),
        sa.UniqueConstraint(
            "assignment_id",
            "problem_id",
            name=op.f("uq_assignment_problems_assignment_id_problem_id"),
        ),
    )
    with op.batch_alter_table("assignment_problems", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_assignment_problems_problem_id"), ["problem_id"], unique=False
        )

    op.create_table(
        "lti_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("registration_id", sa.Integer(), nullable=False),
        sa.Column("resource_link_id", sa.String(length=255), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("ags", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignments.id"],
            name=op.f("fk_lti_links_assignment_id_assignments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["registration_id"],
            ["lti_registrations.id"],
            name=op.f("fk_lti_links_registration_id_lti_registrations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_links")),
        sa.UniqueConstraint(
            "registration_id",
            "resource_link_id",
            name=op.f("uq_lti_links_registration_id_resource_link_id"),
        ),
    )
    with op.batch_alter_table("lti_links", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_lti_links_assignment_id"), ["assignment_id"], unique=False
        )

    op.create_table(
        "regrade_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("requested_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignments.id"],
            name=op.f("fk_regrade_runs_assignment_id_assignments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["problem_id"],
            ["problems.id"],
            name=op.f("fk_regrade_runs_problem_id_problems"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["problem_versions.id"],
            name=op.f("fk_regrade_runs_version_id_problem_versions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regrade_runs")),
    )
    with op.batch_alter_table("regrade_runs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_regrade_runs_assignment_id"), ["assignment_id"], unique=False
        )

    op.create_table(
        "lti_grades",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("link_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("sent_points", sa.Float(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["link_id"],
            ["lti_links.id"],
            name=op.f("fk_lti_grades_link_id_lti_links"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_lti_grades_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_grades")),
        sa.UniqueConstraint("link_id", "user_id", name=op.f("uq_lti_grades_link_id_user_id")),
    )
    op.create_table(
        "regrade_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("preview_id", sa.Integer(), nullable=False),
        sa.Column("before_verdict", sa.String(length=4), nullable=True),
        sa.Column("before_passed", sa.Integer(), nullable=True),
        sa.Column("before_total", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["preview_id"],
            ["submissions.id"],
            name=op.f("fk_regrade_items_preview_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["regrade_runs.id"],
            name=op.f("fk_regrade_items_run_id_regrade_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_regrade_items_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regrade_items")),
    )
    with op.batch_alter_table("regrade_items", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_regrade_items_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("regrade_items", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_regrade_items_run_id"))

    op.drop_table("regrade_items")
    op.drop_table("lti_grades")
    with op.batch_alter_table("regrade_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_regrade_runs_assignment_id"))

    op.drop_table("regrade_runs")
    with op.batch_alter_table("lti_links", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_links_assignment_id"))

    op.drop_table("lti_links")
    with op.batch_alter_table("assignment_problems", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_assignment_problems_problem_id"))

    op.drop_table("assignment_problems")
    with op.batch_alter_table("course_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_course_members_user_id"))

    op.drop_table("course_members")
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_assignments_course_id"))

    op.drop_table("assignments")
    with op.batch_alter_table("lti_users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_users_user_id"))

    op.drop_table("lti_users")
    op.drop_table("courses")
    with op.batch_alter_table("lti_state", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_state_expires_at"))

    op.drop_table("lti_state")
    op.drop_table("lti_registrations")
