"""Service appends (Idempotency-Key, the retry helper) and reads (one entry, pages
following nextCursor) against the real service."""

from __future__ import annotations

import http.client
import threading
import unittest
from typing import ClassVar, List
import urllib.parse

from . import support
from .fakes import FakeHttpServer, reply
from .support import client, unique, words

from lethe import (
    IdempotencyKeyReusedError,
    LetheClient,
    NotFoundError,
    PayloadTooLargeError,
    UnreachableError,
    ValidationFailedError,
    new_idempotency_key,
)


def setUpModule() -> None:
    support.server()


class AppendTest(unittest.TestCase):
    def test_append_without_a_lease_and_read_it_back(self) -> None:
        writer = client("writer")
        subject = unique("user:log-")
        text = words()
        appended = writer.append(subject, text, kind="note", metadata={"source": "chat", "n": 1})
        self.assertEqual(appended.seq, 1)
        self.assertFalse(appended.replayed)
        entry = writer.entry(appended.entry_id)
        self.assertEqual((entry.entry_id, entry.seq, entry.text, entry.kind, entry.metadata), (appended.entry_id, 1, text, "note", {"source": "chat", "n": 1}))
        self.assertTrue(entry.read_fence)
        # plaintext and fences stay out of a repr
        self.assertNotIn(text, repr(entry))
        self.assertNotIn(entry.read_fence or "-", repr(entry))

    def test_idempotency_key_replays_and_refuses_another_body(self) -> None:
        writer = client("writer")
        subject = unique("user:idem-")
        key = new_idempotency_key()
        text = words()
        first = writer.append(subject, text, idempotency_key=key)
        again = writer.append(subject, text, idempotency_key=key)
        self.assertFalse(first.replayed)
        self.assertTrue(again.replayed)
        self.assertEqual((again.entry_id, again.seq), (first.entry_id, first.seq))
        with self.assertRaises(IdempotencyKeyReusedError) as cm:
            writer.append(subject, words(), idempotency_key=key)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "idempotency_key_reused"))
        self.assertEqual([e.entry_id for e in writer.iter_entries(subject)], [first.entry_id])
        with self.assertRaises(ValidationFailedError):
            writer.append(subject, text, idempotency_key="spaces are not allowed")

    def test_append_with_retry_stores_once_when_the_answer_is_lost(self) -> None:
        """A proxy forwards each Idempotency-Key's first append to lethe (which stores it)
        and drops the connection instead of answering: the retry, under the same key, gets
        the first attempt's result and nothing is stored twice."""
        target = urllib.parse.urlsplit(support.server().url)
        lock = threading.Lock()
        keys: list = []

        def forward(h) -> None:  # type: ignore[no-untyped-def]
            conn = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=30)
            headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
            key = h.headers.get("Idempotency-Key")
            with lock:
                first_of_key = key not in keys
                keys.append(key)
            conn.request(h.command, h.path, body=h.body or None, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            conn.close()
            if h.command == "POST" and first_of_key:
                h.close_connection = True
                return  # stored by lethe, answer lost
            extra = {k: v for k, v in resp.getheaders() if k.lower() in ("idempotent-replayed", "retry-after", "location")}
            reply(h, resp.status, body, resp.getheader("Content-Type") or "application/json", extra)

        proxy = FakeHttpServer(forward)
        try:
            writer = LetheClient(proxy.url, token=support.TOKENS["writer"], timeout=30)
            subject = unique("user:retry-")
            text = words()
            with self.assertRaises(UnreachableError):
                writer.append(subject, text, idempotency_key=new_idempotency_key())  # the plain append: outcome unknown
            appended = writer.append_with_retry(subject, text, base_delay=0.05)
            self.assertTrue(appended.replayed)
            self.assertEqual(len(keys), 3)
            self.assertEqual(keys[1], keys[2])  # the retry reused the key it made up
            self.assertNotEqual(keys[0], keys[1])
            self.assertTrue(keys[1])
            stored = list(client("writer").iter_entries(subject))
            # the first (plain) append and the retried one: each stored once
            self.assertEqual(len(stored), 2)
            self.assertIn(appended.entry_id, [e.entry_id for e in stored])
        finally:
            proxy.close()

    def test_bad_appends(self) -> None:
        writer = client("writer")
        subject = unique("user:bad-")
        with self.assertRaises(ValidationFailedError) as cm:
            writer.append(subject, "nul \u0000 inside")
        self.assertIn("NUL", cm.exception.detail)
        with self.assertRaises(ValidationFailedError):
            writer.append(subject, "lone surrogate \ud800")
        with self.assertRaises(PayloadTooLargeError) as big:
            writer.append(subject, "x" * (64 * 1024 + 1))
        self.assertEqual(big.exception.status, 413)
        with self.assertRaises(ValidationFailedError):
            writer.append(subject, "ok", kind="k" * 65)


class ReadTest(unittest.TestCase):
    writer: ClassVar[LetheClient]
    subject: ClassVar[str]
    ids: ClassVar[List[str]]

    @classmethod
    def setUpClass(cls) -> None:
        cls.writer = client("writer")
        cls.subject = unique("user:pages-")
        cls.ids = [cls.writer.append(cls.subject, f"{words(4)} number {i}").entry_id for i in range(5)]

    def test_a_page_and_its_cursor(self) -> None:
        page = self.writer.entries(self.subject, limit=2)
        self.assertEqual([e.entry_id for e in page.items], self.ids[:2])
        self.assertIsNotNone(page.next_cursor)
        self.assertTrue(page.read_fence)
        second = self.writer.entries(self.subject, limit=2, cursor=page.next_cursor)
        self.assertEqual([e.entry_id for e in second.items], self.ids[2:4])
        last = self.writer.entries(self.subject, limit=1000)
        self.assertEqual(len(last.items), 5)
        self.assertIsNone(last.next_cursor)

    def test_the_iterator_follows_next_cursor_to_the_end(self) -> None:
        pages = list(self.writer.iter_entry_pages(self.subject, page_size=2))
        self.assertEqual([len(p) for p in pages], [2, 2, 1])
        self.assertIsNone(pages[-1].next_cursor)
        entries = list(self.writer.iter_entries(self.subject, page_size=2))
        self.assertEqual([e.entry_id for e in entries], self.ids)
        self.assertEqual([e.seq for e in entries], [1, 2, 3, 4, 5])

    def test_bad_reads(self) -> None:
        with self.assertRaises(ValidationFailedError):
            self.writer.entries(self.subject, limit=0)
        with self.assertRaises(ValidationFailedError):
            self.writer.entries(self.subject, limit=1001)
        with self.assertRaises(ValidationFailedError):
            self.writer.entries(self.subject, cursor="not a cursor")
        with self.assertRaises(NotFoundError):
            self.writer.entries(unique("user:never-seen-"))
        with self.assertRaises(NotFoundError):
            self.writer.entry("entry_AAAAAAAAAAAAAAAAAAAAAA")
        with self.assertRaises(ValidationFailedError):
            self.writer.entry("entry_short")


if __name__ == "__main__":
    unittest.main()
