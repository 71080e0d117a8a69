"""Errors: every failure the client raises is a :class:`LetheError`.

- :class:`ServiceError` — the service answered, but not 2xx. lethe answers an RFC 9457
  problem document (``application/problem+json``) whose ``code`` picks the subclass
  (``subject_erased`` → :class:`SubjectErasedError`, a :class:`GoneError`); an answer
  lethe's code list does not name (a proxy's 502 page) is classed by its HTTP status.
  Each carries ``status``, ``code``, ``title``, ``detail``, ``retry_after`` (seconds,
  from ``Retry-After``) and the ``problem`` document.
- :class:`UnreachableError` — no answer at all (refused, reset, cut off); its subclass
  :class:`LetheTimeoutError` when the call's deadline passed.
- :class:`ProtocolError` — an answer the client could not read (not the JSON it expected).
- :class:`InvalidArgumentError` — an argument refused before any request (a token, a
  URL, a header, an id, an option); also a ``ValueError``, and its
  :class:`InvalidArgumentTypeError` (an argument of the wrong type) also a ``TypeError``.

No message, ``repr`` or attribute ever holds the client's token: it is refused up front
when it could end up in an error (not visible ASCII), and redacted from whatever the
service or the network says. Messages name a path only to its second segment
(``/v1/subjects…``): further on it may name a subject.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple, Type

__all__ = [
    "LetheError",
    "ServiceError",
    "BadRequestError",
    "ValidationFailedError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "MethodNotAllowedError",
    "ConflictError",
    "IdempotencyKeyReusedError",
    "ItemExistsError",
    "ErasureInProgressError",
    "SourceErasedError",
    "IllegalTransitionError",
    "GoneError",
    "SubjectErasedError",
    "EntryForgottenError",
    "KeyDestroyedError",
    "ArtifactErasedError",
    "PayloadTooLargeError",
    "UnprocessableError",
    "ProvenanceRequiredError",
    "UnknownSourceError",
    "NearCopyError",
    "NotAMatchError",
    "TooManyRequestsError",
    "TooManyStreamsError",
    "ServerError",
    "InternalServerError",
    "UnavailableError",
    "UnreachableError",
    "LetheTimeoutError",
    "ProtocolError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "NoTokenError",
    "error_for",
]

#: Codes a caller may retry (the same set as the TypeScript client's LetheError.retryable).
RETRYABLE_CODES = frozenset({"erasure_in_progress", "unavailable", "too_many_streams", "epoch_unavailable"})


class LetheError(Exception):
    """Every error the client raises. ``code`` is lethe's machine code (``not_found``,
    ``subject_erased``, ``unavailable``…); ``retryable`` says whether the same call may
    succeed later."""

    code: str
    retryable: bool

    def __init__(self, message: str, *, code: str = "internal", retryable: Optional[bool] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.retryable = code in RETRYABLE_CODES if retryable is None else retryable

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class ServiceError(LetheError):
    """The service answered with a status that is not 2xx."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        title: Optional[str] = None,
        detail: str = "",
        retry_after: Optional[float] = None,
        problem: Optional[Mapping[str, Any]] = None,
    ) -> None:
        told = problem.get("retryable") if problem is not None else None
        # the problem's own word on it (``retryable: true`` on a 409 the same request may get past), else the code's
        super().__init__(message, code=code, retryable=told if isinstance(told, bool) else None)
        self.status = status
        self.title = title
        self.detail = detail
        #: Seconds the service asked to wait before trying again (``Retry-After``), or None.
        self.retry_after = retry_after
        #: The problem document as answered (token redacted), or None when the answer was not one.
        self.problem: Optional[Dict[str, Any]] = dict(problem) if problem is not None else None

    def __repr__(self) -> str:
        extra = f", retry_after={self.retry_after!r}" if self.retry_after is not None else ""
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, detail={self.detail!r}{extra})"


class BadRequestError(ServiceError):
    """400."""


class ValidationFailedError(BadRequestError):
    """400 ``validation_failed``: the request is malformed; ``detail`` names the field."""


class UnauthorizedError(ServiceError):
    """401 ``unauthorized``: no token, or one the service does not know."""


class ForbiddenError(ServiceError):
    """403 ``forbidden``: the token's role may not call this."""


class NotFoundError(ServiceError):
    """404 ``not_found``."""


class MethodNotAllowedError(ServiceError):
    """405 ``method_not_allowed``."""


class ConflictError(ServiceError):
    """409."""


class IdempotencyKeyReusedError(ConflictError):
    """409 ``idempotency_key_reused``: the Idempotency-Key was used with another body."""


class ItemExistsError(ServiceError):
    """412 ``item_exists``: an append with ``If-None-Match: *`` found the item's live entries."""


class ErasureInProgressError(ConflictError):
    """409 ``erasure_in_progress``: the subject is being erased (its key is fenced)."""


class SourceErasedError(ConflictError):
    """409 ``source_erased``: a source of the artifact was erased."""


class IllegalTransitionError(ConflictError):
    """409 ``illegal_transition``."""


class GoneError(ServiceError):
    """410: what was asked for was erased."""


class SubjectErasedError(GoneError):
    """410 ``subject_erased``: the subject's erasure destroyed its key; nothing is learnt
    about it again until an admin reinstates it."""


