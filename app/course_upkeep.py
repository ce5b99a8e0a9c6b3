"""The courses' background work, in a thread of each serving process: judge failures of
assignment submissions rejudged (an Internal Error is never a zero, app/services/
gradebook.py), and changed grades sent to the learning platforms (app/lti/passback.py).
Both are idempotent: several servers doing it at once change nothing twice."""

from __future__ import annotations

import logging
import threading

from sqlalchemy import and_, func, select

from app.context import Context
from app.db.models import Assignment, AssignmentProblem, CourseMember, Judgement, Submission
from app.services import gradebook, scope, submissions

log = logging.getLogger("tensorjudge.courses")


def rejudge_failures(ctx: Context) -> int:
    """Queue again the assignment submissions whose current verdict is a judge failure, up
    to gradebook.MAX_FAILURE_REJUDGES times each."""
    with ctx.db.transaction() as s:
        ids = list(s.scalars(
            select(Submission.id).distinct().select_from(Assignment)
            .join(AssignmentProblem, AssignmentProblem.assignment_id == Assignment.id)
            .join(CourseMember, CourseMember.course_id == Assignment.course_id)
            .join(Submission, and_(Submission.problem_id == AssignmentProblem.problem_id,
                                   Submission.user_id == CourseMember.user_id))
            .where(scope.counts_for(), Submission.status == "done",
                   Submission.verdict == "IE")))
        if not ids:
            return 0
        tries = dict(s.execute(select(Judgement.submission_id, func.count())
                               .where(Judgement.submission_id.in_(ids),
                                      Judgement.verdict == "IE")
                               .group_by(Judgement.submission_id)).all())
    failed = sorted(i for i in ids if tries.get(i, 0) <= gradebook.MAX_FAILURE_REJUDGES)
    if failed:
        log.info("rejudging judge failures", extra={"submissions": failed})
        submissions.rejudge(ctx, failed, latest_version=False)
    return len(failed)


class CourseUpkeep(threading.Thread):
    def __init__(self, ctx: Context, stop: threading.Event, every: float) -> None:
        super().__init__(name="course-upkeep", daemon=True)
        self.ctx, self.stop, self.every = ctx, stop, every

    def run(self) -> None:
        from app.lti import passback

        while not self.stop.wait(self.every):
            for step in (rejudge_failures, passback.sync):
                try:
                    step(self.ctx)
                except Exception as e:  # noqa: BLE001 - the next round tries again
                    log.warning("course upkeep failed", extra={"step": step.__name__,
                                                               "error": str(e)})
