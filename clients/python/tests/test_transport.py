"""The HTTP layer against stand-in servers (no lethe): deadlines, answers that are not
lethe's problem documents, Retry-After, the retry helper, and the token kept out of
every message."""

from __future__ import annotations

import json
import socket
import time
import traceback
import unittest
from typing import Dict, List, Optional, Tuple

from .support import CLIENT_ROOT  # noqa: F401  (puts the package on sys.path)

from lethe import (
    BadRequestError,
    ErasureEnd,
    GoneError,
    InvalidArgumentError,
    LetheClient,
    LetheError,
    NoTokenError,
    LetheTimeoutError,
    NotFoundError,
    ProtocolError,
    ServiceError,
    SubjectErasedError,
    TooManyStreamsError,
    UnavailableError,
    UnreachableError,
    retry_call,
)
from lethe._http import parse_retry_after, path_segment

from .fakes import FakeHttpServer, RawServer, read_request_head, reply

SECRET = "s3cr3t-T0KEN-value"


def problem(code: str, status: int, detail: str) -> bytes:
    return json.dumps({"type": f"urn:lethe:problem:{code}", "title": "T", "status": status, "detail": detail, "code": code}).encode()


def all_text(e: BaseException) -> str:
    """Everything a log could show of an error: message, repr, attributes, the whole traceback with causes."""
    parts = [str(e), repr(e), "".join(traceback.format_exception(type(e), e, e.__traceback__))]
    parts += [repr(v) for v in vars(e).values()]
    return "\n".join(parts)


class TokenTest(unittest.TestCase):
    def test_a_token_that_could_leak_is_refused_without_echoing_it(self) -> None:
        for bad in ["has space", "line\nbreak", "tab\there", "", "é-unicode"]:
            # a LetheError like every error of the client (validation_failed), and a ValueError
            with self.assertRaises(InvalidArgumentError) as cm:
                LetheClient("http://127.0.0.1:1", token=bad)
            self.assertIsInstance(cm.exception, LetheError)
            self.assertIsInstance(cm.exception, ValueError)
            self.assertEqual(cm.exception.code, "validation_failed")
            if bad:
                self.assertNotIn(bad, str(cm.exception))

    def test_repr_hides_the_tokens(self) -> None:
        c = LetheClient("http://127.0.0.1:1/", token=SECRET, tokens={"eraser": SECRET + "-eraser"})
        self.assertNotIn(SECRET, repr(c))
        self.assertIn("<redacted", repr(c))
        self.assertEqual(c.base_url, "http://127.0.0.1:1")
        with self.assertRaises(ValueError) as cm:
            LetheClient("http://127.0.0.1:1", tokens={"superuser": SECRET})
        self.assertNotIn(SECRET, str(cm.exception))

    def test_each_call_carries_its_roles_token(self) -> None:
        def ok(h) -> None:  # type: ignore[no-untyped-def]
            bodies = {
                "/v1/subjects/user:1/entries": {"entryId": "entry_x", "keyId": "key_x", "seq": 1},
                "/v1/entries/entry_AAAAAAAAAAAAAAAAAAAAAA": {"erasureId": "ers_x"},
                "/v1/search": {"hits": [], "readFence": "f"},
                "/v1/certificates/keys": {"keys": []},
                "/v1/backups": {"backups": [], "nextCursor": None},
            }
            reply(h, 202 if h.command == "DELETE" else 200, json.dumps(bodies[h.path.split("?")[0]]).encode())

        srv = FakeHttpServer(ok)
        try:
            tokens = {"writer": "w-token-1", "eraser": "e-token-1", "admin": "a-token-1"}
            c = LetheClient(srv.url, tokens=tokens)
            c.append("user:1", "x")
            c.forget("entry_AAAAAAAAAAAAAAAAAAAAAA")
            c.search("q", subject="user:1")
            c.search("q", all_subjects=True)
            c.certificate_keys()
            c.backups()  # no backup token: the admin's
            sent = [r[2].get("Authorization") for r in srv.requests]
            self.assertEqual(sent, ["Bearer w-token-1", "Bearer e-token-1", "Bearer w-token-1", "Bearer a-token-1", None, "Bearer a-token-1"])
            with self.assertRaises(NoTokenError) as cm:
                LetheClient(srv.url, tokens={"writer": "w-token-1"}).forget("entry_AAAAAAAAAAAAAAAAAAAAAA")
            self.assertIn("eraser", str(cm.exception))
            self.assertEqual(len(srv.requests), 6)  # refused before any request
        finally:
            srv.close()

    def test_a_search_says_when_a_sharded_deployment_answered_partially(self) -> None:
        answers = [
            {"hits": [], "readFence": "f", "partial": True, "shards": {"total": 6, "consulted": [0, 1], "missing": [2]}},
            {"hits": [], "readFence": "f"},
        ]

        def ok(h) -> None:  # type: ignore[no-untyped-def]
            reply(h, 200, json.dumps(answers.pop(0)).encode())

        srv = FakeHttpServer(ok)
        try:
            c = LetheClient(srv.url, token="w-token-1")
            self.assertTrue(c.search("q", subject="user:1").partial)
            self.assertFalse(c.search("q", subject="user:1").partial)
        finally:
            srv.close()

    def test_a_service_echoing_the_token_is_redacted(self) -> None:
        def echo(h) -> None:  # type: ignore[no-untyped-def]
            auth = h.headers.get("Authorization", "")
            body = json.dumps({"code": "validation_failed", "status": 400, "title": f"bad {auth}", "detail": f"you sent {auth}", "extra": {"k": auth}}).encode()
            reply(h, 400, body, "application/problem+json")

        srv = FakeHttpServer(echo)
        try:
            c = LetheClient(srv.url, token=SECRET)
            with self.assertRaises(BadRequestError) as cm:
                c.ensure_key("user:1")
            e = cm.exception
            self.assertEqual(e.code, "validation_failed")
            self.assertIn("[token]", e.detail)
            self.assertNotIn(SECRET, all_text(e))
            # the token did go out, as a bearer token
            self.assertEqual(srv.requests[0][2].get("Authorization"), f"Bearer {SECRET}")
        finally:
            srv.close()

    def test_a_non_json_body_echoing_the_token_is_redacted(self) -> None:
        srv = FakeHttpServer(lambda h: reply(h, 502, f"<html>proxy saw {h.headers.get('Authorization')}</html>".encode(), "text/html"))
        try:
            with self.assertRaises(UnavailableError) as cm:
                LetheClient(srv.url, token=SECRET).health()
            self.assertEqual((cm.exception.status, cm.exception.code), (502, "unavailable"))
            self.assertTrue(cm.exception.retryable)
            self.assertNotIn(SECRET, all_text(cm.exception))
        finally:
            srv.close()


