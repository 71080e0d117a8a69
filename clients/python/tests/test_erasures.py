"""Erasures against the real service: a subject's erasure from request to certificate
(events stream, wait, certificate and signing keys), forgetting one memory, lists, no
re-learning until reinstated, and the refusals."""

from __future__ import annotations

import json
import os
import tempfile
import unittest
from typing import ClassVar, Iterator, List, Optional

from . import support
from .support import client, second_writer, unique, words

from lethe import (
    ConflictError,
    ErasureAccepted,
    ErasureEvent,
    ErasureView,
    LetheClient,
    Page,
    EntryForgottenError,
    ErasureEnd,
    ErasureTransition,
    ForbiddenError,
    GoneError,
    NearCopyError,
    NotAMatchError,
    NotFoundError,
    SourceErasedError,
    SubjectErasedError,
    ValidationFailedError,
)

WAIT = 120.0


def setUpModule() -> None:
    support.server()


class SubjectErasureTest(unittest.TestCase):
    """One subject erased once; the tests read what it left."""

    writer: ClassVar[LetheClient]
    eraser: ClassVar[LetheClient]
    subject: ClassVar[str]
    entries: ClassVar[List[str]]
    fence: ClassVar[Optional[str]]
    accepted: ClassVar[ErasureAccepted]
    events: ClassVar[List[ErasureEvent]]
    view: ClassVar[ErasureView]

    @classmethod
    def setUpClass(cls) -> None:
        cls.writer, cls.eraser = client("writer"), client("eraser")
        cls.subject = unique("user:erase-")
        cls.entries = [cls.writer.append(cls.subject, words()).entry_id for _ in range(2)]
        cls.fence = cls.writer.entry(cls.entries[0]).read_fence
        cls.accepted = cls.eraser.erase(cls.subject, reason="the person asked", legal_basis="gdpr-art17")
        cls.events = []
        cls.view = cls.eraser.wait_for_erasure(cls.accepted.erasure_id, timeout=WAIT, on_event=cls.events.append)

    def test_accepted_then_completed(self) -> None:
        self.assertTrue(self.accepted.created)
        self.assertTrue(self.accepted.erasure_id.startswith("ers_"))
        v = self.view
        self.assertEqual((v.erasure_id, v.status, v.scope, v.legal_basis), (self.accepted.erasure_id, "completed", "subject", "gdpr-art17"))
        self.assertTrue(v.finished)
        self.assertEqual([s.name for s in v.steps][:3], ["classify", "fingerprint", "fence"])
        self.assertTrue(all(s.status in ("done", "skipped") for s in v.steps), [(s.name, s.status) for s in v.steps])
        self.assertIsNotNone(v.probe)
        self.assertIsNotNone(v.certificate)
        self.assertNotIn(self.subject, json.dumps(v.raw))  # named by its keyed hash only

    def test_the_certificate_and_the_keys_that_verify_it(self) -> None:
        cert = self.eraser.erasure_certificate(self.accepted.erasure_id)
        self.assertEqual(cert.algorithm, "Ed25519")
        self.assertEqual(cert.erasure_id, self.accepted.erasure_id)
        keys = client(None).certificate_keys()  # no token needed
        self.assertIn(cert.signing_key_id, [k.key_id for k in keys])
        self.assertEqual(keys[0].state, "current")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cert.json")
            cert.save(path)
            with open(path, encoding="utf-8") as f:
                self.assertEqual(json.load(f), cert.raw)
        with self.assertRaises(NotFoundError):
            self.eraser.erasure_certificate("ers_AAAAAAAAAAAAAAAAAAAAAA")

    def test_the_events_stream(self) -> None:
        # wait_for_erasure told every event, from the first to the end
        seen_end = self.events[-1]
        assert isinstance(seen_end, ErasureEnd)
        self.assertEqual(seen_end.status, "completed")
        seen = [e.id for e in self.events if isinstance(e, ErasureTransition)]
        # a finished erasure's stream replays every transition, then its end
        with self.eraser.follow_erasure(self.accepted.erasure_id, timeout=10) as stream:
            events = list(stream)
        steps = [e for e in events if isinstance(e, ErasureTransition)]
        end = events[-1]
        assert isinstance(end, ErasureEnd)
        self.assertEqual((end.erasure_id, end.status), (self.accepted.erasure_id, "completed"))
        self.assertEqual([e.id for e in steps], sorted(e.id for e in steps))
        self.assertEqual((steps[0].from_step, steps[0].to_step), (None, "classify"))
        self.assertEqual((steps[-1].to_step, steps[-1].status), (None, "completed"))
        self.assertEqual(stream.last_event_id, str(steps[-1].id))
        self.assertEqual(seen, [e.id for e in steps])
        # resuming after an event id
        with self.eraser.follow_erasure(self.accepted.erasure_id, last_event_id=steps[2].id, timeout=10) as resumed:
            rest = [e.id for e in resumed if isinstance(e, ErasureTransition)]
        self.assertEqual(rest, [e.id for e in steps[3:]])
        with self.assertRaises(NotFoundError):
            self.eraser.follow_erasure("ers_AAAAAAAAAAAAAAAAAAAAAA")

    def test_the_report(self) -> None:
        html = self.eraser.erasure_report(self.accepted.erasure_id)
        self.assertIn("<html", html.lower())

    def test_erased_data_is_gone_and_a_stale_fence_refused(self) -> None:
        with self.assertRaises(GoneError):
            self.writer.entry(self.entries[0])
        other = self.writer.append(unique("user:other-"), words()).entry_id
        with self.assertRaises(SourceErasedError):
            self.writer.create_artifact("summary", words(), [other], read_fence=self.fence)

    def test_erase_many(self) -> None:
        subjects = [unique("user:bulk-") for _ in range(3)]
        for s in subjects:
            self.writer.append(s, words())
        items = self.eraser.erase_many([subjects[0], unique("user:never-"), subjects[1], subjects[2]], legal_basis="gdpr-art17")
        self.assertEqual([i.index for i in items], [0, 1, 2, 3])
        self.assertEqual((items[1].erasure, items[1].error_code), (None, "not_found"))
        accepted = [i.erasure for i in items if i.erasure is not None]
        self.assertEqual(len(accepted), 3)
        self.assertTrue(all(a.created for a in accepted))
        for a in accepted:
            self.assertEqual(self.eraser.wait_for_erasure(a.erasure_id, timeout=WAIT).status, "completed")
        with self.assertRaises(ValidationFailedError):
            self.eraser.erase_many([subjects[0], subjects[0]])
        with self.assertRaises(TypeError):
            self.eraser.erase_many("user:one")  # type: ignore[arg-type]

    def test_no_relearning_until_reinstated(self) -> None:
        subject = unique("user:tomb-")
        self.writer.append(subject, words())
        erasure = self.eraser.erase(subject)
        self.assertEqual(self.eraser.wait_for_erasure(erasure.erasure_id, timeout=WAIT).status, "completed")
        with self.assertRaises(SubjectErasedError) as cm:
            self.writer.append(subject, words())
        self.assertEqual((cm.exception.status, cm.exception.code), (410, "subject_erased"))
        with self.assertRaises(SubjectErasedError):
            self.writer.lease(subject)
        with self.assertRaises(SubjectErasedError):
            self.writer.ensure_key(subject)
        with self.assertRaises(ForbiddenError):
            self.writer.reinstate(subject, "not the writer's call")
        admin = client("admin")
        done = admin.reinstate(subject, "the person signed up again")
        self.assertEqual((done.subject, done.reinstated), (subject, True))
        with self.assertRaises(ConflictError):
            admin.reinstate(subject, "again")
        self.assertEqual(self.writer.append(subject, words()).seq, 1)

    def test_refusals(self) -> None:
        with self.assertRaises(ForbiddenError):
            client("writer").erase(self.subject)
        with self.assertRaises(NotFoundError):
            self.eraser.erase(unique("user:never-seen-"))
        with self.assertRaises(ValidationFailedError) as cm:
            self.eraser.erase(unique("user:"), legal_basis="because")
        self.assertIn("legalBasis", cm.exception.detail)
        with self.assertRaises(NotFoundError):
            self.eraser.erasure("ers_AAAAAAAAAAAAAAAAAAAAAA")
        with self.assertRaises(ValidationFailedError):
            self.eraser.erasure("ers_nope")
        with self.assertRaises(ConflictError):
            self.eraser.resume_erasure(self.accepted.erasure_id)  # not failed
        with self.assertRaises(ValidationFailedError):
            self.eraser.dismiss(self.accepted.erasure_id, [])
        with self.assertRaises(NotFoundError):
            self.eraser.redact("ers_AAAAAAAAAAAAAAAAAAAAAA", [self.entries[0]])


