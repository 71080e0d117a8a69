"""The event-stream parser, on its own (no service)."""

from __future__ import annotations

import unittest

from .support import CLIENT_ROOT  # noqa: F401  (puts the package on sys.path)

from lethe.errors import ProtocolError
from lethe.sse import SseEvent, iter_lines, parse_sse


def events(*chunks: bytes) -> list:
    return list(parse_sse(iter_lines(chunks)))


class SseTest(unittest.TestCase):
    def test_events_with_ids_names_and_multiline_data(self) -> None:
        got = events(b"event: step\nid: 1\ndata: {\"a\":1}\n\n: a comment\n\nevent: end\ndata: x\ndata: y\n\n")
        self.assertEqual(got, [SseEvent("step", '{"a":1}', "1"), SseEvent("end", "x\ny", None)])

    def test_every_line_break_and_chunk_boundary(self) -> None:
        stream = b"event: step\r\nid: 7\rdata: one\r\n\r\ndata: two\n\n"
        expected = [SseEvent("step", "one", "7"), SseEvent("message", "two", None)]
        self.assertEqual(events(stream), expected)
        # cut at every byte: a CR at the end of a chunk waits for its LF
        for cut in range(1, len(stream)):
            self.assertEqual(events(stream[:cut], stream[cut:]), expected, f"cut at {cut}")
        self.assertEqual(events(*[stream[i : i + 1] for i in range(len(stream))]), expected)

    def test_utf8_split_across_chunks(self) -> None:
        data = "data: café ✓\n\n".encode("utf-8")
        cut = data.index(b"\xc3") + 1
        self.assertEqual(events(data[:cut], data[cut:]), [SseEvent("message", "café ✓", None)])

    def test_an_event_cut_off_by_the_end_is_dropped(self) -> None:
        self.assertEqual(events(b"data: complete\n\ndata: cut"), [SseEvent("message", "complete", None)])

    def test_field_rules(self) -> None:
        # no space after the colon; a field without a colon; unknown fields; an id with NUL
        got = events(b"data:x\nretry: 5\nfoo: bar\nid: a\x00b\ndata\n\n")
        self.assertEqual(got, [SseEvent("message", "x\n", None)])
        self.assertEqual(events(b": only a comment\n\n"), [])

    def test_an_endless_line_is_refused(self) -> None:
        with self.assertRaises(ProtocolError):
            list(iter_lines([b"x" * 10, b"y" * 10], max_line_bytes=15))


if __name__ == "__main__":
    unittest.main()