class AnswersTest(unittest.TestCase):
    def test_problem_codes_pick_the_class_and_statuses_the_rest(self) -> None:
        answers: Dict[str, Tuple[int, bytes, str, Dict[str, str]]] = {
            "/a": (410, problem("subject_erased", 410, "gone for good"), "application/problem+json", {}),
            "/b": (410, problem("some_future_code", 410, "new"), "application/problem+json", {}),
            "/c": (404, b"not here", "text/plain", {}),
            "/d": (429, problem("too_many_streams", 429, "close one"), "application/problem+json", {"Retry-After": "5"}),
            "/e": (503, problem("unavailable", 503, "db down"), "application/problem+json", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        }

        def handle(h) -> None:  # type: ignore[no-untyped-def]
            status, body, ctype, headers = answers[h.path]
            reply(h, status, body, ctype, headers)

        srv = FakeHttpServer(handle)
        try:
            c = LetheClient(srv.url, token=SECRET)
            cases = [("/a", SubjectErasedError, "subject_erased"), ("/b", GoneError, "some_future_code"), ("/c", NotFoundError, "not_found"), ("/d", TooManyStreamsError, "too_many_streams"), ("/e", UnavailableError, "unavailable")]
            for path, cls, code in cases:
                with self.subTest(path=path):
                    with self.assertRaises(cls) as cm:
                        c._http.call("GET", path)
                    self.assertEqual(cm.exception.code, code)
                    self.assertIsInstance(cm.exception, ServiceError)
            with self.assertRaises(GoneError) as gone:
                c._http.call("GET", "/a")
            self.assertEqual((gone.exception.status, gone.exception.detail, gone.exception.title), (410, "gone for good", "T"))
            self.assertFalse(gone.exception.retryable)
            with self.assertRaises(TooManyStreamsError) as many:
                c._http.call("GET", "/d")
            self.assertEqual(many.exception.retry_after, 5.0)
            self.assertTrue(many.exception.retryable)
            with self.assertRaises(UnavailableError) as down:
                c._http.call("GET", "/e")
            self.assertEqual(down.exception.retry_after, 0.0)  # a date in the past: no wait
        finally:
            srv.close()

    def test_a_2xx_that_is_not_json_is_a_protocol_error(self) -> None:
        srv = FakeHttpServer(lambda h: reply(h, 200, b"<html>captive portal</html>", "text/html"))
        try:
            with self.assertRaises(ProtocolError):
                LetheClient(srv.url).health()
        finally:
            srv.close()

    def test_messages_name_a_path_only_to_its_second_segment(self) -> None:
        srv = FakeHttpServer(lambda h: reply(h, 404, problem("not_found", 404, "no such thing"), "application/problem+json"))
        try:
            with self.assertRaises(NotFoundError) as cm:
                LetheClient(srv.url, token=SECRET).entries("person:alice.smith")
            self.assertNotIn("alice", str(cm.exception))
            self.assertIn("/v1/subjects…", str(cm.exception))
            # the subject did travel, percent-encoded in its own segment
            self.assertEqual(srv.requests[0][1], "/v1/subjects/person:alice.smith/entries")
        finally:
            srv.close()

    def test_path_segments_cannot_escape(self) -> None:
        self.assertEqual(path_segment("a/b?c#d"), "a%2Fb%3Fc%23d")
        self.assertEqual(path_segment("user+1@x:y"), "user%2B1@x:y")
        for bad in ["", ".", ".."]:
            with self.assertRaises(ValueError):
                path_segment(bad)

    def test_retry_after_forms(self) -> None:
        self.assertEqual(parse_retry_after("7"), 7.0)
        self.assertIsNone(parse_retry_after("soon"))
        self.assertIsNone(parse_retry_after(None))


class DeadlineTest(unittest.TestCase):
    def test_a_service_that_never_answers_times_out(self) -> None:
        def silent(conn: socket.socket) -> None:
            read_request_head(conn)
            time.sleep(5)

        srv = RawServer(silent)
        try:
            start = time.monotonic()
            with self.assertRaises(LetheTimeoutError) as cm:
                LetheClient(srv.url, token=SECRET, timeout=0.5).health()
            self.assertLess(time.monotonic() - start, 2.0)
            self.assertIsInstance(cm.exception, UnreachableError)
            self.assertTrue(cm.exception.retryable)
            self.assertNotIn(SECRET, all_text(cm.exception))
        finally:
            srv.close()

    def test_a_trickling_answer_cannot_stretch_the_deadline(self) -> None:
        def trickle(conn: socket.socket) -> None:
            read_request_head(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n")
            for _ in range(40):  # a byte every 0.1 s: each read is quick, the whole takes 4 s
                conn.sendall(b" ")
                time.sleep(0.1)

        srv = RawServer(trickle)
        try:
            start = time.monotonic()
            with self.assertRaises(LetheTimeoutError):
                LetheClient(srv.url, timeout=1.0).health()
            self.assertLess(time.monotonic() - start, 2.0)
        finally:
            srv.close()

    def test_per_call_timeout_overrides_the_clients(self) -> None:
        def slow(conn: socket.socket) -> None:
            read_request_head(conn)
            time.sleep(3)

        srv = RawServer(slow)
        try:
            start = time.monotonic()
            with self.assertRaises(LetheTimeoutError):
                LetheClient(srv.url, timeout=60).health(timeout=0.3)
            self.assertLess(time.monotonic() - start, 1.5)
        finally:
            srv.close()

    def test_a_refused_connection_is_unreachable_not_a_timeout(self) -> None:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        with self.assertRaises(UnreachableError) as cm:
            LetheClient(f"http://127.0.0.1:{port}", token=SECRET, timeout=2).health()
        self.assertNotIsInstance(cm.exception, LetheTimeoutError)
        self.assertEqual(cm.exception.code, "unavailable")
        self.assertNotIn(SECRET, all_text(cm.exception))

    def test_timeouts_must_be_positive(self) -> None:
        for bad in [0, -1, float("inf"), float("nan")]:
            with self.assertRaises(ValueError):
                LetheClient("http://127.0.0.1:1", timeout=bad)


class RetryTest(unittest.TestCase):
    def test_retries_what_may_pass_and_honours_retry_after(self) -> None:
        calls = []
        waits: list = []

        def flaky() -> str:
            calls.append(1)
            if len(calls) == 1:
                raise UnavailableError("down", status=503, code="unavailable", retry_after=3.0)
            if len(calls) == 2:
                raise UnreachableError("reset", base_url="x", reason="reset")
            return "ok"

        self.assertEqual(retry_call(flaky, attempts=3, base_delay=0.01, max_delay=10, sleep=waits.append), "ok")
        self.assertEqual(len(calls), 3)
        self.assertEqual(waits[0], 3.0)  # the service's Retry-After, longer than the backoff
        self.assertLess(waits[1], 0.03)

    def test_does_not_retry_a_refusal_and_stops_after_the_attempts(self) -> None:
        calls = []

        def refused() -> None:
            calls.append(1)
            raise NotFoundError("no", status=404, code="not_found")

        with self.assertRaises(NotFoundError):
            retry_call(refused, attempts=5, sleep=lambda s: None)
        self.assertEqual(len(calls), 1)

        def always_down() -> None:
            calls.append(1)
            raise UnavailableError("down", status=503, code="unavailable")

        calls.clear()
        with self.assertRaises(UnavailableError):
            retry_call(always_down, attempts=3, sleep=lambda s: None)
        self.assertEqual(len(calls), 3)


class WaitTest(unittest.TestCase):
    def test_wait_resumes_a_dropped_stream_and_waits_out_a_refused_one(self) -> None:
        """The first events stream is refused (429), the second drops after two events, the
        third is asked to resume after the second (Last-Event-ID) and ends."""
        eid = "ers_AAAAAAAAAAAAAAAAAAAAAA"
        state = {"streams": 0, "done": False}
        last_event_ids: List[Optional[str]] = []

        def step(i: int, to: Optional[str], status: str) -> bytes:
            data = {"id": i, "fromStep": None, "toStep": to, "status": status, "at": "2026-01-01T00:00:00Z", "detail": None}
            return f"event: step\nid: {i}\ndata: {json.dumps(data)}\n\n".encode()

        def handle(h) -> None:  # type: ignore[no-untyped-def]
            if h.path == f"/v1/erasures/{eid}":
                status = "completed" if state["done"] else "running"
                reply(h, 200, json.dumps({"erasureId": eid, "status": status, "steps": [], "residuals": []}).encode())
                return
            state["streams"] += 1
            last_event_ids.append(h.headers.get("Last-Event-ID"))
            if state["streams"] == 1:
                reply(h, 429, problem("too_many_streams", 429, "close one"), "application/problem+json", {"Retry-After": "0"})
                return
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Connection", "close")
            h.end_headers()
            if state["streams"] == 2:
                h.wfile.write(step(1, "classify", "pending") + step(2, "fingerprint", "running"))
            else:
                h.wfile.write(step(3, None, "completed"))
                state["done"] = True
                h.wfile.write(b'event: end\ndata: {"erasureId": "' + eid.encode() + b'", "status": "completed", "class": "A", "recovered": 0}\n\n')
            h.wfile.flush()
            h.close_connection = True

        srv = FakeHttpServer(handle)
        try:
            seen: list = []
            view = LetheClient(srv.url, token=SECRET).wait_for_erasure(eid, timeout=20, on_event=seen.append)
            self.assertEqual(view.status, "completed")
            self.assertEqual(last_event_ids, [None, None, "2"])
            self.assertEqual([getattr(e, "id", "end") for e in seen], [1, 2, 3, "end"])
            self.assertIsInstance(seen[-1], ErasureEnd)
        finally:
            srv.close()

    def test_wait_gives_up_at_its_deadline(self) -> None:
        eid = "ers_AAAAAAAAAAAAAAAAAAAAAA"

        def handle(h) -> None:  # type: ignore[no-untyped-def]
            if h.path == f"/v1/erasures/{eid}":
                reply(h, 200, json.dumps({"erasureId": eid, "status": "running"}).encode())
                return
            h.send_response(200)  # a stream that never says anything
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.flush()
            time.sleep(5)

        srv = FakeHttpServer(handle)
        try:
            start = time.monotonic()
            with self.assertRaises(LetheTimeoutError) as cm:
                LetheClient(srv.url, token=SECRET).wait_for_erasure(eid, timeout=1.0)
            self.assertLess(time.monotonic() - start, 3.0)
            self.assertIn("did not finish within 1 s", str(cm.exception))
        finally:
            srv.close()


if __name__ == "__main__":
    unittest.main()