class ForgetTest(unittest.TestCase):
    """Forgetting single memories: DELETE /v1/entries/{id}, and erase(subject, entry_ids=…)."""

    writer: ClassVar[LetheClient]
    eraser: ClassVar[LetheClient]
    subject: ClassVar[str]
    texts: ClassVar[List[str]]
    ids: ClassVar[List[str]]

    @classmethod
    def setUpClass(cls) -> None:
        cls.writer, cls.eraser = client("writer"), client("eraser")
        cls.subject = unique("user:forget-")
        cls.texts = [words() for _ in range(3)]
        cls.ids = [cls.writer.append(cls.subject, t).entry_id for t in cls.texts]

    def test_forget_one_then_another(self) -> None:
        forgotten = self.eraser.forget(self.ids[0])
        self.assertTrue(forgotten.created)
        self.assertEqual(forgotten.location, f"/v1/erasures/{forgotten.erasure_id}")
        # from the request on: 410 entry_forgotten, absent from lists and search
        with self.assertRaises(EntryForgottenError) as cm:
            self.writer.entry(self.ids[0])
        self.assertEqual((cm.exception.status, cm.exception.code), (410, "entry_forgotten"))
        self.assertEqual([e.entry_id for e in self.writer.iter_entries(self.subject)], self.ids[1:])
        hits = self.writer.search(self.texts[0], subject=self.subject, k=20).hits
        self.assertNotIn(self.ids[0], [h.id for h in hits])
        view = self.eraser.wait_for_erasure(forgotten.erasure_id, timeout=WAIT)
        self.assertEqual((view.status, view.scope, view.entry_ids), ("completed", "records", [self.ids[0]]))
        self.assertIsNotNone(self.eraser.erasure_certificate(forgotten.erasure_id).signing_key_id)
        # the rest of the subject lives on
        self.assertEqual(self.writer.entry(self.ids[1]).text, self.texts[1])

        second = self.eraser.erase(self.subject, entry_ids=[self.ids[1]], reason="one more")
        self.assertTrue(second.created)
        with self.assertRaises(EntryForgottenError):
            self.writer.entry(self.ids[1])
        view = self.eraser.wait_for_erasure(second.erasure_id, timeout=WAIT)
        self.assertEqual((view.scope, view.entry_ids, view.status), ("records", [self.ids[1]], "completed"))
        self.assertEqual(self.writer.entry(self.ids[2]).text, self.texts[2])
        self.assertEqual(self.writer.append(self.subject, words()).seq, 4)

        # the subject's erasures, oldest first, a page at a time
        listed = list(self.eraser.iter_erasures(subject=self.subject, page_size=1))
        self.assertEqual([e.erasure_id for e in listed], [forgotten.erasure_id, second.erasure_id])
        first_page = self.eraser.erasures(subject=self.subject, limit=1)
        self.assertEqual(len(first_page.items), 1)
        self.assertIsNotNone(first_page.next_cursor)

    def test_bad_forgets(self) -> None:
        with self.assertRaises(NotFoundError):
            self.eraser.forget("entry_AAAAAAAAAAAAAAAAAAAAAA")
        with self.assertRaises(ValidationFailedError):
            self.eraser.forget("entry_bad")
        # a writer forgets only the entries its own token wrote
        theirs = second_writer().append(unique("user:forget-theirs-"), words()).entry_id
        with self.assertRaises(ForbiddenError):
            self.writer.forget(theirs)
        with self.assertRaises(ValidationFailedError):
            self.eraser.erasures(cursor="garbage")


