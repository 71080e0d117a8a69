"""Writes the service refuses for a moment — a retryable 409, while a forget re-keys the
subject — are retried by the client itself under one Idempotency-Key: the caller sees one
success and one stored entry. An erased subject (410) and other refusals are not retried.
Against a fake service (what was sent, attempt by attempt) and the real one (appends
racing forgets of the same subject's other entries)."""

from __future__ import annotations

import json
import threading
import unittest
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

from . import support
from .fakes import FakeHttpServer, reply
from .support import client, unique, words

from lethe import ConflictError, ErasureInProgressError, ForbiddenError, LetheClient, SubjectErasedError, is_retryable_conflict


def setUpModule() -> None:
    support.server()


def problem(code: str, status: int, retryable: Optional[bool] = None) -> bytes:
    body: Dict[str, object] = {"type": f"urn:lethe:problem:{code}", "title": code, "status": status, "detail": f"{code} for a test", "code": code}
    if retryable is not None:
        body["retryable"] = retryable
    return json.dumps(body).encode()


APPENDED = json.dumps({"entryId": "entry_AAAAAAAAAAAAAAAAAAAAAA", "keyId": "key_AAAAAAAAAAAAAAAAAAAAAA", "seq": 3}).encode()
SUPERSEDED = json.dumps(
    {
        "entry": {"entryId": "entry_BBBBBBBBBBBBBBBBBBBBBB", "keyId": "key_AAAAAAAAAAAAAAAAAAAAAA", "seq": 4},
        "superseded": {"entryId": "entry_AAAAAAAAAAAAAAAAAAAAAA", "erasureId": "ers_AAAAAAAAAAAAAAAAAAAAAA", "status": "pending"},
    }
).encode()


class Scripted:
    """A fake service answering each request with the next of ``answers`` (status, body), the last one from then on."""

    def __init__(self, answers: List[tuple]) -> None:
        self.answers = answers
        self.keys: List[Optional[str]] = []
        self.lock = threading.Lock()
        self.server = FakeHttpServer(self._handle)

    def _handle(self, h) -> None:  # type: ignore[no-untyped-def]
        with self.lock:
            self.keys.append(h.headers.get("Idempotency-Key"))
            status, body = self.answers[min(len(self.keys), len(self.answers)) - 1]
        reply(h, status, body, "application/json" if status < 300 else "application/problem+json")

    def client(self, **kwargs: object) -> LetheClient:
        return LetheClient(self.server.url, token="fake-token", conflict_delay=0.01, **kwargs)  # type: ignore[arg-type]

    def close(self) -> None:
        self.server.close()


