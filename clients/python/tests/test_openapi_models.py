"""The models against the served ``/openapi.json``: a drift between them fails here.

Every JSON object this client models is located in the OpenAPI document the running
service serves (a component, or a response of an operation), and checked both ways:

- each field of the model names a property the service documents (``key_id`` is
  ``keyId``; a few fields say where else they come from, in ``JSON_NAMES``);
- each property the service documents as required is a field of the model, or is
  listed in ``RAW_ONLY`` — kept in the model's ``raw`` on purpose.

Fields the client adds itself (``created`` from the status code, ``replayed`` from a
header, …) are listed in ``CLIENT_ONLY``; the headers they come from must be declared
where the client reads them (``HEADERS_READ``). Properties read inside a field the model
keeps as a dict (a certificate's ``payload``) are in ``NESTED_READS``. The backup
manifest (answered as a dict) and a certificate are also fetched from the service and
checked: every field they carry is documented, every required one is there. The events stream's models (``ErasureTransition``,
``ErasureEnd``) are ``text/event-stream`` payloads the document does not describe.
"""

from __future__ import annotations

import dataclasses
import json
import unittest
import urllib.request
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from . import support
from .support import client

from lethe import models

#: (model, where in the document: ("schema", name) or ("response", method, path, status), then a path inside it: property names, "[]" for array items)
LOCATIONS: List[Tuple[type, Tuple[str, ...], Sequence[str]]] = [
    (models.SubjectKey, ("schema", "SubjectKey"), ()),
    (models.Lease, ("schema", "KeyLease"), ()),
    (models.AppendedEntry, ("schema", "AppendedEntry"), ()),
    (models.Superseded, ("response", "post", "/v1/subjects/{subject}/entries/{entryId}/supersede", "201"), ()),
    (models.SupersededVersion, ("response", "post", "/v1/subjects/{subject}/entries/{entryId}/supersede", "201"), ("superseded",)),
    (models.SupersededMany, ("response", "post", "/v1/subjects/{subject}/supersede", "201"), ()),
    (models.SupersededVersions, ("response", "post", "/v1/subjects/{subject}/supersede", "201"), ("superseded",)),
    (models.Entry, ("response", "get", "/v1/entries/{entryId}", "200"), ()),
    (models.Entry, ("response", "get", "/v1/subjects/{subject}/entries", "200"), ("entries", "[]")),
    (models.SearchResult, ("schema", "SearchResult"), ()),
    (models.SearchHit, ("schema", "SearchHit"), ()),
    (models.WrittenArtifact, ("schema", "WrittenArtifact"), ()),
    (models.Artifact, ("schema", "Artifact"), ()),
    (models.ArtifactInfo, ("response", "get", "/v1/artifacts", "200"), ("artifacts", "[]")),
    (models.Provenance, ("schema", "Provenance"), ()),
    (models.ProvenanceSource, ("schema", "Provenance"), ("sources", "[]")),
    (models.Regeneration, ("schema", "Regeneration"), ()),
    (models.RegeneratedArtifact, ("schema", "Regeneration"), ("regenerated", "[]")),
    (models.TrainingExposure, ("schema", "TrainingExposure"), ()),
    (models.ErasureAccepted, ("schema", "ErasureAccepted"), ()),
    (models.DismissalAccepted, ("schema", "DismissalAccepted"), ()),
    (models.BulkErasureItem, ("schema", "BulkErasureAccepted"), ("erasures", "[]")),
    (models.ErasureView, ("schema", "Erasure"), ()),
    (models.ErasureStep, ("schema", "Erasure"), ("steps", "[]")),
    (models.Residual, ("schema", "Erasure"), ("residuals", "[]")),
    (models.Probe, ("schema", "Erasure"), ("probe",)),
    (models.ProbeMatch, ("schema", "Erasure"), ("probe", "matches", "[]")),
    (models.Certificate, ("schema", "ErasureCertificate"), ()),
    (models.SigningKey, ("schema", "CertificateSigningKey"), ()),
    (models.Backup, ("response", "get", "/v1/backups", "200"), ("backups", "[]")),
    (models.BackupTaken, ("schema", "BackupTaken"), ()),
    (models.Reinstatement, ("schema", "SubjectReinstated"), ()),
]

#: Fields the client sets itself, from the status code or a header: not in the body.
CLIENT_ONLY: Dict[type, Set[str]] = {
    models.SubjectKey: {"created"},
    models.AppendedEntry: {"replayed"},
    models.SupersededVersion: {"location"},
    models.SupersededVersions: {"location"},
    models.ErasureAccepted: {"created", "location"},
    models.BulkErasureItem: {"erasure"},  # the item itself, read as an ErasureAccepted
}

#: Fields whose JSON name is not their camelCase: the property they read.
JSON_NAMES: Dict[type, Dict[str, str]] = {
    models.ErasureView: {"erasure_class": "class"},
    models.BulkErasureItem: {"error_code": "error", "error_detail": "error"},
}

