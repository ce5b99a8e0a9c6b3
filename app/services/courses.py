"""Courses and their members: instructors, teaching assistants and learners.

The rules, in one place:
- anyone signed in may create a course, and becomes its instructor;
- learners join by the course's invitation code (or through an LTI launch, app/lti/);
  instructors add members with a role, and renew the code;
- a course is seen only by its members (and administrators): to anyone else it does not
  exist (NotFound, not Forbidden, so that its existence does not leak);
- staff (instructor, teaching assistant) see the course's submissions and results; the
  instructor alone changes the course and its assignments.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.context import Context
from app.db.models import Course, CourseMember, User
from app.services.errors import Conflict, Forbidden, Invalid, NotFound
from app.services.users import UserView

ROLES = ("instructor", "ta", "learner")
STAFF = ("instructor", "ta")
ROLE_WORDS = {"instructor": "Instructor", "ta": "Teaching assistant", "learner": "Learner",
              "admin": "Administrator"}
# The command line acts as this administrator (it has the database itself).
ADMIN = UserView(0, "(admin)", True)
MAX_TITLE = 200


@dataclass(frozen=True)
class CourseView:
    id: int
    title: str
    role: str  # the viewer's: instructor | ta | learner | admin
    invite_code: str | None  # staff only
    members: int
    lti: bool
    created_at: datetime

    @property
    def is_staff(self) -> bool:
        return self.role in (*STAFF, "admin")


@dataclass(frozen=True)
class MemberView:
    user_id: int
    username: str
    role: str
    joined_via: str
    joined_at: datetime


def check_title(title: str) -> str:
    title = title.strip()
    if not title or len(title) > MAX_TITLE:
        raise Invalid(f"title: 1 to {MAX_TITLE} characters")
    return title


def new_code() -> str:
    return secrets.token_urlsafe(9)


# --- roles -------------------------------------------------------------------------------


def role_of(s: Session, course_id: int, user: UserView) -> str | None:
    """The user's role in the course ("admin" for administrators), None for a stranger."""
    if user.is_admin:
        return "admin"
    return s.scalar(select(CourseMember.role).where(CourseMember.course_id == course_id,
                                                    CourseMember.user_id == user.id))


def require_member(s: Session, course_id: int, user: UserView) -> str:
    role = role_of(s, course_id, user) if s.get(Course, course_id) is not None else None
    if role is None:
        raise NotFound(f"no course {course_id}")
    return role


def require_staff(s: Session, course_id: int, user: UserView) -> str:
    role = require_member(s, course_id, user)
    if role not in (*STAFF, "admin"):
        raise Forbidden("only the course's staff may do this")
    return role


def require_instructor(s: Session, course_id: int, user: UserView) -> str:
    role = require_member(s, course_id, user)
    if role not in ("instructor", "admin"):
        raise Forbidden("only the course's instructors may do this")
    return role


def _view(s: Session, course: Course, role: str) -> CourseView:
    members = s.scalar(select(func.count()).where(CourseMember.course_id == course.id)) or 0
    staff = role in (*STAFF, "admin")
    return CourseView(course.id, course.title, role, course.invite_code if staff else None,
                      int(members), course.lti_registration_id is not None, course.created_at)


# --- courses -----------------------------------------------------------------------------


def create_course(ctx: Context, actor: UserView, title: str, *,
                  instructor: str | None = None) -> CourseView:
    """A new course; its instructor is the actor (or, from the command line, `instructor`)."""
    title = check_title(title)
    with ctx.db.transaction() as s:
        owner_id = actor.id
        if instructor is not None:
            owner_id = _user_id(s, instructor)
        course = Course(title=title, invite_code=new_code())
        s.add(course)
        s.flush()
        if owner_id:
            s.add(CourseMember(course_id=course.id, user_id=owner_id, role="instructor",
                               joined_via="staff"))
            s.flush()
        return _view(s, course, "admin" if actor.is_admin else "instructor")


def _user_id(s: Session, username: str) -> int:
    uid = s.scalar(select(User.id).where(User.username == username))
    if uid is None:
        raise NotFound(f"no user {username!r}")
    return uid


def list_courses(ctx: Context, user: UserView, *, all_courses: bool = False) -> list[CourseView]:
    """The user's courses (every course, for an administrator asking for all)."""
    with ctx.db.transaction() as s:
        if all_courses and user.is_admin:
            return [_view(s, c, "admin") for c in s.scalars(select(Course).order_by(Course.id))]
        rows = s.execute(select(Course, CourseMember.role)
                         .join(CourseMember, CourseMember.course_id == Course.id)
                         .where(CourseMember.user_id == user.id).order_by(Course.id)).all()
        return [_view(s, c, role) for c, role in rows]


