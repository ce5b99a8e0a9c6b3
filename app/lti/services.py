"""Calls to the platform's services with pylti1p3: grades (AGS) and the roster (NRPS)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from app.db.models import LtiRegistration
from app.lti.registrations import to_pylti

TIMEOUT_S = 10.0


class _TimedSession(requests.Session):
    """Every call to the platform bounded in time: a platform that does not answer must not
    hold the upkeep loop."""

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        kwargs.setdefault("timeout", TIMEOUT_S)
        return super().request(*args, **kwargs)


def connector(reg: LtiRegistration) -> ServiceConnector:
    session = _TimedSession()
    session.headers["User-Agent"] = "tensorjudge"
    return ServiceConnector(to_pylti(reg), session)


def members(conn: ServiceConnector, url: str) -> list[dict[str, Any]]:
    service = NamesRolesProvisioningService(conn, {"context_memberships_url": url})
    return list(service.get_members())  # type: ignore[arg-type]


def put_score(conn: ServiceConnector, ags: dict[str, Any], *, subject: str, points: float,
              max_points: float, closed: bool, resource_id: str, label: str) -> None:
    """Send a learner's score to the link's line item (made, by its resource id, when the
    launch named only the container)."""
    service = AssignmentsGradesService(conn, ags)  # type: ignore[arg-type]
    grade = (Grade().set_score_given(points).set_score_maximum(max_points)
             .set_timestamp(datetime.now(UTC).isoformat())
             .set_activity_progress("Completed" if closed else "Submitted")
             .set_grading_progress("FullyGraded").set_user_id(subject))
    lineitem = None
    if not ags.get("lineitem"):
        lineitem = (LineItem().set_score_maximum(max_points).set_label(label)
                    .set_resource_id(resource_id).set_tag("tensorjudge"))
        lineitem = service.find_or_create_lineitem(lineitem, find_by="resource_id")
    service.put_grade(grade, lineitem)
