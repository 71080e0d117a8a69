"""``LetheClient``: lethe's HTTP API from Python, standard library only.

A client holds a token per role (``writer``, ``eraser``, ``approver``, ``backup``, ``admin``) or
one for all, and each call carries the token of the role its route needs. Every
method takes ``timeout`` (seconds; default the client's), the deadline for its whole
answer. Failures raise :mod:`lethe.errors`.
"""

from __future__ import annotations

import json
import ssl
import time
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, TypeVar, Union

from ._http import (
    EventStreamResponse,
    HttpResult,
    Transport,
    _check_timeout,
    check_list,
    check_mapping,
    check_number,
    check_token,
    path_segment,
    tls_context,
)
from .errors import (
    ErasureInProgressError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LetheTimeoutError,
    NoTokenError,
    ProtocolError,
    TooManyStreamsError,
    UnreachableError,
)
from .models import (
    AppendedEntry,
    Artifact,
    ArtifactInfo,
    Backup,
    BackupTaken,
    BulkErasureItem,
    Certificate,
    Entry,
    DismissalAccepted,
    ErasureAccepted,
    ErasureEnd,
    ErasureEvent,
    ErasureTransition,
    ErasureView,
    Lease,
    Page,
    Provenance,
    Regeneration,
    Reinstatement,
    SearchResult,
    SigningKey,
    SubjectKey,
    Superseded,
    SupersededMany,
    TrainingExposure,
    WrittenArtifact,
)
from .retry import CONFLICT_ATTEMPTS, CONFLICT_BASE_DELAY, CONFLICT_MAX_DELAY, is_retryable, is_retryable_conflict, new_idempotency_key, retry_call
from .sse import iter_lines, parse_sse

__all__ = ["LetheClient", "ErasureEventStream", "DEFAULT_URL", "ROLES"]

DEFAULT_URL = "http://127.0.0.1:8787"
VERSION = "0.1.0"
#: The service's roles; admin may call every route.
ROLES = ("writer", "eraser", "approver", "backup", "admin")
T = TypeVar("T")


def _page(data: Any, key: str, parse: Callable[[Any], T], what: str) -> Page[T]:
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise ProtocolError(f"the service's {what} has no {key} list")
    cursor = data.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        raise ProtocolError(f"the service's {what} has a nextCursor that is not a string")
    fence = data.get("readFence")
    return Page(items=[parse(item) for item in data[key]], next_cursor=cursor, read_fence=fence if isinstance(fence, str) else None)


def _follow(fetch: Callable[[Optional[str]], Page[T]]) -> Iterator[Page[T]]:
    cursor: Optional[str] = None
    while True:
        page = fetch(cursor)
        yield page
        if page.next_cursor is None:
            return
        if page.next_cursor == cursor:
            raise ProtocolError("the service answered the same cursor twice")
        cursor = page.next_cursor


def _object(data: Any, what: str) -> Dict[str, Any]:
    if not isinstance(data, dict):
        raise ProtocolError(f"the service's {what} is not a JSON object")
    return data