def get_course(ctx: Context, user: UserView, course_id: int) -> CourseView:
    with ctx.db.transaction() as s:
        role = require_member(s, course_id, user)
        course = s.get(Course, course_id)
        assert course is not None
        return _view(s, course, role)


def join(ctx: Context, user: UserView, code: str) -> CourseView:
    """Join as a learner by the invitation code (a member already keeps their role)."""
    code = code.strip()
    if not code or len(code) > 32:
        raise NotFound("no course has this invitation code")
    with ctx.db.transaction() as s:
        course = s.scalar(select(Course).where(Course.invite_code == code))
        if course is None:
            raise NotFound("no course has this invitation code")
        role = ensure_member(s, course.id, user.id, "learner", "invite")
        return _view(s, course, role)


def ensure_member(s: Session, course_id: int, user_id: int, role: str, via: str, *,
                  update_role: bool = False) -> str:
    """Add the user with `role` unless already a member; the role of a member changes only
    with `update_role` (an LTI launch says what the platform's role is now). Returns the
    member's role."""
    if role not in ROLES:
        raise Invalid(f"role: one of {', '.join(ROLES)}")
    member = s.scalar(select(CourseMember).where(CourseMember.course_id == course_id,
                                                 CourseMember.user_id == user_id))
    if member is None:
        s.add(CourseMember(course_id=course_id, user_id=user_id, role=role, joined_via=via))
        s.flush()
        return role
    if update_role and member.role != role:
        member.role = role
    return member.role


def add_member(ctx: Context, actor: UserView, course_id: int, username: str,
               role: str) -> MemberView:
    """Add a user (or change a member's role): the instructor's act."""
    with ctx.db.transaction() as s:
        require_instructor(s, course_id, actor)
        uid = _user_id(s, username)
        ensure_member(s, course_id, uid, role, "staff", update_role=True)
        return _members(s, course_id, uid)[0]


def remove_member(ctx: Context, actor: UserView, course_id: int, username: str) -> None:
    with ctx.db.transaction() as s:
        require_instructor(s, course_id, actor)
        uid = _user_id(s, username)
        member = s.scalar(select(CourseMember).where(CourseMember.course_id == course_id,
                                                     CourseMember.user_id == uid))
        if member is None:
            raise NotFound(f"{username!r} is not a member of course {course_id}")
        if member.role == "instructor" and s.scalar(
                select(func.count()).where(CourseMember.course_id == course_id,
                                           CourseMember.role == "instructor")) == 1:
            raise Conflict("a course keeps at least one instructor")
        s.delete(member)


def _members(s: Session, course_id: int, user_id: int | None = None) -> list[MemberView]:
    q = (select(CourseMember, User.username).join(User, User.id == CourseMember.user_id)
         .where(CourseMember.course_id == course_id))
    if user_id is not None:
        q = q.where(CourseMember.user_id == user_id)
    order = {r: i for i, r in enumerate(ROLES)}
    rows = [MemberView(m.user_id, name, m.role, m.joined_via, m.joined_at)
            for m, name in s.execute(q).all()]
    return sorted(rows, key=lambda m: (order.get(m.role, 9), m.username))


def members(ctx: Context, actor: UserView, course_id: int) -> list[MemberView]:
    with ctx.db.transaction() as s:
        require_staff(s, course_id, actor)
        return _members(s, course_id)


def learner_ids(s: Session, course_id: int) -> list[int]:
    return list(s.scalars(select(CourseMember.user_id).where(
        CourseMember.course_id == course_id, CourseMember.role == "learner")))


def renew_invite(ctx: Context, actor: UserView, course_id: int) -> str:
    with ctx.db.transaction() as s:
        require_instructor(s, course_id, actor)
        course = s.get(Course, course_id)
        assert course is not None
        course.invite_code = new_code()
        return course.invite_code


def find_course(ctx: Context, ref: str) -> int:
    """A course id from the command line: its id, or its exact title."""
    if ref.isdigit():
        return int(ref)
    with ctx.db.transaction() as s:
        ids = list(s.scalars(select(Course.id).where(Course.title == ref)))
    if not ids:
        raise NotFound(f"no course {ref!r}")
    if len(ids) > 1:
        raise Conflict(f"{len(ids)} courses are titled {ref!r}: give the id")
    return ids[0]
