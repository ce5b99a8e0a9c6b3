"""Courses: create, list, join by invitation code, members, and a course's assignments."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from app.api.course_schemas import (
    AssignmentIn,
    AssignmentOut,
    CourseIn,
    CourseOut,
    JoinIn,
    MemberIn,
    MemberOut,
)
from app.api.deps import CtxDep, UserDep
from app.api.schemas import MAX_ID, errors
from app.services import assignments, courses

router = APIRouter(prefix="/api/v1", tags=["courses"])

CourseId = Annotated[int, Path(ge=1, le=MAX_ID, description="a course's id")]


@router.post("/courses", status_code=201, response_model=CourseOut,
             responses=errors(401, 422))
def create_course(body: CourseIn, ctx: CtxDep, user: UserDep, response: Response) -> CourseOut:
    """A new course; the caller is its instructor."""
    c = courses.create_course(ctx, user, body.title)
    response.headers["Location"] = f"/api/v1/courses/{c.id}"
    return CourseOut.of(c)


@router.get("/courses", response_model=list[CourseOut], responses=errors(401, 422))
def list_courses(ctx: CtxDep, user: UserDep,
                 all: Annotated[bool, Query(description="every course (admins)")] = False,  # noqa: A002
                 ) -> list[CourseOut]:
    """The caller's courses, with the caller's role in each."""
    return [CourseOut.of(c) for c in courses.list_courses(ctx, user, all_courses=all)]


@router.post("/courses/join", response_model=CourseOut, responses=errors(401, 404, 422))
def join_course(body: JoinIn, ctx: CtxDep, user: UserDep) -> CourseOut:
    """Join a course as a learner by its invitation code."""
    return CourseOut.of(courses.join(ctx, user, body.code))


@router.get("/courses/{cid}", response_model=CourseOut, responses=errors(401, 404, 422))
def get_course(cid: CourseId, ctx: CtxDep, user: UserDep) -> CourseOut:
    """A course the caller belongs to (404 for anyone else)."""
    return CourseOut.of(courses.get_course(ctx, user, cid))


@router.post("/courses/{cid}/invite", response_model=CourseOut,
             responses=errors(401, 403, 404, 422))
def renew_invite(cid: CourseId, ctx: CtxDep, user: UserDep) -> CourseOut:
    """A new invitation code (instructors); the old one stops working."""
    courses.renew_invite(ctx, user, cid)
    return CourseOut.of(courses.get_course(ctx, user, cid))


@router.get("/courses/{cid}/members", response_model=list[MemberOut],
            responses=errors(401, 403, 404, 422))
def list_members(cid: CourseId, ctx: CtxDep, user: UserDep) -> list[MemberOut]:
    """The course's members (staff)."""
    return [MemberOut.of(m) for m in courses.members(ctx, user, cid)]


@router.post("/courses/{cid}/members", status_code=201, response_model=MemberOut,
             responses=errors(401, 403, 404, 422))
def add_member(cid: CourseId, body: MemberIn, ctx: CtxDep, user: UserDep) -> MemberOut:
    """Add a user with a role, or change a member's role (instructors)."""
    return MemberOut.of(courses.add_member(ctx, user, cid, body.username, body.role))


@router.delete("/courses/{cid}/members/{username}", status_code=204,
               responses=errors(401, 403, 404, 409, 422))
def remove_member(cid: CourseId, username: Annotated[str, Path(max_length=64)], ctx: CtxDep,
                  user: UserDep) -> Response:
    """Remove a member (instructors; a course keeps one instructor at least)."""
    courses.remove_member(ctx, user, cid, username)
    return Response(status_code=204)


@router.post("/courses/{cid}/assignments", status_code=201, response_model=AssignmentOut,
             responses=errors(401, 403, 404, 422))
def create_assignment(cid: CourseId, body: AssignmentIn, ctx: CtxDep, user: UserDep,
                      response: Response) -> AssignmentOut:
    """A new assignment (instructors)."""
    a = assignments.create(ctx, user, cid, body.spec())
    response.headers["Location"] = f"/api/v1/assignments/{a.id}"
    return AssignmentOut.of(a)


@router.get("/courses/{cid}/assignments", response_model=list[AssignmentOut],
            responses=errors(401, 404, 422))
def list_assignments(cid: CourseId, ctx: CtxDep, user: UserDep) -> list[AssignmentOut]:
    """The course's assignments, by due time (members)."""
    return [AssignmentOut.of(a) for a in assignments.list_for_course(ctx, user, cid)]


@router.post("/courses/{cid}/roster", response_model=list[MemberOut],
             responses=errors(401, 403, 404, 422, 502))
def sync_roster(cid: CourseId, ctx: CtxDep, user: UserDep) -> list[MemberOut]:
    """Add the learning platform's members of the course with their roles (instructors of a
    course launched through LTI; Names and Role Provisioning Services)."""
    from app.lti.launches import sync_roster

    sync_roster(ctx, user, cid)
    return [MemberOut.of(m) for m in courses.members(ctx, user, cid)]
