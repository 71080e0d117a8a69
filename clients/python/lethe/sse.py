"""Server-sent events (``text/event-stream``), read incrementally from a byte stream.

``iter_lines`` cuts bytes into lines at CRLF, LF or CR, across chunk boundaries (a CR
at the end of a chunk waits for the next one: its LF may follow); ``parse_sse`` turns
lines into events the way the HTML specification says: ``:`` lines are comments,
``data`` lines join with a newline, an event ends at a blank line (one cut off by the
end of the stream is dropped), an ``id`` holding NUL is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional

from .errors import ProtocolError

__all__ = ["SseEvent", "iter_lines", "parse_sse", "MAX_LINE_BYTES"]

#: A line longer than this (no line break in 8 MiB) is refused rather than buffered forever.
MAX_LINE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class SseEvent:
    """One event: ``event`` is ``"message"`` when the block named none."""

    event: str
    data: str
    id: Optional[str] = None


def iter_lines(chunks: Iterable[bytes], *, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of a byte stream, without their breaks, decoded as UTF-8."""
    buffered = b""
    first = True
    for chunk in chunks:
        if not chunk:
            continue
        buffered += chunk
        if first and len(buffered) >= 3:
            if buffered.startswith(b"\xef\xbb\xbf"):
                buffered = buffered[3:]
            first = False
        start = 0
        n = len(buffered)
        i = 0
        while i < n:
            b = buffered[i]
            if b == 0x0A:  # LF
                yield buffered[start:i].decode("utf-8", "replace")
                i += 1
                start = i
            elif b == 0x0D:  # CR: CRLF, or CR alone; at the very end, wait for the next chunk
                if i + 1 == n:
                    break
                yield buffered[start:i].decode("utf-8", "replace")
                i += 2 if buffered[i + 1] == 0x0A else 1
                start = i
            else:
                i += 1
        buffered = buffered[start:]
        if len(buffered) > max_line_bytes:
            raise ProtocolError(f"an event-stream line is longer than {max_line_bytes} bytes")
    if first and buffered.startswith(b"\xef\xbb\xbf"):
        buffered = buffered[3:]
    # at the end a CR is a break too, and what follows the last break is a line of its own
    if buffered.endswith(b"\r"):
        yield buffered[:-1].decode("utf-8", "replace")
    elif buffered:
        yield buffered.decode("utf-8", "replace")


def parse_sse(lines: Iterable[str]) -> Iterator[SseEvent]:
    """The events of a stream of lines."""
    event = ""
    event_id: Optional[str] = None
    data: List[str] = []
    fields = False
    for line in lines:
        if line == "":
            if fields:
                yield SseEvent(event=event or "message", data="\n".join(data), id=event_id)
            event, event_id, data, fields = "", None, [], False
            continue
        if line.startswith(":"):
            continue
        colon = line.find(":")
        if colon < 0:
            name, value = line, ""
        else:
            name = line[:colon]
            value = line[colon + 1 :]
            if value.startswith(" "):
                value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            if "\0" in value:
                continue
            event_id = value
        else:
            continue
        fields = True
