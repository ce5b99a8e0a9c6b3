"""Failures the services report; the API maps each to its HTTP status."""

from __future__ import annotations


class ServiceError(Exception):
    """A refusal; `status` is the HTTP status the API answers it with (a subclass names its
    own: `class NotFound(ServiceError, status=404)`)."""

    status = 400

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    def __init_subclass__(cls, *, status: int) -> None:
        super().__init_subclass__()
        cls.status = status


class NotFound(ServiceError, status=404):
    """No such thing, or not one the caller may see."""


class Conflict(ServiceError, status=409):
    """It exists already, or its state does not allow the change."""


class Unauthorized(ServiceError, status=401):
    """The caller is not known: no token or session, or one that is not (or no longer) valid."""


class Forbidden(ServiceError, status=403):
    """The caller is known and may not do this."""


class TooLarge(ServiceError, status=413):
    """A value beyond its size limit."""


class Invalid(ServiceError, status=422):
    """A value the request carries is not acceptable; the message says which and why."""


class RateLimited(ServiceError, status=429):
    """Too many submissions in the window; `retry_after` says when the next may come."""


class QueueFull(ServiceError, status=503):
    """The judging queue is full; `retry_after` says when to try again."""