class ConflictRetryTest(unittest.TestCase):
    def test_a_retryable_409_is_retried_under_the_same_key_until_it_succeeds(self) -> None:
        fake = Scripted([(409, problem("erasure_in_progress", 409)), (409, problem("conflict", 409, True)), (201, APPENDED)])
        try:
            appended = fake.client().append("user:42", "prefers window seats")
            self.assertEqual((appended.entry_id, appended.seq), ("entry_AAAAAAAAAAAAAAAAAAAAAA", 3))
            self.assertEqual(len(fake.keys), 3)
            self.assertTrue(fake.keys[0])
            self.assertEqual(len(set(fake.keys)), 1)  # one key, made up once
        finally:
            fake.close()

    def test_the_callers_key_is_kept(self) -> None:
        fake = Scripted([(409, problem("erasure_in_progress", 409)), (201, APPENDED)])
        try:
            fake.client().append("user:42", "text", idempotency_key="mine-1")
            self.assertEqual(fake.keys, ["mine-1", "mine-1"])
        finally:
            fake.close()

    def test_an_erased_subject_and_a_plain_conflict_are_not_retried(self) -> None:
        for answer, error in (
            ((410, problem("subject_erased", 410)), SubjectErasedError),
            ((409, problem("conflict", 409)), ConflictError),
            ((409, problem("idempotency_key_reused", 409)), ConflictError),
        ):
            fake = Scripted([answer, (201, APPENDED)])
            try:
                with self.assertRaises(error) as cm:
                    fake.client().append("user:42", "text")
                self.assertFalse(is_retryable_conflict(cm.exception))
                self.assertEqual(len(fake.keys), 1, answer)
            finally:
                fake.close()

    def test_retries_are_bounded(self) -> None:
        fake = Scripted([(409, problem("erasure_in_progress", 409))])
        try:
            with self.assertRaises(ErasureInProgressError):
                fake.client(conflict_attempts=3).append("user:42", "text")
            self.assertEqual(len(fake.keys), 3)
            # a lease is retried the same way
            with self.assertRaises(ErasureInProgressError):
                fake.client(conflict_attempts=2).lease("user:42")
            self.assertEqual(len(fake.keys), 5)
        finally:
            fake.close()

    def test_a_supersede_is_retried_on_a_retryable_409_only(self) -> None:
        fake = Scripted([(409, problem("erasure_in_progress", 409)), (409, problem("conflict", 409, True)), (201, SUPERSEDED)])
        try:
            result = fake.client().supersede("user:42", "entry_AAAAAAAAAAAAAAAAAAAAAA", "prefers aisle seats now")
            self.assertEqual((result.entry.entry_id, result.entry.seq, result.entry.replayed), ("entry_BBBBBBBBBBBBBBBBBBBBBB", 4, False))
            self.assertEqual((result.superseded.entry_id, result.superseded.erasure_id), ("entry_AAAAAAAAAAAAAAAAAAAAAA", "ers_AAAAAAAAAAAAAAAAAAAAAA"))
            self.assertEqual(len(fake.keys), 3)
            method, path, _ = fake.server.requests[-1]
            self.assertEqual((method, path), ("POST", "/v1/subjects/user:42/entries/entry_AAAAAAAAAAAAAAAAAAAAAA/supersede"))
        finally:
            fake.close()
        # already superseded (a plain conflict) or forbidden: one attempt
        for answer, error in (((409, problem("conflict", 409)), ConflictError), ((403, problem("forbidden", 403)), ForbiddenError)):
            fake = Scripted([answer, (201, SUPERSEDED)])
            try:
                with self.assertRaises(error):
                    fake.client().supersede("user:42", "entry_AAAAAAAAAAAAAAAAAAAAAA", "text")
                self.assertEqual(len(fake.keys), 1, answer)
            finally:
                fake.close()

    def test_the_problem_says_whether_a_conflict_is_retryable(self) -> None:
        fake = Scripted([(409, problem("conflict", 409, True))])
        try:
            with self.assertRaises(ConflictError) as cm:
                fake.client(conflict_attempts=1).append("user:42", "text")
            self.assertTrue(cm.exception.retryable)
            self.assertTrue(is_retryable_conflict(cm.exception))
        finally:
            fake.close()


class AppendsRacingForgetsTest(unittest.TestCase):
    def test_appends_racing_forgets_of_the_subjects_other_entries_all_succeed_once(self) -> None:
        """16 appends, each under its own Idempotency-Key, racing forgets of the same
        subject's other entries (each forget re-keys the subject): no append fails, and each
        key stored exactly one entry, readable afterwards."""
        writer, eraser = client("writer"), client("eraser")
        subject = unique("user:race-")
        doomed = [writer.append(subject, words()).entry_id for _ in range(4)]
        keys = [f"py-race-{i}-{unique('')}" for i in range(16)]
        texts = [words() for _ in keys]
        stop = threading.Event()
        erasures: List[str] = []

        def forget_all() -> None:
            for entry_id in doomed:
                if stop.is_set():
                    return
                accepted = eraser.forget(entry_id)
                erasures.append(accepted.erasure_id)
                eraser.wait_for_erasure(accepted.erasure_id, timeout=120)

        with ThreadPoolExecutor(max_workers=9) as pool:
            forgets = pool.submit(forget_all)
            appends = [pool.submit(writer.append, subject, text, idempotency_key=key) for key, text in zip(keys, texts)]
            results = [a.result() for a in appends]
            stop.set()
            forgets.result()
        self.assertEqual(len(results), 16)
        # a retry of each under its key answers the same entry: one stored entry per key
        for key, text, first in zip(keys, texts, results):
            again = writer.append(subject, text, idempotency_key=key)
            self.assertTrue(again.replayed)
            self.assertEqual(again.entry_id, first.entry_id)
        stored = [e for e in writer.iter_entries(subject) if e.entry_id not in doomed]
        self.assertEqual(sorted(e.entry_id for e in stored), sorted(r.entry_id for r in results))
        self.assertEqual(sorted(e.text for e in stored), sorted(texts))
        self.assertGreater(len(erasures), 0)
        for erasure_id in erasures:
            self.assertEqual(eraser.erasure(erasure_id).status, "completed")


if __name__ == "__main__":
    unittest.main()
