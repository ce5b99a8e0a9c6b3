"""What a validated launch does here: the platform's user signs in as an account of its own
(made at the first launch), the platform's course becomes a course (made at the first
launch), the platform's role becomes the course role, and a resource link leads to the
assignment a deep link tied it to. Also the roster (Names and Role Provisioning Services)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.context import Context
from app.db.models import Assignment, Course, LtiLink, LtiRegistration, LtiUser, User
from app.services import courses
from app.services.errors import Forbidden, Invalid, NotFound
from app.services.users import UserView

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
ROLES = CLAIM + "roles"
CONTEXT = CLAIM + "context"
RESOURCE_LINK = CLAIM + "resource_link"
CUSTOM = CLAIM + "custom"
MESSAGE_TYPE = CLAIM + "message_type"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
# The custom parameter a deep link puts on the resource link it creates.
ASSIGNMENT_PARAM = "tj_assignment"


def course_role(roles: list[str]) -> str:
    """The course role of the platform's roles (LIS vocabulary): instructors and
    administrators teach, teaching assistants assist, everyone else learns."""
    names = [r.rsplit("#", 1)[-1].rsplit("/", 1)[-1] for r in roles]
    if any(n in ("Instructor", "Administrator", "ContentDeveloper") for n in names):
        return "instructor"
    if any(n == "TeachingAssistant" for n in names):
        return "ta"
    return "learner"


@dataclass(frozen=True)
class Launched:
    user: UserView
    course_id: int
    role: str
    assignment_id: int | None
    deep_link: bool


def _username(registration_id: int, subject: str) -> str:
    digest = hashlib.sha256(f"{registration_id}:{subject}".encode()).hexdigest()[:16]
    return f"lti{registration_id}-{digest}"


def user_for(s: Session, registration_id: int, subject: str) -> User:
    """The account of the platform's user, made at first sight. It has no password: it
    signs in only by launches."""
    row = s.scalar(select(User).join(LtiUser, LtiUser.user_id == User.id)
                   .where(LtiUser.registration_id == registration_id,
                          LtiUser.subject == subject))
    if row is not None:
        return row
    user = User(username=_username(registration_id, subject), password_hash="!",
                is_admin=False)
    s.add(user)
    s.flush()
    s.add(LtiUser(registration_id=registration_id, subject=subject, user_id=user.id))
    s.flush()
    return user


def _course(s: Session, reg: LtiRegistration, context: dict[str, Any]) -> Course:
    context_id = str(context.get("id") or "")
    if not context_id:
        raise Invalid("the launch names no course (its context claim has no id)")
    course = s.scalar(select(Course).where(Course.lti_registration_id == reg.id,
                                           Course.lti_context_id == context_id))
    if course is None:
        title = str(context.get("title") or context.get("label") or f"Course {context_id}")
        course = Course(title=title[:200], invite_code=courses.new_code(),
                        lti_registration_id=reg.id, lti_context_id=context_id[:255])
        s.add(course)
        s.flush()
    return course


def accept(ctx: Context, registration_id: int, body: dict[str, Any]) -> Launched:
    """Act on a validated launch's claims (pylti1p3 checked signature, expiry, nonce,
    deployment and message)."""
    with ctx.db.transaction() as s:
        reg = s.get(LtiRegistration, registration_id)
        assert reg is not None
        user = user_for(s, reg.id, str(body["sub"]))
        course = _course(s, reg, body.get(CONTEXT) or {})
        role = courses.ensure_member(s, course.id, user.id, course_role(body.get(ROLES) or []),
                                     "lti", update_role=True)
        nrps = (body.get(NRPS) or {}).get("context_memberships_url")
        if nrps:
            course.lti_memberships_url = nrps
        deep = body.get(MESSAGE_TYPE) == "LtiDeepLinkingRequest"
        if deep and role not in courses.STAFF:
            raise Forbidden("only the course's staff may pick what a link opens")
        assignment_id = None if deep else _link(s, reg, course, body)
        if assignment_id is None and not deep and role not in courses.STAFF:
            raise NotFound("this link of the learning platform opens no assignment yet: "
                           "ask the course's staff to set it up (deep linking)")
        return Launched(UserView.of(user), course.id, role, assignment_id, deep)


def _link(s: Session, reg: LtiRegistration, course: Course, body: dict[str, Any]) -> int | None:
    """The assignment a resource link opens (its custom parameter names it the first time),
    with the launch's grade service endpoint."""
    rl = str((body.get(RESOURCE_LINK) or {}).get("id") or "")
    if not rl:
        return None
    link = s.scalar(select(LtiLink).where(LtiLink.registration_id == reg.id,
                                          LtiLink.resource_link_id == rl))
    wanted = str((body.get(CUSTOM) or {}).get(ASSIGNMENT_PARAM) or "")
    if link is None and wanted.isdigit():
        a = s.get(Assignment, int(wanted))
        if a is None or a.course_id != course.id:
            raise NotFound(f"the link names assignment {wanted}, which is not one of this "
                           "course's")
        link = LtiLink(registration_id=reg.id, resource_link_id=rl[:255], assignment_id=a.id)
        s.add(link)
    if link is None:
        return None
    if body.get(AGS):
        link.ags = dict(body[AGS])
    s.flush()
    return link.assignment_id


def sync_roster(ctx: Context, actor: UserView, course_id: int) -> int:
    """Add the platform's members of the course (NRPS) with their roles; returns how many
    members the platform listed."""
    from app.lti.services import connector, members

    with ctx.db.transaction() as s:
        courses.require_instructor(s, course_id, actor)
        course = s.get(Course, course_id)
        assert course is not None
        if course.lti_registration_id is None or not course.lti_memberships_url:
            raise NotFound("this course has no roster on a learning platform (launch it from "
                           "the platform first)")
        reg = s.get(LtiRegistration, course.lti_registration_id)
        assert reg is not None
        url, reg_id = course.lti_memberships_url, reg.id
        conn = connector(reg)
    listed = members(conn, url)
    with ctx.db.transaction() as s:
        for m in listed:
            if m.get("status", "Active") != "Active" or not m.get("user_id"):
                continue
            user = user_for(s, reg_id, str(m["user_id"]))
            courses.ensure_member(s, course_id, user.id, course_role(m.get("roles") or []),
                                  "roster")
    return len(listed)
