"""An assignment: read and change it, its gradebook (JSON and CSV), the caller's own grade,
regrades with a preview, and the similarity of its accepted submissions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from starlette.responses import PlainTextResponse

from app.api.course_schemas import (
    AssignmentIn,
    AssignmentOut,
    GradebookOut,
    GradeRowOut,
    PairOut,
    RegradeIn,
    RegradeOut,
)
from app.api.deps import CtxDep, UserDep
from app.api.schemas import MAX_ID, errors
from app.services import assignments, gradebook, regrades, similarity

router = APIRouter(prefix="/api/v1", tags=["assignments"])

AssignmentId = Annotated[int, Path(ge=1, le=MAX_ID, description="an assignment's id")]
RegradeId = Annotated[int, Path(ge=1, le=MAX_ID, description="a regrade's id")]
SubmissionId = Annotated[int, Path(ge=1, le=MAX_ID)]
Slug = Annotated[str, Query(max_length=64, description="a problem of the assignment")]


@router.get("/assignments/{aid}", response_model=AssignmentOut, responses=errors(401, 404, 422))
def get_assignment(aid: AssignmentId, ctx: CtxDep, user: UserDep) -> AssignmentOut:
    """An assignment of a course the caller belongs to."""
    return AssignmentOut.of(assignments.get(ctx, user, aid))


@router.put("/assignments/{aid}", response_model=AssignmentOut,
            responses=errors(401, 403, 404, 422))
def update_assignment(aid: AssignmentId, body: AssignmentIn, ctx: CtxDep,
                      user: UserDep) -> AssignmentOut:
    """Change an assignment (instructors); its grades follow the new times at once."""
    return AssignmentOut.of(assignments.update(ctx, user, aid, body.spec()))


@router.get("/assignments/{aid}/gradebook", response_model=GradebookOut,
            responses=errors(401, 403, 404, 422))
def get_gradebook(aid: AssignmentId, ctx: CtxDep, user: UserDep) -> GradebookOut:
    """Every learner's points per problem, with late penalties (staff). The same figures as
    the CSV export."""
    a, rows = gradebook.gradebook(ctx, user, aid)
    return GradebookOut(assignment=AssignmentOut.of(a), columns=gradebook.csv_columns(a),
                        rows=[GradeRowOut.of(r) for r in rows])


@router.get("/assignments/{aid}/gradebook.csv", response_class=PlainTextResponse,
            responses={**errors(401, 403, 404, 422),
                       200: {"content": {"text/csv": {}}, "description": "the gradebook"}})
def gradebook_csv(aid: AssignmentId, ctx: CtxDep, user: UserDep) -> Response:
    """The gradebook as CSV, in columns learning platforms import (docs/courses.md)."""
    a, rows = gradebook.gradebook(ctx, user, aid)
    return Response(gradebook.to_csv(a, rows), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition":
                             f'attachment; filename="{gradebook.csv_filename(a)}"'})


@router.get("/assignments/{aid}/grades/me", response_model=GradeRowOut,
            responses=errors(401, 404, 422))
def my_grade(aid: AssignmentId, ctx: CtxDep, user: UserDep) -> GradeRowOut:
    """The caller's own row. During an exam, verdicts only: no points until it closes."""
    a, row = gradebook.my_grade(ctx, user, aid)
    return GradeRowOut.of(row, hidden=a.exam_running())


@router.post("/assignments/{aid}/regrades", status_code=202, response_model=RegradeOut,
             responses=errors(401, 403, 404, 422))
def start_regrade(aid: AssignmentId, body: RegradeIn, ctx: CtxDep, user: UserDep,
                  response: Response) -> RegradeOut:
    """Preview a regrade of the assignment's submissions of a problem against its current
    version (staff): each is judged again as a hidden copy; nothing changes yet."""
    run = regrades.start(ctx, user, aid, body.problem)
    response.headers["Location"] = f"/api/v1/regrades/{run.id}"
    return RegradeOut.of(run)


@router.get("/assignments/{aid}/regrades", response_model=list[RegradeOut],
            responses=errors(401, 403, 404, 422))
def list_regrades(aid: AssignmentId, ctx: CtxDep, user: UserDep) -> list[RegradeOut]:
    """The assignment's regrades, newest first (staff)."""
    return [RegradeOut.of(r) for r in regrades.list_runs(ctx, user, aid)]


@router.get("/regrades/{rid}", response_model=RegradeOut, responses=errors(401, 404, 422))
def get_regrade(rid: RegradeId, ctx: CtxDep, user: UserDep) -> RegradeOut:
    """A regrade: each submission's verdict before and in the preview (and once applied,
    after), and the flips."""
    return RegradeOut.of(regrades.get(ctx, user, rid))


@router.post("/regrades/{rid}/apply", status_code=202, response_model=RegradeOut,
             responses=errors(401, 404, 409, 422))
def apply_regrade(rid: RegradeId, ctx: CtxDep, user: UserDep) -> RegradeOut:
    """Rejudge the previewed submissions against the previewed version (staff; once the
    preview is complete). Their old judgements stay."""
    return RegradeOut.of(regrades.apply(ctx, user, rid))


@router.get("/assignments/{aid}/similarity", response_model=list[PairOut],
            responses=errors(401, 403, 404, 422))
def similar_pairs(aid: AssignmentId, problem: Slug, ctx: CtxDep, user: UserDep,
                  limit: Annotated[int, Query(ge=1, le=similarity.MAX_PAIRS)] = 50,
                  ) -> list[PairOut]:
    """Pairs of learners' accepted submissions of a problem, most similar first (staff)."""
    return [PairOut.of(p) for p in similarity.pairs(ctx, user, aid, problem, limit)]


@router.get("/assignments/{aid}/similarity/{first}/{second}", response_model=PairOut,
            responses=errors(401, 403, 404, 422))
def similar_pair(aid: AssignmentId, first: SubmissionId, second: SubmissionId, problem: Slug,
                 ctx: CtxDep, user: UserDep) -> PairOut:
    """One pair with both codes and the matching regions (staff)."""
    return PairOut.of(similarity.pair(ctx, user, aid, problem, first, second), with_code=True)
