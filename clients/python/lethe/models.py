"""What the service answers, as frozen dataclasses (snake_case fields; times are the
ISO 8601 strings the service sends).

A ``repr`` never shows a data key, an entry's or artifact's text or metadata, or a read
fence: a model printed into a log leaks no plaintext or key. Each model built from a
JSON object keeps that object as ``raw`` (also out of the ``repr``), fields the client
does not know yet included.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, Iterator, List, Mapping, Optional, Tuple, TypeVar, Union

from .errors import ProtocolError

__all__ = [
    "TERMINAL_ERASURE_STATUSES",
    "SubjectKey",
    "Lease",
    "AppendedEntry",
    "SupersededVersion",
    "Superseded",
    "Entry",
    "Page",
    "SearchHit",
    "SearchResult",
    "WrittenArtifact",
    "Artifact",
    "ArtifactInfo",
    "ProvenanceSource",
    "Provenance",
    "RegeneratedArtifact",
    "Regeneration",
    "TrainingExposure",
    "ErasureAccepted",
    "DismissalAccepted",
    "ErasureStep",
    "Residual",
    "ProbeMatch",
    "Probe",
    "Certificate",
    "ErasureView",
    "ErasureTransition",
    "ErasureEnd",
    "ErasureEvent",
    "SigningKey",
    "Backup",
    "BackupTaken",
    "Reinstatement",
]

#: An erasure in one of these has finished (an ``incomplete`` one may run again after a redaction or dismissal).
TERMINAL_ERASURE_STATUSES = frozenset({"completed", "incomplete", "failed"})

T = TypeVar("T")
_MISSING: Any = object()


def _obj(value: Any, what: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"the service answered {what} that is not a JSON object")
    return value


def _get(d: Mapping[str, Any], key: str, kind: Union[type, Tuple[type, ...]], what: str, default: Any = _MISSING) -> Any:
    if key not in d or d[key] is None:
        if default is not _MISSING:
            return default
        raise ProtocolError(f"the service's {what} has no {key}")
    value = d[key]
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ProtocolError(f"the service's {what} has a {key} of the wrong type")
    if not isinstance(value, kind):
        raise ProtocolError(f"the service's {what} has a {key} of the wrong type")
    return value


def _opt(d: Mapping[str, Any], key: str, kind: Union[type, Tuple[type, ...]], what: str) -> Any:
    return _get(d, key, kind, what, None)


def _strs(d: Mapping[str, Any], key: str, what: str, default: Any = _MISSING) -> Any:
    value = _get(d, key, list, what, default)
    if value is default:
        return value
    if not all(isinstance(v, str) for v in value):
        raise ProtocolError(f"the service's {what} has a {key} that is not a list of strings")
    return list(value)


@dataclass(frozen=True)
class SubjectKey:
    """``PUT /v1/subjects/{subject}/key``: the subject's live key (``created``: made by this call)."""

    subject: str
    key_id: str
    state: str
    created_at: str
    created: bool
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any, created: bool) -> "SubjectKey":
        d = _obj(value, "a key")
        w = "key"
        return cls(_get(d, "subject", str, w), _get(d, "keyId", str, w), _get(d, "state", str, w), _get(d, "createdAt", str, w), created, d)


