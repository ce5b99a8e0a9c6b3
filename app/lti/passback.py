"""Grades to the learning platform (Assignment and Grade Services): for each resource link
with a grade service, each learner's gradebook total is sent once it is final (no submission
pending or failed) and differs from what was sent last. The gradebook's rules
(app/services/gradebook.py) decide the figure; a regrade or a late submission that changes
it sends it again."""

from __future__ import annotations

import logging

from sqlalchemy import select

from app.context import Context
from app.db.models import Assignment, LtiGrade, LtiLink, LtiRegistration, LtiUser, utcnow
from app.lti.services import connector, put_score
from app.services import assignments, courses, gradebook

log = logging.getLogger("tensorjudge.lti")
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


def sync(ctx: Context) -> int:
    """Send the grades that changed; returns how many were sent."""
    with ctx.db.transaction() as s:
        links = [(link.id, link.registration_id) for link in s.scalars(
            select(LtiLink).where(LtiLink.ags.is_not(None)).order_by(LtiLink.id))]
    return sum(_sync_link(ctx, link_id, reg_id) for link_id, reg_id in links)


def _sync_link(ctx: Context, link_id: int, reg_id: int) -> int:
    with ctx.db.transaction() as s:
        link = s.get(LtiLink, link_id)
        reg = s.get(LtiRegistration, reg_id)
        if link is None or reg is None or SCORE_SCOPE not in (link.ags or {}).get("scope", []):
            return 0
        a_row = s.get(Assignment, link.assignment_id)
        assert a_row is not None
        a = assignments.view_of(s, a_row, "admin")
        subjects = dict(s.execute(
            select(LtiUser.user_id, LtiUser.subject).where(
                LtiUser.registration_id == reg_id,
                LtiUser.user_id.in_(courses.learner_ids(s, a.course_id)))).all())
        rows = gradebook.rows_for(s, a, list(subjects))
        sent = {g.user_id: g.sent_points for g in s.scalars(
            select(LtiGrade).where(LtiGrade.link_id == link_id))}
        ags = dict(link.ags or {})
        conn = connector(reg)
    due = [r for r in rows if r.status == "complete"
           and any(c.status == "graded" for c in r.cells) and sent.get(r.user_id) != r.points]
    count = 0
    for r in due:
        error = None
        try:
            put_score(conn, ags, subject=subjects[r.user_id], points=r.points,
                      max_points=r.max_points, closed=a.status() == "closed",
                      resource_id=f"tensorjudge-assignment-{a.id}", label=a.title)
            count += 1
        except Exception as e:  # noqa: BLE001 - kept on the row, tried again next time
            error = f"{type(e).__name__}: {e}"[:2000]
            log.warning("grade not sent", extra={"link": link_id, "user": r.user_id,
                                                 "error": error})
        _record(ctx, link_id, r.user_id, None if error else r.points, error)
    return count


def _record(ctx: Context, link_id: int, user_id: int, points: float | None,
            error: str | None) -> None:
    with ctx.db.transaction() as s:
        g = s.scalar(select(LtiGrade).where(LtiGrade.link_id == link_id,
                                            LtiGrade.user_id == user_id))
        if g is None:
            g = LtiGrade(link_id=link_id, user_id=user_id)
            s.add(g)
        if error is None:
            g.sent_points, g.sent_at, g.error = points, utcnow(), None
        else:
            g.error = error