class ErasureListTest(unittest.TestCase):
    def test_every_erasure_pages(self) -> None:
        eraser = client("eraser")
        pages = []
        for page in _pages(eraser):
            pages.append(page)
            if len(pages) > 1000:
                self.fail("pagination did not end")
        ids = [e.erasure_id for p in pages for e in p.items]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertIsNone(pages[-1].next_cursor)
        with self.assertRaises(ForbiddenError):
            client("writer").erasures()


def _pages(eraser: LetheClient) -> Iterator[Page[ErasureView]]:
    cursor = None
    while True:
        page = eraser.erasures(limit=2, cursor=cursor)
        yield page
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


if __name__ == "__main__":
    unittest.main()


class DismissalTest(unittest.TestCase):
    """A dismissal two people own: proposed with the eraser's token, approved with the
    approver's; a near copy is never dismissed; a redaction takes only what the probe named."""

    def test_propose_approve_revoke(self) -> None:
        writer, eraser, approver = client("writer"), client("eraser"), client("approver")
        place = unique("Halden")
        subject = unique("user:clinic-")
        writer.append(subject, f"Appointment with Dr. Okonkwo at the {place} clinic on 14 March about my knee.")
        notice = writer.append(unique("ctx:board-"), f"Public notice: Dr. Okonkwo at the {place} clinic is closed on 14 March for renovation.").entry_id
        copy = writer.append(unique("ctx:quote-"), f"Appointment with Dr. Okonkwo at the {place} clinic on 14 March about my knee.").entry_id
        unrelated = writer.append(unique("user:other-"), words()).entry_id
        erasure_id = eraser.erase(subject).erasure_id
        self.assertEqual(eraser.wait_for_erasure(erasure_id, timeout=WAIT).status, "incomplete")
        with self.assertRaises(NearCopyError):
            eraser.dismiss(erasure_id, [{"id": copy, "reason": "a quote"}])
        with self.assertRaises(NotAMatchError):
            eraser.redact(erasure_id, [unrelated])
        eraser.redact(erasure_id, [copy])
        self.assertEqual(eraser.wait_for_erasure(erasure_id, timeout=WAIT).status, "incomplete")
        proposed = eraser.dismiss(erasure_id, [{"id": notice, "reason": "A public closure notice: it names no patient."}])
        self.assertEqual(proposed.status, "incomplete")
        self.assertTrue(proposed.dismissal_id.startswith("dsm_"))
        with self.assertRaises(ForbiddenError):
            eraser.approve_dismissal(erasure_id, proposed.dismissal_id)
        self.assertEqual(approver.approve_dismissal(erasure_id, proposed.dismissal_id).status, "running")
        ruled = eraser.wait_for_erasure(erasure_id, timeout=WAIT)
        self.assertEqual(ruled.status, "completed")
        self.assertEqual(ruled.readable_by_ruling, [notice])
        self.assertEqual(approver.revoke_dismissal(erasure_id, proposed.dismissal_id, reason="reconsidered").status, "running")
        again = eraser.wait_for_erasure(erasure_id, timeout=WAIT)
        self.assertEqual(again.status, "incomplete")
        self.assertIsNone(again.readable_by_ruling)