@dataclass(frozen=True)
class Lease:
    """A lease of a subject's data key. ``dek`` is the 32-byte key itself: keep it in
    memory only, release the lease when done (``LetheClient.release_lease``) and
    :meth:`wipe` the key (``LetheClient.leased`` does both)."""

    key_id: str
    lease_id: str
    expires_at: str
    dek: bytearray = field(repr=False)

    def wipe(self) -> None:
        """Overwrites the data key with zeros (copies made from it are the caller's to wipe)."""
        for i in range(len(self.dek)):
            self.dek[i] = 0

    @classmethod
    def from_json(cls, value: Any) -> "Lease":
        d = _obj(value, "a lease")
        w = "lease"
        encoded = _get(d, "dek", str, w)
        try:
            dek = bytearray(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        except ValueError:
            raise ProtocolError("the service's lease has a dek that is not base64url") from None
        return cls(_get(d, "keyId", str, w), _get(d, "leaseId", str, w), _get(d, "expiresAt", str, w), dek)


@dataclass(frozen=True)
class AppendedEntry:
    """A stored entry. ``replayed``: the service answered a retry with an earlier
    append's Idempotency-Key, and stored nothing this time."""

    entry_id: str
    key_id: str
    seq: int
    replayed: bool = False

    @classmethod
    def from_json(cls, value: Any, replayed: bool) -> "AppendedEntry":
        d = _obj(value, "an appended entry")
        w = "appended entry"
        return cls(_get(d, "entryId", str, w), _get(d, "keyId", str, w), _get(d, "seq", int, w), replayed)


@dataclass(frozen=True)
class SupersededVersion:
    """The old version a supersession forgot: its ``entry_id``, and the records-scope
    erasure forgetting it (``erasure_id``, its ``status`` when opened; ``location``, from
    the ``Location`` header, is that erasure's URL path)."""

    entry_id: str
    erasure_id: str
    status: str
    location: Optional[str] = None

    @classmethod
    def from_json(cls, value: Any, location: Optional[str]) -> "SupersededVersion":
        d = _obj(value, "a superseded version")
        w = "superseded version"
        return cls(_get(d, "entryId", str, w), _get(d, "erasureId", str, w), _get(d, "status", str, w), location)


@dataclass(frozen=True)
class Superseded:
    """A memory updated (``LetheClient.supersede``): ``entry``, the successor now stored,
    and ``superseded``, the old version and the erasure forgetting it."""

    entry: AppendedEntry
    superseded: SupersededVersion

    @classmethod
    def from_json(cls, value: Any, location: Optional[str]) -> "Superseded":
        d = _obj(value, "a supersession")
        w = "supersession"
        return cls(AppendedEntry.from_json(_get(d, "entry", dict, w), replayed=False), SupersededVersion.from_json(_get(d, "superseded", dict, w), location))


@dataclass(frozen=True)
class SupersededVersions:
    """The old versions a several-entry supersession forgot (``entry_ids``), and the one
    records-scope erasure forgetting them (``erasure_id``, ``status``; ``location``, its
    URL path)."""

    entry_ids: List[str]
    erasure_id: str
    status: str
    location: Optional[str] = None

    @classmethod
    def from_json(cls, value: Any, location: Optional[str]) -> "SupersededVersions":
        d = _obj(value, "the superseded versions")
        w = "superseded versions"
        return cls([str(i) for i in _get(d, "entryIds", list, w)], _get(d, "erasureId", str, w), _get(d, "status", str, w), location)


@dataclass(frozen=True)
class SupersededMany:
    """A memory held in several entries updated (``LetheClient.supersede_all``):
    ``entries``, the successors now stored (in the order given), and ``superseded``."""

    entries: List[AppendedEntry]
    superseded: SupersededVersions

    @classmethod
    def from_json(cls, value: Any, location: Optional[str]) -> "SupersededMany":
        d = _obj(value, "a supersession")
        w = "supersession"
        return cls(
            [AppendedEntry.from_json(e, replayed=False) for e in _get(d, "entries", list, w)],
            SupersededVersions.from_json(_get(d, "superseded", dict, w), location),
        )


@dataclass(frozen=True)
class Entry:
    """An entry of a subject's episodic log. ``read_fence`` is set on a single read
    (``LetheClient.entry``); a page of entries carries one fence for all of them."""

    entry_id: str
    seq: int
    created_at: str
    kind: Optional[str]
    text: str = field(repr=False)
    metadata: Optional[Dict[str, Any]] = field(default=None, repr=False)
    read_fence: Optional[str] = field(default=None, repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "Entry":
        d = _obj(value, "an entry")
        w = "entry"
        return cls(
            entry_id=_get(d, "entryId", str, w),
            seq=_get(d, "seq", int, w),
            created_at=_get(d, "createdAt", str, w),
            kind=_opt(d, "kind", str, w),
            text=_get(d, "text", str, w),
            metadata=_opt(d, "metadata", dict, w),
            read_fence=_opt(d, "readFence", str, w),
            raw=d,
        )


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list. ``next_cursor`` fetches the next one; None on the last page.
    ``read_fence`` (entries only) covers every item of the page."""

    items: List[T]
    next_cursor: Optional[str]
    read_fence: Optional[str] = field(default=None, repr=False)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class SearchHit:
    """A search hit. ``subject`` is the hit's subject when the search named it (an entry
    of a named subject; an artifact derived from exactly one named subject), else None."""

    id: str
    type: str
    score: float
    subject: Optional[str]
    kind: Optional[str]
    created_at: Optional[str]
    text: str = field(repr=False)
    metadata: Optional[Dict[str, Any]] = field(default=None, repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "SearchHit":
        d = _obj(value, "a search hit")
        w = "search hit"
        return cls(
            id=_get(d, "id", str, w),
            type=_get(d, "type", str, w),
            score=float(_get(d, "score", (int, float), w)),
            subject=_opt(d, "subject", str, w),
            kind=_opt(d, "kind", str, w),
            created_at=_opt(d, "createdAt", str, w),
            text=_get(d, "text", str, w),
            metadata=_opt(d, "metadata", dict, w),
            raw=d,
        )


@dataclass(frozen=True)
class SearchResult:
    """The hits, best first, and a read fence covering every hit; ``partial`` when a sharded deployment could not consult a shard the search needed."""

    hits: List[SearchHit]
    read_fence: str = field(repr=False)
    partial: bool = False

    @classmethod
    def from_json(cls, value: Any) -> "SearchResult":
        d = _obj(value, "a search result")
        return cls(
            [SearchHit.from_json(h) for h in _get(d, "hits", list, "search result")],
            _get(d, "readFence", str, "search result"),
            d.get("partial") is True,
        )


@dataclass(frozen=True)
class WrittenArtifact:
    artifact_id: str
    version: int
    subjects: int

    @classmethod
    def from_json(cls, value: Any) -> "WrittenArtifact":
        d = _obj(value, "a written artifact")
        w = "written artifact"
        return cls(_get(d, "artifactId", str, w), _get(d, "version", int, w), _get(d, "subjects", int, w))


@dataclass(frozen=True)
class Artifact:
    """An artifact's current version, with a read fence."""

    artifact_id: str
    kind: str
    version: int
    sources: List[str]
    generator: Optional[str]
    created_at: str
    updated_at: str
    text: str = field(repr=False)
    read_fence: str = field(repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "Artifact":
        d = _obj(value, "an artifact")
        w = "artifact"
        return cls(
            artifact_id=_get(d, "artifactId", str, w),
            kind=_get(d, "kind", str, w),
            version=_get(d, "version", int, w),
            sources=_strs(d, "sources", w),
            generator=_opt(d, "generator", str, w),
            created_at=_get(d, "createdAt", str, w),
            updated_at=_get(d, "updatedAt", str, w),
            text=_get(d, "text", str, w),
            read_fence=_get(d, "readFence", str, w),
            raw=d,
        )


@dataclass(frozen=True)
class ArtifactInfo:
    """An item of ``GET /v1/artifacts``: what the artifact is, never its text
    (:meth:`LetheClient.artifact` reads that, with a read fence)."""

    artifact_id: str
    kind: str
    version: int
    generator: Optional[str]
    created_at: str
    updated_at: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "ArtifactInfo":
        d = _obj(value, "an artifact")
        w = "artifact"
        return cls(
            artifact_id=_get(d, "artifactId", str, w),
            kind=_get(d, "kind", str, w),
            version=_get(d, "version", int, w),
            generator=_opt(d, "generator", str, w),
            created_at=_get(d, "createdAt", str, w),
            updated_at=_get(d, "updatedAt", str, w),
            raw=d,
        )


@dataclass(frozen=True)
class ProvenanceSource:
    id: str
    type: str
    depth: int


@dataclass(frozen=True)
class Provenance:
    """The transitive closure of an artifact's sources, nearest first, and how many
    distinct subjects it reaches."""

    artifact_id: str
    sources: List[ProvenanceSource]
    subjects: int

    @classmethod
    def from_json(cls, value: Any) -> "Provenance":
        d = _obj(value, "a provenance")
        w = "provenance"
        sources = [_obj(s, "a provenance source") for s in _get(d, "sources", list, w)]
        return cls(
            _get(d, "artifactId", str, w),
            [ProvenanceSource(_get(s, "id", str, w), _get(s, "type", str, w), _get(s, "depth", int, w)) for s in sources],
            _get(d, "subjects", int, w),
        )


@dataclass(frozen=True)
class RegeneratedArtifact:
    artifact_id: str
    version: int


@dataclass(frozen=True)
class Regeneration:
    """What a regeneration rewrote and removed; ``destruction`` is ``durable`` or
    ``pending`` (the old versions' key destructions not yet durable in the ledger chain)."""

    regenerated: List[RegeneratedArtifact]
    removed: List[str]
    destruction: Optional[str]

    @classmethod
    def from_json(cls, value: Any) -> "Regeneration":
        d = _obj(value, "a regeneration")
        w = "regeneration"
        items = [_obj(r, "a regenerated artifact") for r in _get(d, "regenerated", list, w)]
        return cls(
            [RegeneratedArtifact(_get(r, "artifactId", str, w), _get(r, "version", int, w)) for r in items],
            _strs(d, "removed", w),
            _opt(d, "destruction", str, w),
        )


@dataclass(frozen=True)
class TrainingExposure:
    exposure_id: str
    records: int
    subjects: int

    @classmethod
    def from_json(cls, value: Any) -> "TrainingExposure":
        d = _obj(value, "a training exposure")
        w = "training exposure"
        return cls(_get(d, "exposureId", str, w), _get(d, "records", int, w), _get(d, "subjects", int, w))


@dataclass(frozen=True)
class ErasureAccepted:
    """An erasure request's answer. ``created``: this call opened it (202); False: the
    subject's erasure was already open (200, the same erasure)."""

    erasure_id: str
    status: Optional[str]
    created: bool
    location: Optional[str] = None

    @classmethod
    def from_json(cls, value: Any, created: bool, location: Optional[str]) -> "ErasureAccepted":
        d = _obj(value, "an erasure")
        w = "erasure"
        return cls(_get(d, "erasureId", str, w), _opt(d, "status", str, w), created, location)


@dataclass(frozen=True)
class DismissalAccepted:
    """A dismissal proposed, approved, rejected or revoked: the erasure's id and status
    (unchanged by a proposal or a rejection; ``running`` after an approval or a
    revocation), and the proposal's ``dismissal_id`` (``dsm_…``)."""

    erasure_id: str
    status: Optional[str]
    dismissal_id: str

    @classmethod
    def from_json(cls, value: Any) -> "DismissalAccepted":
        d = _obj(value, "a dismissal")
        w = "dismissal"
        return cls(_get(d, "erasureId", str, w), _opt(d, "status", str, w), _get(d, "dismissalId", str, w))


@dataclass(frozen=True)
class BulkErasureItem:
    """One subject of ``POST /v1/erasures/batch``, by its ``index`` in the request (the
    subject id is not repeated): its ``erasure`` (``created`` False when it was already
    open), or why it was refused (``error_code`` as a problem's, e.g. ``not_found``)."""

    index: int
    erasure: Optional[ErasureAccepted] = None
    error_code: Optional[str] = None
    error_detail: Optional[str] = None

    @classmethod
    def from_json(cls, value: Any) -> "BulkErasureItem":
        d = _obj(value, "a bulk erasure item")
        w = "bulk erasure item"
        index = _get(d, "index", int, w)
        if "error" in d:
            e = _obj(d["error"], "a bulk erasure item's error")
            return cls(index, None, _get(e, "code", str, w), _get(e, "detail", str, w))
        return cls(index, ErasureAccepted.from_json(d, created=_get(d, "created", bool, w), location=None))


@dataclass(frozen=True)
class ErasureStep:
    name: str
    status: str
    detail: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None


@dataclass(frozen=True)
class Residual:
    """What an erasure could not remove, with its bound (a number, or ``"unbounded"``)."""

    tier: str
    kind: str
    detail: str
    bound: Union[float, str]
    until: Optional[str] = None


@dataclass(frozen=True)
class ProbeMatch:
    id: str
    tier: str
    score: float


@dataclass(frozen=True)
class Probe:
    """The reconstruction probe: ``recovered`` share of the subject's private content,
    against ``threshold``; every other field the service answers is in ``raw``."""

    recovered: float
    threshold: float
    matches: List[ProbeMatch]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Certificate:
    """An erasure certificate: Ed25519 over the canonical JSON of ``payload``.

    This client does not verify it (the standard library has no Ed25519): save it with
    :meth:`save` and run ``lethe certificate verify cert.json --url <vault>``, which
    checks it against the keys of ``GET /v1/certificates/keys``
    (:meth:`LetheClient.certificate_keys`) — never against the ``public_key`` it carries."""

    payload: Dict[str, Any]
    signature: str
    public_key: str
    algorithm: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def signing_key_id(self) -> Optional[str]:
        """The key the payload names as its signer (``signingKeyId``)."""
        value = self.payload.get("signingKeyId")
        return value if isinstance(value, str) else None

    @property
    def erasure_id(self) -> Optional[str]:
        value = self.payload.get("erasureId")
        return value if isinstance(value, str) else None

    def to_json(self) -> str:
        """The document exactly as the service served it (what ``lethe certificate verify`` reads)."""
        return json.dumps(self.raw, ensure_ascii=False)

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())
            f.write("\n")

    @classmethod
    def from_json(cls, value: Any) -> "Certificate":
        d = _obj(value, "a certificate")
        w = "certificate"
        return cls(_get(d, "payload", dict, w), _get(d, "signature", str, w), _get(d, "publicKey", str, w), _get(d, "algorithm", str, w), d)


@dataclass(frozen=True)
class ErasureView:
    """``GET /v1/erasures/{id}``. ``scope`` is ``subject`` (a subject erasure) or
    ``records`` (forgetting ``entry_ids``). Everything the service answers is in ``raw``
    (``graph``, ``retry``, ``left``, …)."""

    erasure_id: str
    status: str
    scope: str
    entry_ids: Optional[List[str]]
    erasure_class: Optional[str]
    subject_hash: Optional[str]
    legal_basis: Optional[str]
    created_at: Optional[str]
    finished_at: Optional[str]
    steps: List[ErasureStep]
    residuals: List[Residual]
    probe: Optional[Probe]
    certificate: Optional[Certificate]
    certificate_state: Optional[str]
    retry: Optional[Dict[str, Any]] = field(default=None, repr=False)
    left: Optional[Dict[str, Any]] = None
    #: Records the last probe matched that stay readable because an approved ruling
    #: dismissed them (each proposal, with its status, is in ``raw["dismissals"]``).
    readable_by_ruling: Optional[List[str]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL_ERASURE_STATUSES

    @classmethod
    def from_json(cls, value: Any) -> "ErasureView":
        d = _obj(value, "an erasure")
        w = "erasure"
        steps = [_obj(s, "an erasure step") for s in _get(d, "steps", list, w, [])]
        residuals = [_obj(r, "a residual") for r in _get(d, "residuals", list, w, [])]
        probe_d = _opt(d, "probe", dict, w)
        probe = None
        if probe_d is not None:
            matches = [_obj(m, "a probe match") for m in _get(probe_d, "matches", list, "probe", [])]
            probe = Probe(
                recovered=float(_get(probe_d, "recovered", (int, float), "probe", 0.0)),
                threshold=float(_get(probe_d, "threshold", (int, float), "probe", 0.0)),
                matches=[ProbeMatch(_get(m, "id", str, "probe match"), _get(m, "tier", str, "probe match"), float(_get(m, "score", (int, float), "probe match"))) for m in matches],
                raw=probe_d,
            )
        cert = _opt(d, "certificate", dict, w)
        return cls(
            erasure_id=_get(d, "erasureId", str, w),
            status=_get(d, "status", str, w),
            scope=_get(d, "scope", str, w, "subject"),
            entry_ids=_strs(d, "entryIds", w, None),
            erasure_class=_opt(d, "class", str, w),
            subject_hash=_opt(d, "subjectHash", str, w),
            legal_basis=_opt(d, "legalBasis", str, w),
            created_at=_opt(d, "createdAt", str, w),
            finished_at=_opt(d, "finishedAt", str, w),
            steps=[
                ErasureStep(
                    _get(s, "name", str, "step"), _get(s, "status", str, "step"), _opt(s, "detail", str, "step"), _opt(s, "startedAt", str, "step"), _opt(s, "finishedAt", str, "step")
                )
                for s in steps
            ],
            residuals=[
                Residual(
                    _get(r, "tier", str, "residual"),
                    _get(r, "kind", str, "residual"),
                    _get(r, "detail", str, "residual", ""),
                    _get(r, "bound", (int, float, str), "residual", "unbounded"),
                    _opt(r, "until", str, "residual"),
                )
                for r in residuals
            ],
            probe=probe,
            certificate=Certificate.from_json(cert) if cert is not None else None,
            certificate_state=_opt(d, "certificateState", str, w),
            retry=_opt(d, "retry", dict, w),
            left=_opt(d, "left", dict, w),
            readable_by_ruling=_strs(d, "readableByRuling", w, None),
            raw=d,
        )


@dataclass(frozen=True)
class ErasureTransition:
    """A ``step`` event of an erasure's events stream: one transition of its state machine."""

    id: int
    from_step: Optional[str]
    to_step: Optional[str]
    status: str
    at: str
    detail: Optional[str]

    @classmethod
    def from_json(cls, value: Any) -> "ErasureTransition":
        d = _obj(value, "a step event")
        w = "step event"
        return cls(_get(d, "id", int, w), _opt(d, "fromStep", str, w), _opt(d, "toStep", str, w), _get(d, "status", str, w), _get(d, "at", str, w), _opt(d, "detail", str, w))


@dataclass(frozen=True)
class ErasureEnd:
    """The final ``end`` event of an erasure's events stream."""

    erasure_id: str
    status: str
    erasure_class: Optional[str]
    recovered: Optional[float]

    @classmethod
    def from_json(cls, value: Any) -> "ErasureEnd":
        d = _obj(value, "an end event")
        w = "end event"
        recovered = _opt(d, "recovered", (int, float), w)
        return cls(_get(d, "erasureId", str, w), _get(d, "status", str, w), _opt(d, "class", str, w), None if recovered is None else float(recovered))


#: What an erasure's events stream yields.
ErasureEvent = Union[ErasureTransition, ErasureEnd]


@dataclass(frozen=True)
class SigningKey:
    """A certificate-signing public key (``GET /v1/certificates/keys``)."""

    key_id: str
    algorithm: str
    public_key: str
    state: Optional[str]
    origin: Optional[str]
    created_at: Optional[str]
    retired_at: Optional[str]

    @classmethod
    def from_json(cls, value: Any) -> "SigningKey":
        d = _obj(value, "a signing key")
        w = "signing key"
        return cls(
            _get(d, "keyId", str, w),
            _get(d, "algorithm", str, w),
            _get(d, "publicKey", str, w),
            _opt(d, "state", str, w),
            _opt(d, "origin", str, w),
            _opt(d, "createdAt", str, w),
            _opt(d, "retiredAt", str, w),
        )


@dataclass(frozen=True)
class Backup:
    backup_id: str
    created_at: str
    objects: int
    keys: int
    manifest_version: Optional[int]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "Backup":
        d = _obj(value, "a backup")
        w = "backup"
        return cls(_get(d, "backupId", str, w), _get(d, "createdAt", str, w), _get(d, "objects", int, w), _get(d, "keys", int, w), _opt(d, "manifestVersion", int, w), d)


@dataclass(frozen=True)
class BackupTaken:
    backup_id: str
    objects: int
    keys: int

    @classmethod
    def from_json(cls, value: Any) -> "BackupTaken":
        d = _obj(value, "a backup")
        w = "backup"
        return cls(_get(d, "backupId", str, w), _get(d, "objects", int, w), _get(d, "keys", int, w))


@dataclass(frozen=True)
class Reinstatement:
    subject: str
    reinstated: bool

    @classmethod
    def from_json(cls, value: Any) -> "Reinstatement":
        d = _obj(value, "a reinstatement")
        w = "reinstatement"
        return cls(_get(d, "subject", str, w), _get(d, "reinstated", bool, w))