#: Optional fields a place does not carry: (model, path) → fields (an entry of a page has no fence of its own; the page has one).
ABSENT_AT: Dict[Tuple[type, Tuple[str, ...]], Set[str]] = {
    (models.Entry, ("entries", "[]")): {"read_fence"},
}

#: Required properties a model keeps in ``raw`` only, on purpose.
RAW_ONLY: Dict[type, Set[str]] = {
    models.ErasureView: {"graph"},
}

#: Headers the client reads (``location``, ``replayed``): declared on each answer it reads them from.
HEADERS_READ: List[Tuple[str, str, str, str]] = [
    ("Location", "post", "/v1/erasures", "202"),
    ("Location", "post", "/v1/erasures", "200"),
    ("Location", "delete", "/v1/entries/{entryId}", "202"),
    ("Location", "delete", "/v1/entries/{entryId}", "200"),
    ("Location", "post", "/v1/erasures/{erasureId}/redactions", "202"),
    ("Location", "post", "/v1/subjects/{subject}/entries/{entryId}/supersede", "201"),
    ("Location", "post", "/v1/subjects/{subject}/supersede", "201"),
    ("Idempotent-Replayed", "post", "/v1/subjects/{subject}/entries", "200"),
]

#: Properties read inside a field kept as a dict: (model, where, path to the field) → the properties read there.
NESTED_READS: List[Tuple[type, Tuple[str, ...], Sequence[str], Set[str]]] = [
    # Certificate.signing_key_id and .erasure_id
    (models.Certificate, ("schema", "ErasureCertificate"), ("payload",), {"signingKeyId", "erasureId"}),
]

MODELLED = {m for m, _, _ in LOCATIONS} | {models.ErasureTransition, models.ErasureEnd}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def served_document() -> Dict[str, Any]:
    with urllib.request.urlopen(f"{support.server().url}/openapi.json", timeout=30) as r:
        return json.load(r)


class Schema:
    """A schema of the document with its $refs followed and allOf / anyOf / oneOf merged:
    its properties (name → schema) and which of them every variant requires."""

    def __init__(self, doc: Dict[str, Any], node: Dict[str, Any]) -> None:
        self.doc = doc
        self.properties: Dict[str, Dict[str, Any]] = {}
        self.required: Set[str] = set()
        self.items: Optional[Dict[str, Any]] = None
        self._merge(node)

    def _deref(self, node: Dict[str, Any]) -> Dict[str, Any]:
        while "$ref" in node:
            node = self.doc["components"]["schemas"][node["$ref"].split("/")[-1]]
        return node

    def _merge(self, node: Dict[str, Any]) -> None:
        node = self._deref(node)
        for part in node.get("allOf", []):
            self._merge(part)
        variants = node.get("anyOf") or node.get("oneOf") or []
        if variants:
            merged = [Schema(self.doc, v) for v in variants if self._deref(v).get("type") != "null"]
            for s in merged:
                self.properties.update(s.properties)
                self.items = self.items or s.items
            self.required |= set.intersection(*(s.required for s in merged)) if merged else set()
        self.properties.update(node.get("properties", {}))
        self.required |= set(node.get("required", []))
        if "items" in node:
            self.items = node["items"]

    def at(self, step: str) -> "Schema":
        if step == "[]":
            if self.items is None:
                raise AssertionError("not an array")
            return Schema(self.doc, self.items)
        if step not in self.properties:
            raise AssertionError(f"no property {step!r}")
        return Schema(self.doc, self.properties[step])


def locate(doc: Dict[str, Any], where: Tuple[str, ...], path: Sequence[str]) -> Schema:
    if where[0] == "schema":
        schema = Schema(doc, doc["components"]["schemas"][where[1]])
    else:
        _, method, route, status = where
        schema = Schema(doc, doc["paths"][route][method]["responses"][status]["content"]["application/json"]["schema"])
    for step in path:
        schema = schema.at(step)
    return schema


def undocumented(schema: Schema, value: Any, at: str = "$") -> List[str]:
    """Where ``value`` departs from ``schema``: a field it does not document (an object
    with properties documents all it has), or a required one absent."""
    out: List[str] = []
    if isinstance(value, dict) and schema.properties:
        out += [f"{at}.{name}: required, absent" for name in sorted(schema.required - set(value))]
        for name, v in value.items():
            if name not in schema.properties:
                out.append(f"{at}.{name}: not documented")
            else:
                out += undocumented(schema.at(name), v, f"{at}.{name}")
    elif isinstance(value, list) and schema.items is not None:
        for i, item in enumerate(value):
            out += undocumented(schema.at("[]"), item, f"{at}[{i}]")
    return out


