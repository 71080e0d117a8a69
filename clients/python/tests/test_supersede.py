"""Updating a memory (``supersede``: ``POST /v1/subjects/{subject}/entries/{entryId}/supersede``)
against the real service: the successor is stored and the old version forgotten at
once, and the erasure that forgets it completes; an entry already superseded is a
conflict (supersede its current version); a writer supersedes only what its own token
wrote."""

from __future__ import annotations

import unittest

from . import support
from .support import client, second_writer, unique, words

from lethe import (
    AppendedEntry,
    ConflictError,
    EntryForgottenError,
    ForbiddenError,
    GoneError,
    LetheError,
    NotFoundError,
    Superseded,
    SupersededMany,
    is_retryable_conflict,
)

WAIT = 120.0


def setUpModule() -> None:
    support.server()


class SupersedeTest(unittest.TestCase):
    def test_the_successor_is_stored_and_the_old_version_forgotten(self) -> None:
        writer, eraser = client("writer"), client("eraser")
        subject = unique("user:supersede-")
        other = writer.append(subject, words()).entry_id
        old = writer.append(subject, words(), kind="memory").entry_id
        text = words()
        result = writer.supersede(subject, old, text, kind="memory", metadata={"revision": 2})
        self.assertIsInstance(result, Superseded)
        self.assertIsInstance(result.entry, AppendedEntry)
        successor = result.entry.entry_id
        self.assertNotEqual(successor, old)
        self.assertEqual((result.entry.seq, result.entry.replayed), (3, False))
        gone = result.superseded
        self.assertEqual((gone.entry_id, gone.status), (old, "pending"))
        self.assertTrue(gone.erasure_id.startswith("ers_"))
        self.assertEqual(gone.location, f"/v1/erasures/{gone.erasure_id}")
        self.assertNotIn(text, repr(result))
        # from the answer on: the successor reads, the old version is forgotten (410)
        read = writer.entry(successor)
        self.assertEqual((read.text, read.kind, read.metadata), (text, "memory", {"revision": 2}))
        with self.assertRaises(EntryForgottenError) as cm:
            writer.entry(old)
        self.assertEqual((cm.exception.status, cm.exception.code), (410, "entry_forgotten"))
        self.assertEqual([e.entry_id for e in writer.iter_entries(subject)], [other, successor])
        # the erasure it started completes, and names the successor
        view = eraser.wait_for_erasure(gone.erasure_id, timeout=WAIT)
        self.assertEqual((view.status, view.scope, view.entry_ids), ("completed", "records", [old]))
        self.assertEqual(view.raw.get("supersededBy"), successor)
        self.assertIsNotNone(eraser.erasure_certificate(gone.erasure_id).signing_key_id)
        with self.assertRaises(GoneError):
            writer.entry(old)
        self.assertEqual(writer.entry(successor).text, text)

    def test_several_entries_are_superseded_at_once_or_not_at_all(self) -> None:
        writer, eraser = client("writer"), client("eraser")
        subject = unique("user:supersede-all-")
        olds = [writer.append(subject, words()).entry_id for _ in range(2)]
        texts = [words() for _ in range(3)]
        result = writer.supersede_all(subject, olds, [{"text": t, "kind": "memory"} for t in texts])
        self.assertIsInstance(result, SupersededMany)
        self.assertEqual([writer.entry(e.entry_id).text for e in result.entries], texts)
        self.assertEqual((result.superseded.entry_ids, result.superseded.status), (olds, "pending"))
        self.assertEqual(result.superseded.location, f"/v1/erasures/{result.superseded.erasure_id}")
        for old in olds:
            with self.assertRaises(EntryForgottenError):
                writer.entry(old)
        self.assertEqual(eraser.wait_for_erasure(result.superseded.erasure_id, timeout=WAIT).status, "completed")
        # one of them already superseded: nothing is stored
        live = result.entries[0].entry_id
        with self.assertRaises(ConflictError):
            writer.supersede_all(subject, [live, olds[0]], [{"text": words()}])
        self.assertEqual([e.entry_id for e in writer.iter_entries(subject)], [e.entry_id for e in result.entries])

    def test_an_entry_already_superseded_is_a_conflict(self) -> None:
        writer, eraser = client("writer"), client("eraser")
        subject = unique("user:supersede-twice-")
        old = writer.append(subject, words()).entry_id
        first = writer.supersede(subject, old, words())
        with self.assertRaises(ConflictError) as cm:
            writer.supersede(subject, old, words())
        e = cm.exception
        self.assertEqual((e.status, e.code, e.retryable), (409, "conflict", False))
        self.assertFalse(is_retryable_conflict(e))
        self.assertIn(first.superseded.erasure_id, e.detail or "")  # names the erasure that took it
        # nothing of the refused update was stored: one live version, the first successor
        self.assertEqual([x.entry_id for x in writer.iter_entries(subject)], [first.entry.entry_id])
        # the current version is the one to supersede
        second = writer.supersede(subject, first.entry.entry_id, words())
        self.assertEqual([x.entry_id for x in writer.iter_entries(subject)], [second.entry.entry_id])
        for erasure_id in (first.superseded.erasure_id, second.superseded.erasure_id):
            self.assertEqual(eraser.wait_for_erasure(erasure_id, timeout=WAIT).status, "completed")
        # still a conflict once its erasure is over
        with self.assertRaises(ConflictError):
            writer.supersede(subject, old, words())

    def test_a_writer_supersedes_only_what_its_own_token_wrote(self) -> None:
        writer, eraser = client("writer"), client("eraser")
        subject = unique("user:supersede-theirs-")
        theirs = second_writer().append(subject, words()).entry_id
        with self.assertRaises(LetheError) as cm:
            writer.supersede(subject, theirs, words())
        e = cm.exception
        self.assertIsInstance(e, ForbiddenError)
        assert isinstance(e, ForbiddenError)
        self.assertEqual((e.status, e.code, e.retryable), (403, "forbidden", False))
        self.assertNotIn(support.TOKENS["writer"], str(e) + repr(e))
        # nothing stored, nothing forgotten
        self.assertEqual([x.entry_id for x in writer.iter_entries(subject)], [theirs])
        # an entry of another subject is not found
        with self.assertRaises(NotFoundError):
            second_writer().supersede(unique("user:supersede-elsewhere-"), theirs, words())
        # its own token may; an eraser token may supersede any entry
        mine = second_writer().supersede(subject, theirs, words())
        updated = eraser.supersede(subject, mine.entry.entry_id, words())
        self.assertEqual([x.entry_id for x in writer.iter_entries(subject)], [updated.entry.entry_id])
        for erasure_id in (mine.superseded.erasure_id, updated.superseded.erasure_id):
            self.assertEqual(eraser.wait_for_erasure(erasure_id, timeout=WAIT).status, "completed")


if __name__ == "__main__":
    unittest.main()