class EntryForgottenError(GoneError):
    """410 ``entry_forgotten``: the entry was forgotten (a records-scope erasure)."""


class KeyDestroyedError(GoneError):
    """410 ``key_destroyed``."""


class ArtifactErasedError(GoneError):
    """410 ``artifact_erased``: no source of the artifact survived an erasure."""


class PayloadTooLargeError(ServiceError):
    """413 ``payload_too_large``."""


class UnprocessableError(ServiceError):
    """422."""


class ProvenanceRequiredError(UnprocessableError):
    """422 ``provenance_required``: an artifact must name its sources."""


class UnknownSourceError(UnprocessableError):
    """422 ``unknown_source``."""


class NearCopyError(UnprocessableError):
    """422 ``near_copy``: a probe match holding a verbatim run of the erased content, or
    scoring 0.9 or more, cannot be dismissed; order its redaction."""


class NotAMatchError(UnprocessableError):
    """422 ``not_a_match``: a redaction named a record the erasure's last probe did not
    name (an admin may override with a reason)."""


class TooManyRequestsError(ServiceError):
    """429."""


class TooManyStreamsError(TooManyRequestsError):
    """429 ``too_many_streams``: the token holds as many erasure event streams open as it
    may; ``retry_after`` says how long to wait."""


class ServerError(ServiceError):
    """5xx."""


class InternalServerError(ServerError):
    """500: ``internal`` or an integrity error of stored data."""


class UnavailableError(ServerError):
    """503 ``unavailable`` / ``epoch_unavailable`` (and a proxy's 502/504): try again,
    after ``retry_after`` seconds when the service said."""


class UnreachableError(LetheError):
    """The service did not answer: connection refused, reset, or closed mid-answer.
    Whether the request took effect is unknown; retry it (appends with the same
    Idempotency-Key)."""

    def __init__(self, message: str, *, base_url: str, reason: str) -> None:
        super().__init__(message, code="unavailable", retryable=True)
        self.base_url = base_url
        #: What the network said (redacted).
        self.reason = reason


class LetheTimeoutError(UnreachableError):
    """The call's deadline passed before the answer was complete."""


class InvalidArgumentError(LetheError, ValueError):
    """An argument the client refuses before any request (a malformed token, id, timeout or
    option): a :class:`LetheError` like every error of the client, and a ``ValueError``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="validation_failed", retryable=False)


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (an id that is not a string, one string where a list
    is wanted, metadata that is not a mapping): an :class:`InvalidArgumentError`, and a
    ``TypeError`` as Python would raise."""


class NoTokenError(InvalidArgumentError):
    """The client has no token for the role a call needs (raised before any request)."""


class ProtocolError(LetheError):
    """An answer the client cannot read (a 2xx that is not the JSON expected, a stream cut
    inside an event)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="internal", retryable=False)


_BY_CODE: Dict[str, Type[ServiceError]] = {
    "validation_failed": ValidationFailedError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "not_found": NotFoundError,
    "method_not_allowed": MethodNotAllowedError,
    "conflict": ConflictError,
    "idempotency_key_reused": IdempotencyKeyReusedError,
    "item_exists": ItemExistsError,
    "erasure_in_progress": ErasureInProgressError,
    "source_erased": SourceErasedError,
    "illegal_transition": IllegalTransitionError,
    "subject_erased": SubjectErasedError,
    "entry_forgotten": EntryForgottenError,
    "key_destroyed": KeyDestroyedError,
    "artifact_erased": ArtifactErasedError,
    "payload_too_large": PayloadTooLargeError,
    "provenance_required": ProvenanceRequiredError,
    "unknown_source": UnknownSourceError,
    "near_copy": NearCopyError,
    "not_a_match": NotAMatchError,
    "too_many_streams": TooManyStreamsError,
    "internal": InternalServerError,
    "segment_malformed": InternalServerError,
    "envelope_malformed": InternalServerError,
    "envelope_unsupported": InternalServerError,
    "decrypt_failed": InternalServerError,
    "key_commitment_mismatch": InternalServerError,
    "unavailable": UnavailableError,
    "epoch_unavailable": UnavailableError,
}

_BY_STATUS: Dict[int, Type[ServiceError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    410: GoneError,
    413: PayloadTooLargeError,
    422: UnprocessableError,
    429: TooManyRequestsError,
    500: InternalServerError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}

#: The code an answer without a (known) problem code gets, by status.
_CODE_OF_STATUS: Dict[int, str] = {
    400: "validation_failed",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    429: "too_many_requests",
    500: "internal",
}


def error_for(status: int, problem_code: Optional[str]) -> Tuple[Type[ServiceError], str]:
    """The exception class and the code of an answer with this status and problem code.

    A code lethe names picks its class; any other answer is classed by its status (a 5xx
    without a known code is ``unavailable``, as in the TypeScript client)."""
    if problem_code is not None and problem_code in _BY_CODE:
        return _BY_CODE[problem_code], problem_code
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else ServiceError
    code = problem_code if problem_code is not None else _CODE_OF_STATUS.get(status, "unavailable" if status >= 500 else "http_error")
    if status >= 500 and status != 500 and problem_code is None:
        code = "unavailable"
    return cls, code