class OpenApiModelsTest(unittest.TestCase):
    doc: Dict[str, Any] = {}

    @classmethod
    def setUpClass(cls) -> None:
        cls.doc = served_document()

    def test_every_response_model_is_located_in_the_document(self) -> None:
        defined = {getattr(models, name) for name in dir(models) if dataclasses.is_dataclass(getattr(models, name)) and isinstance(getattr(models, name), type)}
        unlocated = sorted(m.__name__ for m in defined - MODELLED - {models.Page})
        self.assertEqual(unlocated, [], "models with no place in LOCATIONS: say where the service documents them")

    def test_each_model_field_is_a_documented_property(self) -> None:
        for model, where, path in LOCATIONS:
            with self.subTest(model=model.__name__, where=where, path=path):
                schema = locate(self.doc, where, path)
                names = JSON_NAMES.get(model, {})
                for f in dataclasses.fields(model):
                    if f.name == "raw" or f.name in CLIENT_ONLY.get(model, set()) or f.name in ABSENT_AT.get((model, tuple(path)), set()):
                        continue
                    prop = names.get(f.name, camel(f.name))
                    self.assertIn(prop, schema.properties, f"{model.__name__}.{f.name} reads {prop!r}, which the service does not document there")

    def test_each_required_property_is_modelled(self) -> None:
        for model, where, path in LOCATIONS:
            with self.subTest(model=model.__name__, where=where, path=path):
                schema = locate(self.doc, where, path)
                names = JSON_NAMES.get(model, {})
                read = {names.get(f.name, camel(f.name)) for f in dataclasses.fields(model)}
                missing = sorted(schema.required - read - RAW_ONLY.get(model, set()))
                self.assertEqual(missing, [], f"{model.__name__} does not model what the service always answers")

    def test_each_header_read_is_declared(self) -> None:
        for header, method, route, status in HEADERS_READ:
            with self.subTest(header=header, operation=f"{method} {route} {status}"):
                declared = self.doc["paths"][route][method]["responses"][status].get("headers", {})
                self.assertIn(header, declared, f"the client reads {header} from {method.upper()} {route} {status}, which the service does not declare")

    def test_each_nested_read_is_documented(self) -> None:
        for model, where, path, names in NESTED_READS:
            with self.subTest(model=model.__name__, path=path):
                schema = locate(self.doc, where, path)
                self.assertEqual(sorted(names - set(schema.properties)), [], f"{model.__name__} reads these from {'.'.join(path)}")

    def test_the_backup_manifest_as_served_is_documented(self) -> None:
        schema = locate(self.doc, ("response", "get", "/v1/backups/{backupId}/manifest", "200"), ())
        # what issue 33 found missing
        self.assertLessEqual({"database", "ledgerEntries"}, schema.required)
        self.assertIn("ledgerHead", schema.properties)
        backup = client("backup")
        manifest = backup.backup_manifest(backup.take_backup(timeout=120).backup_id)
        self.assertEqual(undocumented(schema, manifest), [])
        self.assertEqual(sorted(manifest["database"]), ["key", "sha256"])
        self.assertIsInstance(manifest["ledgerEntries"], int)

    def test_a_certificate_as_served_is_documented(self) -> None:
        schema = locate(self.doc, ("schema", "ErasureCertificate"), ())
        payload = schema.at("payload")
        self.assertLessEqual({"format", "erasureId", "subjectHash", "scope", "status", "steps", "probe", "residuals", "tiers"}, payload.required)
        subject = support.unique("user:openapi-")
        client("writer").append(subject, "Alice moved to 12 Rose Street")
        eraser = client("eraser")
        erasure_id = eraser.erase(subject, legal_basis="gdpr-art17").erasure_id
        self.assertEqual(eraser.wait_for_erasure(erasure_id, timeout=120).status, "completed")
        certificate = eraser.erasure_certificate(erasure_id)
        self.assertEqual(undocumented(schema, certificate.raw), [])
        self.assertEqual(certificate.erasure_id, erasure_id)
        self.assertIsNotNone(certificate.signing_key_id)

    def test_an_undocumented_field_is_caught(self) -> None:
        # the check itself: a manifest with a field the document lacks, or without a required one
        schema = locate(self.doc, ("schema", "BackupManifest"), ())
        self.assertEqual(undocumented(schema.at("database"), {"key": "k", "sha256": "s", "size": 1}), ["$.size: not documented"])
        self.assertEqual(undocumented(schema.at("database"), {"key": "k"}), ["$.sha256: required, absent"])

    def test_a_drift_is_caught(self) -> None:
        # the check itself: a property renamed in the document is a failure
        doc = json.loads(json.dumps(self.doc))
        key = doc["components"]["schemas"]["SubjectKey"]
        key["properties"]["keyIdentifier"] = key["properties"].pop("keyId")
        key["required"] = ["keyIdentifier" if r == "keyId" else r for r in key["required"]]
        schema = locate(doc, ("schema", "SubjectKey"), ())
        self.assertNotIn(camel("key_id"), schema.properties)
        self.assertIn("keyIdentifier", schema.required - {camel(f.name) for f in dataclasses.fields(models.SubjectKey)})


if __name__ == "__main__":
    unittest.main()
