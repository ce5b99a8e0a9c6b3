"""Bodies of the course endpoints (app/api/courses.py, app/api/assignments.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field

from app.api.schemas import Open
from app.services import assignments, gradebook, regrades
from app.services.courses import CourseView, MemberView
from app.services.similarity import Pair, Side


class CourseIn(BaseModel):
    title: str = Field(max_length=200)


class JoinIn(BaseModel):
    code: str = Field(max_length=64, description="the course's invitation code")


class MemberIn(BaseModel):
    username: str = Field(max_length=64)
    role: Literal["instructor", "ta", "learner"] = "learner"


class CourseOut(Open):
    id: int
    title: str
    role: str = Field(description="the caller's role: instructor, ta, learner (or admin)")
    invite_code: str | None = Field(description="staff only")
    members: int
    lti: bool = Field(description="linked to a learning platform's course (LTI 1.3)")
    created_at: str

    @classmethod
    def of(cls, c: CourseView) -> CourseOut:
        return cls(id=c.id, title=c.title, role=c.role, invite_code=c.invite_code,
                   members=c.members, lti=c.lti, created_at=c.created_at.isoformat())


class MemberOut(Open):
    username: str
    role: str
    joined_via: str
    joined_at: str

    @classmethod
    def of(cls, m: MemberView) -> MemberOut:
        return cls(username=m.username, role=m.role, joined_via=m.joined_via,
                   joined_at=m.joined_at.isoformat())


class ProblemPointsIn(BaseModel):
    slug: str = Field(max_length=64)
    points: float = Field(gt=0, le=10_000)


class AssignmentIn(BaseModel):
    title: str = Field(max_length=200)
    problems: list[ProblemPointsIn] = Field(min_length=1, max_length=assignments.MAX_PROBLEMS)
    opens_at: AwareDatetime
    due_at: AwareDatetime
    late_until: AwareDatetime | None = Field(
        None, description="the last moment a late submission counts (none: no late ones)")
    late_penalty_pct: float = Field(0.0, ge=0, le=100, description="percent per day late")
    scoring: Literal["best", "last"] = "best"
    feedback: Literal["full", "exam"] = Field(
        "full", description="exam: learners see verdicts only until the assignment closes")

    def spec(self) -> assignments.AssignmentSpec:
        return assignments.AssignmentSpec(
            self.title, tuple(assignments.ProblemPoints(p.slug, p.points) for p in self.problems),
            self.opens_at, self.due_at, self.late_until, self.late_penalty_pct, self.scoring,
            self.feedback)


class AssignmentProblemOut(Open):
    slug: str
    title: str
    points: float


class AssignmentOut(Open):
    id: int
    course_id: int
    title: str
    opens_at: str
    due_at: str
    late_until: str | None
    closes_at: str
    late_penalty_pct: float
    scoring: str
    feedback: str
    status: Literal["upcoming", "open", "late", "closed"]
    max_points: float
    problems: list[AssignmentProblemOut]

    @classmethod
    def of(cls, a: assignments.AssignmentView) -> AssignmentOut:
        return cls(id=a.id, course_id=a.course_id, title=a.title,
                   opens_at=a.opens_at.isoformat(), due_at=a.due_at.isoformat(),
                   late_until=a.late_until.isoformat() if a.late_until else None,
                   closes_at=a.closes_at.isoformat(), late_penalty_pct=a.late_penalty_pct,
                   scoring=a.scoring, feedback=a.feedback, status=a.status(),  # type: ignore[arg-type]
                   max_points=a.max_points,
                   problems=[AssignmentProblemOut(slug=p.slug, title=p.title, points=p.points)
                             for p in a.problems])


class CellOut(Open):
    problem: str
    points: float | None = Field(description="null: pending, a judge failure, or hidden "
                                 "until an exam closes")
    max_points: float
    status: Literal["graded", "missing", "pending", "judge-failure"]
    verdict: str | None
    submission_id: int | None
    late_days: int
    penalty_pct: float
    passed: int | None
    total: int | None
    provisional: bool


class GradeRowOut(Open):
    username: str
    user_id: int
    lti_user_id: str | None
    points: float | None
    max_points: float
    percent: float | None
    late_days: int
    status: Literal["complete", "pending", "judge-failure"]
    cells: list[CellOut]

    @classmethod
    def of(cls, r: gradebook.GradeRow, *, hidden: bool = False) -> GradeRowOut:
        return cls(username=r.username, user_id=r.user_id, lti_user_id=r.lti_user_id,
                   points=None if hidden else r.points, max_points=r.max_points,
                   percent=None if hidden else r.percent, late_days=r.late_days,
                   status=r.status,  # type: ignore[arg-type]
                   cells=[CellOut(problem=c.slug, points=c.points, max_points=c.max_points,
                                  status=c.status,  # type: ignore[arg-type]
                                  verdict=c.verdict, submission_id=c.submission_id,
                                  late_days=c.late_days, penalty_pct=c.penalty_pct,
                                  passed=c.passed, total=c.total, provisional=c.provisional)
                          for c in r.cells])


class GradebookOut(Open):
    assignment: AssignmentOut
    columns: list[str] = Field(description="the CSV export's header")
    rows: list[GradeRowOut]


class RegradeIn(BaseModel):
    problem: str = Field(max_length=64)


class RegradeItemOut(Open):
    submission_id: int
    username: str
    before: dict[str, str | int | None]
    preview: dict[str, str | int | None]
    applied_verdict: str | None
    flips: bool

    @classmethod
    def of(cls, i: regrades.ItemView) -> RegradeItemOut:
        return cls(submission_id=i.submission_id, username=i.username,
                   before={"verdict": i.before_verdict, "passed": i.before_passed,
                           "total": i.before_total},
                   preview={"status": i.preview_status, "verdict": i.preview_verdict,
                            "passed": i.preview_passed, "total": i.preview_total},
                   applied_verdict=i.applied_verdict, flips=i.flips)


class RegradeOut(Open):
    id: int
    assignment_id: int
    problem: str
    version: int
    requested_by: str
    created_at: str
    applied_at: str | None
    done: bool = Field(description="every preview judged")
    flips: list[int] = Field(description="the submissions whose verdict would change")
    items: list[RegradeItemOut]

    @classmethod
    def of(cls, r: regrades.RunView) -> RegradeOut:
        return cls(id=r.id, assignment_id=r.assignment_id, problem=r.problem,
                   version=r.version, requested_by=r.requested_by,
                   created_at=r.created_at.isoformat(),
                   applied_at=r.applied_at.isoformat() if r.applied_at else None,
                   done=r.done, flips=[i.submission_id for i in r.flips],
                   items=[RegradeItemOut.of(i) for i in r.items])


class SideOut(Open):
    submission_id: int
    username: str
    share: float
    regions: list[tuple[int, int]] = Field(description="matching source lines, first to last")
    code: str | None = None


class PairOut(Open):
    problem: str
    similarity: float
    a: SideOut
    b: SideOut

    @classmethod
    def of(cls, p: Pair, *, with_code: bool = False) -> PairOut:
        def side(x: Side) -> SideOut:
            return SideOut(submission_id=x.submission_id, username=x.username, share=x.share,
                           regions=list(x.regions), code=x.code if with_code else None)

        return cls(problem=p.problem, similarity=p.similarity, a=side(p.a), b=side(p.b))
