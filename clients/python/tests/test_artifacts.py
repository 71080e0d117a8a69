"""Derived artifacts against the real service: create with read fences, get, list pages,
provenance, regeneration, training exposures, and the refusals."""

from __future__ import annotations

import unittest
from typing import ClassVar, List

from . import support
from .support import client, unique, words

from lethe import (
    LetheClient,
    NotFoundError,
    ProvenanceRequiredError,
    UnknownSourceError,
    ValidationFailedError,
)


def setUpModule() -> None:
    support.server()


class ArtifactTest(unittest.TestCase):
    writer: ClassVar[LetheClient]
    subject: ClassVar[str]
    entry_ids: ClassVar[List[str]]

    @classmethod
    def setUpClass(cls) -> None:
        cls.writer = client("writer")
        cls.subject = unique("user:art-")
        cls.entry_ids = [cls.writer.append(cls.subject, words()).entry_id for _ in range(2)]

    def test_create_with_the_read_fences_of_what_was_read(self) -> None:
        page = self.writer.entries(self.subject)
        one = self.writer.entry(self.entry_ids[0])
        written = self.writer.create_artifact(
            "summary", words(), self.entry_ids, generator="pytest", read_fence=one.read_fence, read_fences=[page.read_fence or ""]
        )
        self.assertEqual((written.version, written.subjects), (1, 1))
        art = self.writer.artifact(written.artifact_id)
        self.assertEqual((art.artifact_id, art.kind, art.version, art.generator), (written.artifact_id, "summary", 1, "pytest"))
        self.assertEqual(sorted(art.sources), sorted(self.entry_ids))
        self.assertTrue(art.read_fence)
        self.assertNotIn(art.text, repr(art))

    def test_provenance_and_regeneration(self) -> None:
        below = self.writer.create_artifact("fact", words(), [self.entry_ids[0]]).artifact_id
        above = self.writer.create_artifact("digest", words(), [below]).artifact_id
        prov = self.writer.provenance(above)
        self.assertEqual(prov.artifact_id, above)
        self.assertEqual([(s.id, s.type, s.depth) for s in prov.sources], [(below, "artifact", 1), (self.entry_ids[0], "entry", 2)])
        self.assertEqual(prov.subjects, 1)
        regen = self.writer.regenerate(below)
        self.assertEqual({r.artifact_id: r.version for r in regen.regenerated}, {below: 2, above: 2})
        self.assertEqual(regen.removed, [])
        self.assertIn(regen.destruction, ("durable", "pending"))
        self.assertEqual(self.writer.artifact(below).version, 2)
        # the eraser role may regenerate too
        again = client("eraser").regenerate(above, excluding=[])
        self.assertEqual([(r.artifact_id, r.version) for r in again.regenerated], [(above, 3)])

    def test_list_pages_follow_next_cursor(self) -> None:
        made = [self.writer.create_artifact("fact", words(), [self.entry_ids[1]]).artifact_id for _ in range(3)]
        first = self.writer.artifacts(limit=1)
        self.assertEqual(len(first.items), 1)
        self.assertIsNotNone(first.next_cursor)
        listed = [a.artifact_id for a in self.writer.iter_artifacts(page_size=2)]
        self.assertEqual(len(listed), len(set(listed)))
        # oldest first: the three just made come in the order they were made
        self.assertEqual([i for i in listed if i in made], made)
        with self.assertRaises(ValidationFailedError):
            self.writer.artifacts(cursor="garbage")
        with self.assertRaises(ValidationFailedError):
            self.writer.artifacts(limit=0)

    def test_training_exposure(self) -> None:
        exposure = self.writer.record_training_exposure("corpus-2026-q1", [self.entry_ids[0]], model="tiny")
        self.assertTrue(exposure.exposure_id.startswith("exp_"))
        self.assertEqual((exposure.records, exposure.subjects), (1, 1))
        with self.assertRaises(UnknownSourceError):
            self.writer.record_training_exposure("corpus", ["entry_AAAAAAAAAAAAAAAAAAAAAA"])

    def test_refusals(self) -> None:
        with self.assertRaises(ProvenanceRequiredError) as cm:
            self.writer.create_artifact("summary", "text", [])
        self.assertEqual((cm.exception.status, cm.exception.code), (422, "provenance_required"))
        with self.assertRaises(UnknownSourceError):
            self.writer.create_artifact("summary", "text", ["entry_AAAAAAAAAAAAAAAAAAAAAA"])
        with self.assertRaises(ValidationFailedError):
            self.writer.create_artifact("poem", "text", self.entry_ids)
        with self.assertRaises(ValidationFailedError):
            self.writer.create_artifact("summary", "text", self.entry_ids, read_fence="not-a-fence-this-vault-issued")
        with self.assertRaises(NotFoundError):
            self.writer.artifact("art_AAAAAAAAAAAAAAAAAAAAAA")
        with self.assertRaises(ValidationFailedError):
            self.writer.artifact("art_bad")
        with self.assertRaises(NotFoundError):
            self.writer.provenance("art_AAAAAAAAAAAAAAAAAAAAAA")


if __name__ == "__main__":
    unittest.main()
