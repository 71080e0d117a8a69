"""Every failure of the client is a ``LetheError`` (issue 33): an argument it refuses —
a token, a URL, a header, an id, a list or a mapping of the wrong kind — raises
``InvalidArgumentError`` (``validation_failed``, also a ``ValueError``; of the wrong
type: ``InvalidArgumentTypeError``, also a ``TypeError``) before any request, never a
bare ``ValueError``, ``TypeError``, ``UnicodeError`` or ``AttributeError`` from the
standard library. A stand-in server checks that nothing was sent."""

from __future__ import annotations

import unittest
from typing import Any, Callable, List, Tuple

from .support import CLIENT_ROOT  # noqa: F401  (puts the package on sys.path)

from lethe import InvalidArgumentError, InvalidArgumentTypeError, LetheClient, LetheError, retry_call

from .fakes import FakeHttpServer, reply

SECRET = "s3cr3t-T0KEN-value"


class ArgumentsTest(unittest.TestCase):
    server: FakeHttpServer

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = FakeHttpServer(lambda h: reply(h, 200, b"{}"))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def client(self, **options: Any) -> LetheClient:
        return LetheClient(self.server.url, token=SECRET, timeout=5, **options)

    def assert_refused(self, cases: List[Tuple[str, Callable[[], Any]]], kind: type = InvalidArgumentError) -> None:
        before = len(self.server.requests)
        for label, call in cases:
            with self.subTest(label):
                try:
                    call()
                except LetheError as e:
                    self.assertIsInstance(e, kind, f"{label}: {type(e).__name__}: {e}")
                    self.assertIsInstance(e, ValueError)
                    self.assertEqual(e.code, "validation_failed")
                    self.assertFalse(e.retryable)
                    self.assertNotIn(SECRET, str(e))
                except BaseException as e:  # noqa: BLE001 — the point: nothing else escapes
                    self.fail(f"{label}: raised {type(e).__name__} ({e}), not a LetheError")
                else:
                    self.fail(f"{label}: nothing was raised")
        self.assertEqual(self.server.requests[before:], [], "a refused argument sent a request")

    def test_tokens(self) -> None:
        url = self.server.url
        self.assert_refused(
            [
                ("a non-ASCII token", lambda: LetheClient(url, token="tökén")),
                ("a non-ASCII role token", lambda: LetheClient(url, tokens={"writer": "tökén"})),
                ("a token with a line break", lambda: LetheClient(url, token="a\nb")),
                ("a lone surrogate token", lambda: LetheClient(url, token="\udc80")),
                ("a token that is bytes", lambda: LetheClient(url, token=b"abc")),  # type: ignore[arg-type]
                ("tokens that are not a mapping", lambda: LetheClient(url, tokens=[("writer", "abc")])),  # type: ignore[arg-type]
                ("an unknown role", lambda: LetheClient(url, tokens={"root": SECRET})),
            ]
        )

    def test_base_urls(self) -> None:
        self.assert_refused(
            [
                ("not a string", lambda: LetheClient(8787, token=SECRET)),  # type: ignore[arg-type]
                ("a port that is not a number", lambda: LetheClient("http://127.0.0.1:abc", token=SECRET)),
                ("a port out of range", lambda: LetheClient("http://127.0.0.1:99999", token=SECRET)),
                ("an unclosed IPv6 host", lambda: LetheClient("http://[::1", token=SECRET)),
                ("a host with a space", lambda: LetheClient("http://a b:1", token=SECRET)),
                ("a host with a control character", lambda: LetheClient("http://a\x00b:1", token=SECRET)),
                ("a host no resolver can encode", lambda: LetheClient("http://\udc80:1", token=SECRET)),
                ("an empty host label", lambda: LetheClient("http://a..b:1", token=SECRET)),
                ("a path with a line break", lambda: LetheClient(self.server.url + "/a\nb", token=SECRET)),
                ("no scheme", lambda: LetheClient("127.0.0.1:8787", token=SECRET)),
                ("credentials", lambda: LetheClient("http://user:pw@127.0.0.1:1", token=SECRET)),
            ]
        )

    def test_a_non_ascii_path_prefix_is_sent_percent_encoded(self) -> None:
        c = LetheClient(self.server.url + "/léthé", token=SECRET, timeout=5)
        c.health()
        self.assertEqual(self.server.requests[-1][1], "/l%C3%A9th%C3%A9/healthz")

    def test_options(self) -> None:
        url = self.server.url
        self.assert_refused(
            [
                ("a timeout that is text", lambda: LetheClient(url, token=SECRET, timeout="5")),  # type: ignore[arg-type]
                ("conflict_attempts that is text", lambda: LetheClient(url, token=SECRET, conflict_attempts="3")),  # type: ignore[arg-type]
                ("conflict_attempts of 0", lambda: LetheClient(url, token=SECRET, conflict_attempts=0)),
                ("a negative conflict_delay", lambda: LetheClient(url, token=SECRET, conflict_delay=-1)),
                ("a conflict_max_delay that is text", lambda: LetheClient(url, token=SECRET, conflict_max_delay="2")),  # type: ignore[arg-type]
                ("an ssl_context that is not one", lambda: LetheClient(url, token=SECRET, ssl_context="tls")),  # type: ignore[arg-type]
                ("a ca_file that is not a path", lambda: LetheClient(url, token=SECRET, ca_file=123)),  # type: ignore[arg-type]
                ("a client_cert that is not a path", lambda: LetheClient(url, token=SECRET, client_cert=123)),  # type: ignore[arg-type]
                ("retry_call attempts that are text", lambda: retry_call(lambda: None, attempts="2")),  # type: ignore[arg-type]
            ]
        )

    def test_call_arguments(self) -> None:
        c = self.client()
        self.assert_refused(
            [
                ("a non-ASCII Idempotency-Key", lambda: c.append("user:1", "hi", idempotency_key="clé-1")),
                ("an Idempotency-Key with a line break", lambda: c.append("user:1", "hi", idempotency_key="a\r\nX-Evil: 1")),
                ("an Idempotency-Key that is a number", lambda: c.append("user:1", "hi", idempotency_key=42)),  # type: ignore[arg-type]
                ("a non-ASCII Last-Event-ID", lambda: c.follow_erasure("ers_AAAAAAAAAAAAAAAAAAAAAA", last_event_id="é")),
                ("an id that is a number", lambda: c.entry(5)),  # type: ignore[arg-type]
                ("an id holding a lone surrogate", lambda: c.entry("ent_\udc80")),
                ("an id of '..'", lambda: c.entry("..")),
                ("a cursor holding a lone surrogate", lambda: c.entries("user:1", cursor="\udc80")),
                ("a subject filter holding a lone surrogate", lambda: c.erasures(subject="user:\udc80")),
                ("a lease that is a number", lambda: c.release_lease("user:1", 7)),  # type: ignore[arg-type]
                ("metadata that is not a mapping", lambda: c.append("user:1", "hi", metadata=object())),  # type: ignore[arg-type]
                ("metadata that is a list", lambda: c.append("user:1", "hi", metadata=[1, 2])),  # type: ignore[arg-type]
                ("metadata that is not JSON", lambda: c.append("user:1", "hi", metadata={"at": object()})),
                ("supersede metadata that is text", lambda: c.supersede("user:1", "ent_A", "hi", metadata="x")),  # type: ignore[arg-type]
                ("supersede_all entry ids that are one string", lambda: c.supersede_all("user:1", "ent_A", [{"text": "x"}])),
                ("supersede_all entries that are not mappings", lambda: c.supersede_all("user:1", ["ent_A"], ["x"])),  # type: ignore[list-item]
                ("key ids that are not a list", lambda: c.key_validity(5)),  # type: ignore[arg-type]
                ("search subjects that are one string", lambda: c.search("q", subjects="user:1")),
                ("search subjects that are a number", lambda: c.search("q", subjects=5)),  # type: ignore[arg-type]
                ("no search scope", lambda: c.search("q")),
                ("an unknown search mode", lambda: c.search("q", subject="user:1", mode="fuzzy")),
                ("artifact sources that are not a list", lambda: c.create_artifact("summary", "t", 5)),  # type: ignore[arg-type]
                ("artifact sources that are one string", lambda: c.create_artifact("summary", "t", "ent_A")),
                ("regenerate excluding a number", lambda: c.regenerate("art_A", excluding=3)),  # type: ignore[arg-type]
                ("training ids that are a number", lambda: c.record_training_exposure("corpus", 3)),  # type: ignore[arg-type]
                ("erase entry ids that are one string", lambda: c.erase("user:1", entry_ids="ent_A")),
                ("erase unlearning that is not a mapping", lambda: c.erase("user:1", unlearning=3)),  # type: ignore[arg-type]
                ("erase public attributes that are a number", lambda: c.erase("user:1", public_attributes=3)),  # type: ignore[arg-type]
                ("erase_many of one string", lambda: c.erase_many("user:one")),
                ("redact ids that are a number", lambda: c.redact("ers_A", 3)),  # type: ignore[arg-type]
                ("dismiss matches that are not mappings", lambda: c.dismiss("ers_A", ["ent_A"])),  # type: ignore[list-item]
                ("a per-call timeout of 0", lambda: c.health(timeout=0)),
                ("a wait timeout that is text", lambda: c.wait_for_erasure("ers_A", timeout="5")),  # type: ignore[arg-type]
                ("an idle timeout that is negative", lambda: c.follow_erasure("ers_A", idle_timeout=-1)),
            ]
        )

    def test_arguments_of_the_wrong_type_are_also_type_errors(self) -> None:
        c = self.client()
        for label, call in [
            ("an id that is a number", lambda: c.entry(5)),  # type: ignore[arg-type]
            ("search subjects that are one string", lambda: c.search("q", subjects="user:1")),
            ("erase_many of one string", lambda: c.erase_many("user:one")),
            ("metadata that is not a mapping", lambda: c.append("user:1", "hi", metadata=object())),  # type: ignore[arg-type]
            ("a base URL that is not a string", lambda: LetheClient(8787)),  # type: ignore[arg-type]
        ]:
            with self.subTest(label):
                with self.assertRaises(InvalidArgumentTypeError) as cm:
                    call()
                self.assertIsInstance(cm.exception, TypeError)
                self.assertIsInstance(cm.exception, LetheError)


if __name__ == "__main__":
    unittest.main()
