"""Retrying a call that failed for a reason that may pass (no answer, 503, 429).

Only retry what is safe to repeat: reads, and appends that carry an Idempotency-Key
(:meth:`lethe.LetheClient.append_with_retry` makes one up and keeps it across
attempts, so the service stores the entry once however many attempts reach it).
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Callable, Optional, TypeVar

from .errors import LetheError, ServiceError

__all__ = ["retry_call", "is_retryable", "new_idempotency_key"]

R = TypeVar("R")


def new_idempotency_key() -> str:
    """A fresh Idempotency-Key (``py-`` and 32 hex digits: within the service's
    ``A-Za-z0-9._:-``, 1–128 characters)."""
    return f"py-{uuid.uuid4().hex}"


def is_retryable(error: BaseException) -> bool:
    """Whether the same call may succeed later: no answer or a timeout, 503
    ``unavailable``, 429 ``too_many_streams``, 409 ``erasure_in_progress``."""
    return isinstance(error, LetheError) and error.retryable


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
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
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