def _set(body: Dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


class ErasureEventStream:
    """An erasure's events stream (``GET /v1/erasures/{id}/events``), open: iterate it for
    :class:`ErasureTransition` (``step`` events) and, last, one :class:`ErasureEnd`.
    Use it in a ``with`` block, or ``close()`` it, to drop the connection early."""

    def __init__(self, response: EventStreamResponse) -> None:
        self._response = response
        self._events = parse_sse(iter_lines(response.chunks()))
        #: The id of the last event read: pass it as ``last_event_id`` to resume.
        self.last_event_id: Optional[str] = None
        #: The ``end`` event, once read.
        self.end: Optional[ErasureEnd] = None

    def __iter__(self) -> "ErasureEventStream":
        return self

    def __next__(self) -> ErasureEvent:
        for event in self._events:
            if event.id is not None:
                self.last_event_id = event.id
            if event.event not in ("step", "end"):
                continue  # an event kind this client does not know yet
            try:
                data = json.loads(event.data)
            except ValueError:
                self.close()
                raise ProtocolError(f"an erasure {event.event} event that is not JSON") from None
            if event.event == "step":
                return ErasureTransition.from_json(data)
            self.end = ErasureEnd.from_json(data)
            return self.end
        self.close()
        raise StopIteration

    def close(self) -> None:
        self._response.close()

    def __enter__(self) -> "ErasureEventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LetheClient:
    """A client of one lethe service.

    Each call goes out with the token of the role its route needs — ``writer`` (keys,
    leases, appends, reads, search, artifacts), ``eraser`` (erasures, forget,
    certificates, dismissal proposals), ``approver`` (approving dismissals: a second
    person's token), ``backup`` (backups, key validity), ``admin`` (search of all
    subjects, reinstate, signing-key rotation; admin may call every route): the role's
    entry of ``tokens``, else ``token``, else ``tokens["admin"]``.

    >>> lethe = LetheClient("http://127.0.0.1:8787", tokens={"writer": "dev-writer-token", "eraser": "dev-eraser-token"})
    >>> lethe.append("user:42", "prefers tea to coffee").entry_id  # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: Optional[str] = None,
        *,
        tokens: Optional[Mapping[str, str]] = None,
        timeout: float = 30.0,
        ssl_context: Optional[ssl.SSLContext] = None,
        ca_file: Optional[str] = None,
        client_cert: Optional[str] = None,
        client_key: Optional[str] = None,
        conflict_attempts: int = CONFLICT_ATTEMPTS,
        conflict_delay: float = CONFLICT_BASE_DELAY,
        conflict_max_delay: float = CONFLICT_MAX_DELAY,
    ) -> None:
        check_number(conflict_attempts, "conflict_attempts", minimum=1, integer=True)
        check_number(conflict_delay, "conflict_delay")
        check_number(conflict_max_delay, "conflict_max_delay")
        #: How appends, leases and key creations retry a retryable 409 (a forget re-keying the subject): attempts, first wait, longest wait.
        self._conflict = (conflict_attempts, conflict_delay, conflict_max_delay)
        if ca_file is not None or client_cert is not None or client_key is not None:
            if ssl_context is not None:
                raise InvalidArgumentError("give ssl_context, or ca_file / client_cert / client_key, not both")
            ssl_context = tls_context(ca_file, client_cert, client_key)
        by_role: Dict[str, str] = {}
        for role, value in check_mapping(tokens or {}, "tokens").items():
            if role not in ROLES:
                raise InvalidArgumentError(f"tokens: unknown role {str(role)[:20]!r} (roles: {', '.join(ROLES)})")
            by_role[role] = check_token(value)
        self._token = check_token(token) if token is not None else None
        self._tokens = by_role
        secrets = list(by_role.values()) + ([self._token] if self._token is not None else [])
        self._http = Transport(base_url, secrets=secrets, timeout=timeout, ssl_context=ssl_context, user_agent=f"lethe-python/{VERSION}")

    @property
    def base_url(self) -> str:
        return self._http.base_url

    @property
    def timeout(self) -> float:
        return self._http.timeout

    def __repr__(self) -> str:
        roles = sorted(set(self._tokens) | ({"*"} if self._token is not None else set()))
        return f"LetheClient(base_url={self.base_url!r}, tokens=<redacted: {', '.join(roles) or 'none'}>, timeout={self.timeout:g})"

    def _token_for(self, role: Optional[str]) -> Optional[str]:
        if role is None:
            return None  # a public route: no token goes out
        token = self._tokens.get(role) or self._token or self._tokens.get("admin")
        if token is None:
            raise NoTokenError(f"no token for the {role} role: give tokens={{'{role}': ...}}, token=, or an admin token")
        return token

    def _call(self, role: Optional[str], method: str, path: str, **kwargs: Any) -> HttpResult:
        return self._http.call(method, path, token=self._token_for(role), **kwargs)

    def _write(self, role: str, method: str, path: str, **kwargs: Any) -> HttpResult:
        """:meth:`_call`, tried again while the service refuses it for a moment (a
        retryable 409: nothing was stored), at most ``conflict_attempts`` times."""
        attempts, base_delay, max_delay = self._conflict
        return retry_call(
            lambda: self._call(role, method, path, **kwargs),
            attempts=attempts,
            base_delay=base_delay,
            max_delay=max_delay,
            should_retry=is_retryable_conflict,
        )

    def _stream(self, role: str, method: str, path: str, **kwargs: Any) -> EventStreamResponse:
        return self._http.open_stream(method, path, token=self._token_for(role), **kwargs)

    # -- service ---------------------------------------------------------------------

    def health(self, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """``GET /healthz`` (no token)."""
        return _object(self._call(None, "GET", "/healthz", timeout=timeout).json(), "health")

    def ready(self, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """``GET /readyz``: every check by name; 503 (:class:`~lethe.errors.UnavailableError`) while not ready."""
        return _object(self._call(None, "GET", "/readyz", timeout=timeout).json(), "readiness")

    # -- keys and leases (writer) ----------------------------------------------------

    def ensure_key(self, subject: str, *, timeout: Optional[float] = None) -> SubjectKey:
        """``PUT /v1/subjects/{subject}/key``: the subject's live key, created if needed
        (retried while a forget re-keys the subject)."""
        r = self._write("writer", "PUT", f"/v1/subjects/{path_segment(subject, 'subject')}/key", timeout=timeout)
        return SubjectKey.from_json(r.json(), created=r.status == 201)

    def lease(self, subject: str, *, timeout: Optional[float] = None) -> Lease:
        """``POST /v1/subjects/{subject}/key/lease``: the subject's data key, for this
        lease's lifetime. Release it when done (:meth:`release_lease`, or :meth:`leased`).
        Retried while a forget re-keys the subject (a retryable 409)."""
        return Lease.from_json(self._write("writer", "POST", f"/v1/subjects/{path_segment(subject, 'subject')}/key/lease", timeout=timeout).json())

    def release_lease(self, subject: str, lease: Union[Lease, str], *, timeout: Optional[float] = None) -> None:
        """``DELETE /v1/subjects/{subject}/key/lease/{leaseId}``: the lease ends now (an
        erasure then need not wait for it to expire). Idempotent; a lease id lethe never
        handed out for the subject raises :class:`~lethe.errors.NotFoundError`."""
        lease_id = lease.lease_id if isinstance(lease, Lease) else lease
        path = f"/v1/subjects/{path_segment(subject, 'subject')}/key/lease/{path_segment(lease_id, 'lease_id')}"
        self._call("writer", "DELETE", path, timeout=timeout)

    @contextmanager
    def leased(self, subject: str, *, timeout: Optional[float] = None) -> Iterator[Lease]:
        """A lease for the ``with`` block: released, and its key wiped, when the block ends."""
        lease = self.lease(subject, timeout=timeout)
        try:
            yield lease
        finally:
            lease.wipe()
            self.release_lease(subject, lease, timeout=timeout)

    def key_validity(self, key_ids: Sequence[str], *, timeout: Optional[float] = None) -> Dict[str, str]:
        """``POST /v1/keys/validity`` (backup role): ``active``, ``destruction_pending``,
        ``destroyed`` or ``unknown`` per key id."""
        data = self._call("backup", "POST", "/v1/keys/validity", json_body={"keyIds": check_list(key_ids, "key_ids")}, timeout=timeout).json()
        keys = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(keys, dict):
            raise ProtocolError("the service's key validity has no keys")
        return {str(k): str(v) for k, v in keys.items()}

    # -- the episodic log (writer) -----------------------------------------------------

    def append(
        self,
        subject: str,
        text: str,
        *,
        kind: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> AppendedEntry:
        """``POST /v1/subjects/{subject}/entries``: the service seals the entry under the
        subject's key (no lease needed). Every append carries an Idempotency-Key
        (``idempotency_key``, or a fresh one) and is retried under it while the service
        refuses it for a moment (a retryable 409: a forget re-keying the subject), so the
        caller sees one success and one stored entry; an erased subject raises
        :class:`~lethe.errors.SubjectErasedError` at once. A retry with the same key and
        body stores nothing and answers the first append (``replayed=True``); the same
        key with another body raises :class:`~lethe.errors.IdempotencyKeyReusedError`."""
        body: Dict[str, Any] = {"text": text}
        _set(body, "kind", kind)
        if metadata is not None:
            body["metadata"] = check_mapping(metadata, "metadata")
        headers = {"Idempotency-Key": idempotency_key if idempotency_key is not None else new_idempotency_key()}
        r = self._write("writer", "POST", f"/v1/subjects/{path_segment(subject, 'subject')}/entries", json_body=body, headers=headers, timeout=timeout)
        return AppendedEntry.from_json(r.json(), replayed=r.status == 200 and (r.headers.get("Idempotent-Replayed") or "").lower() == "true")

    def append_with_retry(
        self,
        subject: str,
        text: str,
        *,
        kind: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        attempts: int = 4,
        base_delay: float = 0.25,
        max_delay: float = 8.0,
        timeout: Optional[float] = None,
    ) -> AppendedEntry:
        """:meth:`append` under one Idempotency-Key (``idempotency_key``, or a fresh one),
        retried while the failure may pass — no answer, a timeout, 503, 429 — so an append
        whose answer was lost is stored once. A retryable 409 (a forget re-keying the
        subject) is retried by :meth:`append` itself; one still refused after those
        retries (the subject being erased as a whole) is not retried again."""
        key = idempotency_key if idempotency_key is not None else new_idempotency_key()
        return retry_call(
            lambda: self.append(subject, text, kind=kind, metadata=metadata, idempotency_key=key, timeout=timeout),
            attempts=attempts,
            base_delay=base_delay,
            max_delay=max_delay,
            should_retry=lambda e: is_retryable(e) and not isinstance(e, ErasureInProgressError),
        )

    def supersede(
        self,
        subject: str,
        entry_id: str,
        text: str,
        *,
        kind: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> Superseded:
        """``POST /v1/subjects/{subject}/entries/{entryId}/supersede``: updates a memory.
        The successor (``text``, ``kind``, ``metadata``, as in :meth:`append`) is stored and
        the old version forgotten in one transaction: from the answer on, ``entry_id``
        raises :class:`~lethe.errors.EntryForgottenError`, and its records-scope erasure
        (``superseded.erasure_id``) does not count the successor. With a writer token: only
        entries that token wrote (else :class:`~lethe.errors.ForbiddenError`; an eraser
        token: any). Retried while the service refuses it for a moment (a retryable 409: a
        forget re-keying the subject; nothing was stored). An entry already forgotten or
        superseded raises :class:`~lethe.errors.ConflictError` (``conflict``): supersede its
        current version. The route takes no Idempotency-Key: a supersession whose answer
        was lost is not retried (a second one is that conflict)."""
        body: Dict[str, Any] = {"text": text}
        _set(body, "kind", kind)
        if metadata is not None:
            body["metadata"] = check_mapping(metadata, "metadata")
        path = f"/v1/subjects/{path_segment(subject, 'subject')}/entries/{path_segment(entry_id, 'entry_id')}/supersede"
        r = self._write("writer", "POST", path, json_body=body, timeout=timeout)
        return Superseded.from_json(r.json(), location=r.headers.get("Location"))

    def supersede_all(
        self,
        subject: str,
        entry_ids: Sequence[str],
        entries: Sequence[Mapping[str, Any]],
        *,
        timeout: Optional[float] = None,
    ) -> SupersededMany:
        """``POST /v1/subjects/{subject}/supersede``: updates a memory held in several
        entries (a store item's fields). ``entries`` (each ``{"text", "kind"?,
        "metadata"?}``, as in :meth:`append`) replace ``entry_ids`` in one transaction, or
        nothing does; one records-scope erasure forgets the old ones and counts none of
        the successors. Permissions and retries as in :meth:`supersede`."""
        path = f"/v1/subjects/{path_segment(subject, 'subject')}/supersede"
        body = {"entryIds": check_list(entry_ids, "entry_ids"), "entries": [check_mapping(e, "each of entries") for e in check_list(entries, "entries")]}
        r = self._write("writer", "POST", path, json_body=body, timeout=timeout)
        return SupersededMany.from_json(r.json(), location=r.headers.get("Location"))

    def entry(self, entry_id: str, *, timeout: Optional[float] = None) -> Entry:
        """``GET /v1/entries/{entryId}``, with a read fence. A forgotten entry raises
        :class:`~lethe.errors.EntryForgottenError`."""
        return Entry.from_json(self._call("writer", "GET", f"/v1/entries/{path_segment(entry_id, 'entry_id')}", timeout=timeout).json())

    def entries(self, subject: str, *, limit: Optional[int] = None, cursor: Optional[str] = None, timeout: Optional[float] = None) -> Page[Entry]:
        """One page of ``GET /v1/subjects/{subject}/entries`` (by seq), with a read fence
        covering it; ``next_cursor`` fetches the next."""
        path = f"/v1/subjects/{path_segment(subject, 'subject')}/entries"
        data = self._call("writer", "GET", path, query={"limit": limit, "cursor": cursor}, timeout=timeout).json()
        return _page(data, "entries", Entry.from_json, "entries")

    def iter_entry_pages(self, subject: str, *, page_size: Optional[int] = None, timeout: Optional[float] = None) -> Iterator[Page[Entry]]:
        """Every page of the subject's entries, following ``nextCursor``."""
        return _follow(lambda c: self.entries(subject, limit=page_size, cursor=c, timeout=timeout))

    def iter_entries(self, subject: str, *, page_size: Optional[int] = None, timeout: Optional[float] = None) -> Iterator[Entry]:
        """Every entry of the subject, in seq order, page after page."""
        for page in self.iter_entry_pages(subject, page_size=page_size, timeout=timeout):
            yield from page.items

    # -- search (writer; allSubjects: admin) -----------------------------------------

    def search(
        self,
        query: str,
        *,
        subject: Optional[str] = None,
        subjects: Optional[Sequence[str]] = None,
        all_subjects: bool = False,
        k: Optional[int] = None,
        mode: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        time_field: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> SearchResult:
        """``POST /v1/search`` within one scope — exactly one of ``subject``, ``subjects``
        (1–100) or ``all_subjects=True`` (an admin token). An artifact is a hit only when
        every subject its provenance reaches is in scope. ``mode``: ``"hybrid"`` (the
        default), ``"vector"`` or ``"lexical"``. ``since``/``until`` (ISO dates) keep to
        memories of that time: their ``created_at``, or the metadata field ``time_field``."""
        given = (subject is not None) + (subjects is not None) + bool(all_subjects)
        if given != 1:
            raise InvalidArgumentError("name the subject to search: exactly one of subject, subjects or all_subjects=True")
        if isinstance(subjects, str):
            raise InvalidArgumentTypeError("subjects is a list of subject ids (use subject= for one)")
        if mode is not None and mode not in ("hybrid", "vector", "lexical"):
            raise InvalidArgumentError("mode is one of hybrid, vector or lexical")
        body: Dict[str, Any] = {"query": query}
        _set(body, "k", k)
        _set(body, "mode", mode)
        _set(body, "since", since)
        _set(body, "until", until)
        _set(body, "timeField", time_field)
        _set(body, "subject", subject)
        if subjects is not None:
            body["subjects"] = check_list(subjects, "subjects")
        if all_subjects:
            body["allSubjects"] = True
        return SearchResult.from_json(self._call("admin" if all_subjects else "writer", "POST", "/v1/search", json_body=body, timeout=timeout).json())

    # -- derived artifacts -------------------------------------------------------------

    def create_artifact(
        self,
        kind: str,
        text: str,
        sources: Sequence[str],
        *,
        generator: Optional[str] = None,
        read_fence: Optional[str] = None,
        read_fences: Optional[Sequence[str]] = None,
        timeout: Optional[float] = None,
    ) -> WrittenArtifact:
        """``POST /v1/artifacts``: a summary, fact or digest naming its sources (entry and
        artifact ids). Pass the read fences of the reads it was made from: the write is
        refused (:class:`~lethe.errors.ErasureInProgressError` / a 4xx) if anything they
        cover was erased meanwhile."""
        body: Dict[str, Any] = {"kind": kind, "text": text, "sources": check_list(sources, "sources")}
        _set(body, "generator", generator)
        _set(body, "readFence", read_fence)
        if read_fences is not None:
            body["readFences"] = check_list(read_fences, "read_fences")
        return WrittenArtifact.from_json(self._call("writer", "POST", "/v1/artifacts", json_body=body, timeout=timeout).json())

    def artifact(self, artifact_id: str, *, timeout: Optional[float] = None) -> Artifact:
        """``GET /v1/artifacts/{artifactId}``: the current version, with a read fence."""
        return Artifact.from_json(self._call("writer", "GET", f"/v1/artifacts/{path_segment(artifact_id, 'artifact_id')}", timeout=timeout).json())

    def artifacts(self, *, limit: Optional[int] = None, cursor: Optional[str] = None, timeout: Optional[float] = None) -> Page[ArtifactInfo]:
        """One page of ``GET /v1/artifacts`` (by creation)."""
        data = self._call("writer", "GET", "/v1/artifacts", query={"limit": limit, "cursor": cursor}, timeout=timeout).json()
        return _page(data, "artifacts", ArtifactInfo.from_json, "artifacts")

    def iter_artifacts(self, *, page_size: Optional[int] = None, timeout: Optional[float] = None) -> Iterator[ArtifactInfo]:
        for page in _follow(lambda c: self.artifacts(limit=page_size, cursor=c, timeout=timeout)):
            yield from page.items

    def provenance(self, artifact_id: str, *, timeout: Optional[float] = None) -> Provenance:
        """``GET /v1/artifacts/{artifactId}/provenance`` (writer, eraser)."""
        return Provenance.from_json(self._call("writer", "GET", f"/v1/artifacts/{path_segment(artifact_id, 'artifact_id')}/provenance", timeout=timeout).json())

    def regenerate(self, artifact_id: str, *, excluding: Optional[Sequence[str]] = None, timeout: Optional[float] = None) -> Regeneration:
        """``POST /v1/artifacts/{artifactId}/regenerate`` (writer, eraser): the artifact and
        everything above it rewritten from the surviving sources (minus ``excluding``)."""
        path = f"/v1/artifacts/{path_segment(artifact_id, 'artifact_id')}/regenerate"
        if excluding is None:
            r = self._call("writer", "POST", path, timeout=timeout)
        else:
            r = self._call("writer", "POST", path, json_body={"excluding": check_list(excluding, "excluding")}, timeout=timeout)
        return Regeneration.from_json(r.json())

    def record_training_exposure(self, corpus: str, ids: Sequence[str], *, model: Optional[str] = None, timeout: Optional[float] = None) -> TrainingExposure:
        """``POST /v1/training-exposures``: these entries or artifacts went into a training corpus."""
        body: Dict[str, Any] = {"corpus": corpus, "ids": check_list(ids, "ids")}
        _set(body, "model", model)
        return TrainingExposure.from_json(self._call("writer", "POST", "/v1/training-exposures", json_body=body, timeout=timeout).json())

    # -- erasure (eraser) ----------------------------------------------------------------

    def erase(
        self,
        subject: str,
        *,
        entry_ids: Optional[Sequence[str]] = None,
        reason: Optional[str] = None,
        legal_basis: Optional[str] = None,
        public_attributes: Optional[Sequence[str]] = None,
        unlearning: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> ErasureAccepted:
        """``POST /v1/erasures``: erase the subject — or, with ``entry_ids``, forget only
        those entries of it. ``created`` is False when the subject's erasure was already
        open (the same erasure). Follow it with :meth:`wait_for_erasure` or
        :meth:`follow_erasure`."""
        body: Dict[str, Any] = {"subject": subject}
        if entry_ids is not None:
            if isinstance(entry_ids, str):
                raise InvalidArgumentTypeError("entry_ids is a list of entry ids")
            body["entryIds"] = check_list(entry_ids, "entry_ids")
        _set(body, "reason", reason)
        _set(body, "legalBasis", legal_basis)
        if public_attributes is not None:
            body["publicAttributes"] = check_list(public_attributes, "public_attributes")
        if unlearning is not None:
            body["unlearning"] = check_mapping(unlearning, "unlearning")
        r = self._call("eraser", "POST", "/v1/erasures", json_body=body, timeout=timeout)
        return ErasureAccepted.from_json(r.json(), created=r.status == 202, location=r.headers.get("Location"))

    def erase_many(
        self,
        subjects: Sequence[str],
        *,
        reason: Optional[str] = None,
        legal_basis: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> List[BulkErasureItem]:
        """``POST /v1/erasures/batch``: erase 1 to 1,000 distinct subjects at once, one
        erasure and certificate each. A subject refused (never seen, …) is answered in its
        own item and fails no other; a malformed request raises
        :class:`~lethe.errors.ValidationFailedError` and creates nothing."""
        if isinstance(subjects, str):
            raise InvalidArgumentTypeError("subjects is a list of subject ids")
        body: Dict[str, Any] = {"subjects": check_list(subjects, "subjects")}
        _set(body, "reason", reason)
        _set(body, "legalBasis", legal_basis)
        r = self._call("eraser", "POST", "/v1/erasures/batch", json_body=body, timeout=timeout)
        data = r.json()
        items = data.get("erasures") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ProtocolError("the service's bulk erasure has no erasures list")
        return [BulkErasureItem.from_json(i) for i in items]

    def forget(self, entry_id: str, *, timeout: Optional[float] = None) -> ErasureAccepted:
        """``DELETE /v1/entries/{entryId}``: forget one memory (a records-scope erasure).
        From now on the entry answers :class:`~lethe.errors.EntryForgottenError` and is
        absent from lists and search. With a writer token: only entries that token wrote
        (else :class:`~lethe.errors.ForbiddenError`)."""
        r = self._call("eraser", "DELETE", f"/v1/entries/{path_segment(entry_id, 'entry_id')}", timeout=timeout)
        return ErasureAccepted.from_json(r.json(), created=r.status == 202, location=r.headers.get("Location"))

    def erasure(self, erasure_id: str, *, timeout: Optional[float] = None) -> ErasureView:
        """``GET /v1/erasures/{erasureId}``."""
        return ErasureView.from_json(self._call("eraser", "GET", f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}", timeout=timeout).json())

    def erasures(
        self, *, subject: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None, timeout: Optional[float] = None
    ) -> Page[ErasureView]:
        """One page of ``GET /v1/erasures`` (by creation, oldest first), optionally of one subject."""
        data = self._call("eraser", "GET", "/v1/erasures", query={"subject": subject, "limit": limit, "cursor": cursor}, timeout=timeout).json()
        return _page(data, "erasures", ErasureView.from_json, "erasures")

    def iter_erasures(self, *, subject: Optional[str] = None, page_size: Optional[int] = None, timeout: Optional[float] = None) -> Iterator[ErasureView]:
        for page in _follow(lambda c: self.erasures(subject=subject, limit=page_size, cursor=c, timeout=timeout)):
            yield from page.items

    def follow_erasure(
        self,
        erasure_id: str,
        *,
        last_event_id: Optional[Union[str, int]] = None,
        timeout: Optional[float] = None,
        idle_timeout: Optional[float] = 600.0,
    ) -> ErasureEventStream:
        """Opens ``GET /v1/erasures/{erasureId}/events`` (server-sent events): one
        :class:`ErasureTransition` per step transition, then an :class:`ErasureEnd`, then the
        stream ends. ``last_event_id`` resumes after that event. ``timeout`` bounds the
        answer's head; ``idle_timeout`` the wait for each next byte (None: no bound — a
        step may wait quietly, e.g. for an outstanding lease to expire)."""
        headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else None
        response = self._stream(
            "eraser", "GET", f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/events", headers=headers, timeout=timeout, idle_timeout=idle_timeout
        )
        return ErasureEventStream(response)

    def wait_for_erasure(
        self,
        erasure_id: str,
        *,
        timeout: float = 600.0,
        on_event: Optional[Callable[[ErasureEvent], None]] = None,
    ) -> ErasureView:
        """Until the erasure has finished (``completed``, ``incomplete`` or ``failed``): its
        final view. Follows the events stream (resuming after a dropped connection; waiting
        while the service refuses another stream). ``on_event`` is told every event from the
        first, the final :class:`ErasureEnd` included, even when the erasure had finished
        already. Past ``timeout`` seconds raises :class:`~lethe.errors.LetheTimeoutError`."""
        _check_timeout(timeout, "timeout")
        deadline = time.monotonic() + timeout

        def left() -> float:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LetheTimeoutError(f"erasure {erasure_id} did not finish within {timeout:g} s", base_url=self.base_url, reason="timed out")
            return remaining

        view = self.erasure(erasure_id, timeout=min(self.timeout, left()))
        last_id: Optional[str] = None
        ended = False
        while not (view.finished and (ended or on_event is None)):
            pause = 0.0
            try:
                with self.follow_erasure(erasure_id, last_event_id=last_id, timeout=min(self.timeout, left()), idle_timeout=left()) as stream:
                    for event in stream:
                        last_id = stream.last_event_id or last_id
                        if on_event is not None:
                            on_event(event)
                        if isinstance(event, ErasureEnd):
                            ended = True
                            break
                    else:
                        pause = 0.5  # the stream ended without its end event: ask again shortly
            except TooManyStreamsError as e:
                pause = e.retry_after if e.retry_after is not None else 1.0
            except LetheTimeoutError:
                left()  # past the deadline: raises the erasure's timeout
                pause = 0.5
            except UnreachableError:
                pause = 0.5
            if pause:
                time.sleep(min(pause, left()))
            view = self.erasure(erasure_id, timeout=min(self.timeout, left()))
        return view

    def erasure_certificate(self, erasure_id: str, *, timeout: Optional[float] = None) -> Certificate:
        """``GET /v1/erasures/{erasureId}/certificate``: the signed certificate alone
        (:class:`~lethe.errors.ConflictError` while it has none yet). Not verified here:
        ``Certificate.save(path)`` then ``lethe certificate verify <path> --url <vault>``."""
        return Certificate.from_json(self._call("eraser", "GET", f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/certificate", timeout=timeout).json())

    def erasure_report(self, erasure_id: str, *, timeout: Optional[float] = None) -> str:
        """``GET /v1/erasures/{erasureId}/report``: the self-contained HTML report."""
        r = self._call("eraser", "GET", f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/report", accept="text/html", timeout=timeout)
        return r.body.decode("utf-8", "replace")

    def redact(self, erasure_id: str, ids: Sequence[str], *, override_reason: Optional[str] = None, timeout: Optional[float] = None) -> ErasureAccepted:
        """``POST /v1/erasures/{erasureId}/redactions``: re-key other subjects' logs without
        these entries (the probe named them as carrying the erased subject's content), then
        probe again. Only records the last probe named are taken
        (:class:`~lethe.errors.NotAMatchError`); ``override_reason`` (sent with the admin
        role's token, audited) takes others."""
        body: Dict[str, Any] = {"ids": check_list(ids, "ids")}
        if override_reason is not None:
            body["override"] = {"reason": override_reason}
        role = "admin" if override_reason is not None else "eraser"
        r = self._call(role, "POST", f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/redactions", json_body=body, timeout=timeout)
        return ErasureAccepted.from_json(r.json(), created=r.status == 202, location=r.headers.get("Location"))

    def dismiss(self, erasure_id: str, matches: Sequence[Mapping[str, str]], *, timeout: Optional[float] = None) -> DismissalAccepted:
        """``POST /v1/erasures/{erasureId}/dismissals``: propose that records the probe named
        (``[{"id": ..., "reason": ...}]``) do not carry the subject's content. A proposal
        changes nothing until a second person approves it (:meth:`approve_dismissal`); a
        near copy cannot be dismissed (:class:`~lethe.errors.NearCopyError`). The reason is
        signed into the certificate in the clear: state the judgement, never the content."""
        body = {"matches": [check_mapping(m, "each of matches") for m in check_list(matches, "matches")]}
        r = self._call("eraser", "POST", f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/dismissals", json_body=body, timeout=timeout)
        return DismissalAccepted.from_json(r.json())

    def approve_dismissal(self, erasure_id: str, dismissal_id: str, *, timeout: Optional[float] = None) -> DismissalAccepted:
        """``POST /v1/erasures/{erasureId}/dismissals/{dismissalId}/approve`` (approver, or
        admin): a second principal's approval — never the token that proposed it, nor the
        one that requested the erasure (:class:`~lethe.errors.ForbiddenError`); the probe
        runs again without the records."""
        path = f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/dismissals/{path_segment(dismissal_id, 'dismissal_id')}/approve"
        return DismissalAccepted.from_json(self._call("approver", "POST", path, timeout=timeout).json())

    def revoke_dismissal(self, erasure_id: str, dismissal_id: str, *, reason: Optional[str] = None, timeout: Optional[float] = None) -> DismissalAccepted:
        """``POST /v1/erasures/{erasureId}/dismissals/{dismissalId}/revoke`` (approver, eraser
        or admin): a proposal rejected, or an approved ruling revoked (the probe runs again
        and counts its records)."""
        path = f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/dismissals/{path_segment(dismissal_id, 'dismissal_id')}/revoke"
        body = {"reason": reason} if reason is not None else {}
        return DismissalAccepted.from_json(self._call("approver", "POST", path, json_body=body, timeout=timeout).json())

    def resume_erasure(self, erasure_id: str, *, timeout: Optional[float] = None) -> ErasureView:
        """``POST /v1/erasures/{erasureId}/resume``: a failed erasure runs again from the
        step that failed (:class:`~lethe.errors.ConflictError` when it is not failed)."""
        return ErasureView.from_json(self._call("eraser", "POST", f"/v1/erasures/{path_segment(erasure_id, 'erasure_id')}/resume", timeout=timeout).json())

    # -- certificates (no token) -----------------------------------------------------

    def certificate_keys(self, *, timeout: Optional[float] = None) -> List[SigningKey]:
        """``GET /v1/certificates/keys``: every certificate-signing public key, current
        first, then retired ones — the trusted set ``lethe certificate verify`` checks against."""
        data = self._call(None, "GET", "/v1/certificates/keys", timeout=timeout).json()
        keys = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(keys, list):
            raise ProtocolError("the service's certificate keys have no keys list")
        return [SigningKey.from_json(k) for k in keys]

    def rotate_certificate_key(self, *, timeout: Optional[float] = None) -> Dict[str, SigningKey]:
        """``POST /v1/certificates/keys/rotate`` (admin): a new current signing key; the old
        one retires (still listed, so what it signed still verifies). ``{"current", "retired"}``."""
        data = _object(self._call("admin", "POST", "/v1/certificates/keys/rotate", timeout=timeout).json(), "key rotation")
        return {"current": SigningKey.from_json(data.get("current")), "retired": SigningKey.from_json(data.get("retired"))}

    # -- backups (backup) ------------------------------------------------------------

    def take_backup(self, *, timeout: Optional[float] = None) -> BackupTaken:
        """``POST /v1/backups``: takes a backup and answers when it is stored (give it a
        ``timeout`` that fits the store)."""
        return BackupTaken.from_json(self._call("backup", "POST", "/v1/backups", timeout=timeout).json())

    def backups(self, *, limit: Optional[int] = None, cursor: Optional[str] = None, timeout: Optional[float] = None) -> Page[Backup]:
        """One page of ``GET /v1/backups`` (oldest first)."""
        data = self._call("backup", "GET", "/v1/backups", query={"limit": limit, "cursor": cursor}, timeout=timeout).json()
        return _page(data, "backups", Backup.from_json, "backups")

    def iter_backups(self, *, page_size: Optional[int] = None, timeout: Optional[float] = None) -> Iterator[Backup]:
        for page in _follow(lambda c: self.backups(limit=page_size, cursor=c, timeout=timeout)):
            yield from page.items

    def backup_manifest(self, backup_id: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """``GET /v1/backups/{backupId}/manifest``: the manifest's current version, as answered."""
        return _object(self._call("backup", "GET", f"/v1/backups/{path_segment(backup_id, 'backup_id')}/manifest", timeout=timeout).json(), "manifest")

    # -- admin -------------------------------------------------------------------------

    def reinstate(self, subject: str, reason: str, *, timeout: Optional[float] = None) -> Reinstatement:
        """``POST /v1/subjects/{subject}/reinstate`` (admin, audited): lethe may learn about
        an erased subject again. :class:`~lethe.errors.ConflictError` when it is not erased."""
        data = self._call("admin", "POST", f"/v1/subjects/{path_segment(subject, 'subject')}/reinstate", json_body={"reason": reason}, timeout=timeout).json()
        return Reinstatement.from_json(data)

