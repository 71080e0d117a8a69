"""Retrying a call that failed for a reason that may pass (no answer, 503, 429, a
retryable 409).

Only retry what is safe to repeat: reads, and appends that carry an Idempotency-Key
(:meth:`lethe.LetheClient.append` makes one up when given none and keeps it across its
retries of a retryable 409; :meth:`lethe.LetheClient.append_with_retry` also across
lost answers, so the service stores the entry once however many attempts reach it).

A retryable 409 is the service refusing a write for a moment — ``erasure_in_progress``
(the subject's key fenced while a forget re-keys it, longer than the service waits), or
any 409 whose problem says ``retryable: true``: nothing was stored, and the same request
succeeds once the re-key is over. An erased subject (410 ``subject_erased``) is never
retried.
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Callable, Optional, TypeVar

from .errors import InvalidArgumentError, InvalidArgumentTypeError, LetheError, ServiceError

__all__ = ["retry_call", "is_retryable", "is_retryable_conflict", "new_idempotency_key", "CONFLICT_ATTEMPTS", "CONFLICT_BASE_DELAY", "CONFLICT_MAX_DELAY"]

#: How often the client tries a write refused with a retryable 409, the first attempt included.
CONFLICT_ATTEMPTS = 6
#: The wait before the second attempt (seconds), doubling after each (jittered to 50–100 %).
CONFLICT_BASE_DELAY = 0.1
#: The longest wait between two attempts (seconds).
CONFLICT_MAX_DELAY = 2.0

R = TypeVar("R")


def new_idempotency_key() -> str:
    """A fresh Idempotency-Key (``py-`` and 32 hex digits: within the service's
    ``A-Za-z0-9._:-``, 1–128 characters)."""
    return f"py-{uuid.uuid4().hex}"


def is_retryable(error: BaseException) -> bool:
    """Whether the same call may succeed later: no answer or a timeout, 503
    ``unavailable``, 429 ``too_many_streams``, 409 ``erasure_in_progress``."""
    return isinstance(error, LetheError) and error.retryable


def is_retryable_conflict(error: BaseException) -> bool:
    """Whether the service refused a write for a moment: a 409 that is retryable
    (``erasure_in_progress``, or a problem saying ``retryable: true``). Nothing was stored."""
    return isinstance(error, ServiceError) and error.status == 409 and error.retryable


def retry_call(
    fn: Callable[[], R],
    *,
    attempts: int = 4,
    base_delay: float = 0.25,
    max_delay: float = 8.0,
    should_retry: Callable[[BaseException], bool] = is_retryable,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Optional[Callable[[int, BaseException, float], None]] = None,
) -> R:
    """Calls ``fn`` until it returns, at most ``attempts`` times, while it raises an
    error ``should_retry`` accepts. Between attempts it waits ``base_delay · 2^(n-1)``
    (jittered to 50–100 %, at most ``max_delay``), or the ``Retry-After`` the service
    asked for when that is longer (also at most ``max_delay``). The last error is
    raised as it is. ``on_retry(attempt, error, delay)`` is told before each wait."""
    if isinstance(attempts, bool) or not isinstance(attempts, int):
        raise InvalidArgumentTypeError(f"attempts must be an integer, not {type(attempts).__name__}")
    if attempts < 1:
        raise InvalidArgumentError("attempts must be at least 1")
    attempt = 1
    while True:
        try:
            return fn()
        except Exception as e:
            if attempt >= attempts or not should_retry(e):
                raise
            delay = min(max_delay, base_delay * (2 ** (attempt - 1))) * (0.5 + random.random() / 2)
            if isinstance(e, ServiceError) and e.retry_after is not None:
                delay = max(delay, min(max_delay, e.retry_after))
            if on_retry is not None:
                on_retry(attempt, e, delay)
            sleep(delay)
            attempt += 1
