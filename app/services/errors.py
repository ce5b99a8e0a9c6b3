"""Failures the services report; the API maps each to its HTTP status."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class Unauthorized(ServiceError):
    status = 401


class Forbidden(ServiceError):
    status = 403


class TooLarge(ServiceError):
    status = 413


class Invalid(ServiceError):
    status = 422


class RateLimited(ServiceError):
    status = 429


class QueueFull(ServiceError):
    status = 503
