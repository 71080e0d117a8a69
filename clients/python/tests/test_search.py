"""Scoped search against the real service: a search names its subjects, and an artifact
is a hit only when every subject its provenance reaches is in scope."""

from __future__ import annotations

import unittest
from typing import ClassVar, List

from . import support
from .support import client, unique, words

from lethe import ForbiddenError, InvalidArgumentError, LetheClient, ValidationFailedError


def setUpModule() -> None:
    support.server()


class ScopedSearchTest(unittest.TestCase):
    writer: ClassVar[LetheClient]
    a: ClassVar[str]
    b: ClassVar[str]
    a_text: ClassVar[str]
    b_text: ClassVar[str]
    ea: ClassVar[str]
    eb: ClassVar[str]
    only_a: ClassVar[str]
    shared: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.writer = client("writer")
        cls.a, cls.b = unique("user:search-a-"), unique("user:search-b-")
        cls.a_text, cls.b_text = words(10), words(10)
        cls.ea = cls.writer.append(cls.a, cls.a_text).entry_id
        cls.eb = cls.writer.append(cls.b, cls.b_text).entry_id
        # derived from A alone, and from A and B together
        cls.only_a = cls.writer.create_artifact("fact", cls.a_text, [cls.ea]).artifact_id
        cls.shared = cls.writer.create_artifact("digest", f"{cls.a_text} {cls.b_text}", [cls.ea, cls.eb]).artifact_id

    def test_one_subject(self) -> None:
        result = self.writer.search(self.a_text, subject=self.a, k=20)
        ids = {h.id: h for h in result.hits}
        self.assertIn(self.ea, ids)
        self.assertEqual((ids[self.ea].type, ids[self.ea].subject), ("entry", self.a))
        self.assertIn(self.only_a, ids)
        self.assertEqual((ids[self.only_a].type, ids[self.only_a].subject), ("artifact", self.a))
        # B's entry is out of scope, and so is the digest that also reaches B
        self.assertNotIn(self.eb, ids)
        self.assertNotIn(self.shared, ids)
        for hit in result.hits:
            self.assertEqual(hit.subject, self.a)
        self.assertTrue(result.read_fence)
        self.assertNotIn(self.a_text, repr(result))

    def test_several_subjects(self) -> None:
        result = self.writer.search(self.b_text, subjects=[self.a, self.b], k=20)
        ids = {h.id: h for h in result.hits}
        self.assertEqual(ids[self.eb].subject, self.b)
        self.assertEqual(ids[self.eb].text, self.b_text)
        # the digest of both named subjects is in scope; it belongs to neither alone
        self.assertIn(self.shared, ids)
        self.assertIsNone(ids[self.shared].subject)

    def test_all_subjects_needs_an_admin_token(self) -> None:
        with self.assertRaises(ForbiddenError) as cm:
            self.writer.search(self.b_text, all_subjects=True)
        self.assertEqual(cm.exception.status, 403)
        result = client("admin").search(self.b_text, all_subjects=True, k=20)
        ids = {h.id: h for h in result.hits}
        self.assertIn(self.eb, ids)
        self.assertIn(self.shared, ids)
        for hit in result.hits:
            self.assertIsNone(hit.subject)

    def test_each_mode_keeps_to_the_scope(self) -> None:
        for mode in ("hybrid", "vector", "lexical"):
            ids = [h.id for h in self.writer.search(self.a_text, subject=self.a, k=20, mode=mode).hits]
            self.assertIn(self.ea, ids[:2], mode)  # beside the fact of the same text
            self.assertNotIn(self.eb, ids, mode)
        with self.assertRaises(InvalidArgumentError):
            self.writer.search(self.a_text, subject=self.a, mode="semantic")

    def test_a_time_range(self) -> None:
        self.assertEqual(self.writer.search(self.a_text, subject=self.a, until="2000-01-01").hits, [])
        self.assertIn(self.ea, [h.id for h in self.writer.search(self.a_text, subject=self.a, since="2000-01-01", k=20).hits])
        with self.assertRaises(ValidationFailedError):
            self.writer.search(self.a_text, subject=self.a, since="yesterday")

    def test_a_scope_must_be_named_once(self) -> None:
        with self.assertRaises(ValueError):
            self.writer.search("anything")
        with self.assertRaises(ValueError):
            self.writer.search("anything", subject=self.a, all_subjects=True)
        with self.assertRaises(ValidationFailedError):
            self.writer.search("anything", subjects=[])
        with self.assertRaises(ValidationFailedError):
            self.writer.search("anything", subjects=[unique("user:") for _ in range(101)])
        with self.assertRaises(ValidationFailedError):
            self.writer.search("anything", subject="not a subject id")
        with self.assertRaises(ValidationFailedError):
            self.writer.search("", subject=self.a)
        with self.assertRaises(ValidationFailedError):
            self.writer.search("anything", subject=self.a, k=0)


if __name__ == "__main__":
    unittest.main()
