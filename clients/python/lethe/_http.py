"""The one HTTP caller of the service (``http.client``, standard library only).

Every call has a deadline: connecting, sending and reading the whole answer must fit
in ``timeout`` seconds (the socket's timeout is re-armed with what is left before each
blocking step, so a server that trickles bytes cannot stretch a call). An event stream
has a deadline for its answer's head and then an idle bound between bytes.

An answer that is not 2xx becomes a :class:`~lethe.errors.ServiceError` subclass; no
answer an :class:`~lethe.errors.UnreachableError` (``LetheTimeoutError`` past the
deadline). Tokens are checked when the transport is made (a token holding a line
break would come back inside http.client's own error), a call may only send one of
them, and every one is redacted from every text the service or the network hands back.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import re
import socket
import ssl
import time
import urllib.parse
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from .errors import InvalidArgumentError, InvalidArgumentTypeError, LetheError, LetheTimeoutError, ProtocolError, ServiceError, UnreachableError, error_for

__all__ = [
    "Transport",
    "HttpResult",
    "EventStreamResponse",
    "check_token",
    "check_list",
    "check_mapping",
    "check_number",
    "path_segment",
    "short_path",
    "parse_retry_after",
]

_TOKEN = re.compile(r"[\x21-\x7e]+")
#: A header value the client sends: visible ASCII and spaces (http.client would send other
#: Latin-1 as is, and raise a bare UnicodeEncodeError past it).
_HEADER_VALUE = re.compile(r"[\x20-\x7e]*")
#: Characters a base URL may not hold anywhere: whitespace and controls (http.client
#: refuses them only once a request is made).
_URL_FORBIDDEN = re.compile(r"[\x00-\x20\x7f]")
#: Kept as they are when the base URL's path is percent-encoded (a % already there included).
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_UNSET: Any = object()
#: Read this much at most per system call.
_CHUNK = 64 * 1024
#: How much of a non-problem error body a message quotes.
_BODY_SHOWN = 200


class _DeadlinePassed(Exception):
    pass


def path_segment(value: str, name: str = "id") -> str:
    """One path segment, percent-encoded (``user:42`` stays readable; ``/`` cannot escape
    the segment). ``.`` and ``..`` are refused: URL parsers fold them away."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"{name} must be a string, not {type(value).__name__}")
    if value in ("", ".", ".."):
        raise InvalidArgumentError(f"{name} must not be empty, '.' or '..'")
    return urllib.parse.quote(_utf8(value, name), safe=":@")


def _utf8(value: str, name: str) -> bytes:
    """The text as UTF-8; a lone surrogate (text that is not Unicode) is refused."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{name} holds a lone surrogate: it is not valid Unicode text") from None


def check_list(value: Any, name: str) -> List[Any]:
    """A list argument (any iterable but a string, bytes or a mapping) as a list."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise InvalidArgumentTypeError(f"{name} must be a list, not {type(value).__name__}")
    return list(value)


def check_mapping(value: Any, name: str) -> Dict[Any, Any]:
    """A mapping argument (a dict, or any Mapping) as a dict."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentTypeError(f"{name} must be a mapping (a dict), not {type(value).__name__}")
    return dict(value)


def check_number(value: Any, name: str, *, minimum: float = 0, integer: bool = False) -> Any:
    """A number argument of at least ``minimum`` (an int when ``integer``)."""
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise InvalidArgumentTypeError(f"{name} must be {'an integer' if integer else 'a number'}, not {type(value).__name__}")
    if not math.isfinite(value) or value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum:g}")
    return value


def short_path(path: str) -> str:
    """``/v1/subjects/user:42/entries`` → ``/v1/subjects…``: past the second segment a
    path may name a subject, which has no place in an error message."""
    parts = path.split("?", 1)[0].split("/")
    shown = "/".join(parts[:3])
    return shown + ("…" if len(parts) > 3 else "")


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` in seconds: delta-seconds, or an HTTP date (seconds from now, at least 0)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def check_token(token: Any) -> str:
    """A bearer token as the service accepts it: visible ASCII, no spaces. Refused
    without being echoed: a bad token is the one most likely to be a pasted secret (and
    one holding a line break would come back inside http.client's own error)."""
    if not isinstance(token, str) or _TOKEN.fullmatch(token) is None:
        raise InvalidArgumentError("a token is visible ASCII characters without spaces")
    return token


def _check_timeout(value: Optional[float], name: str, allow_none: bool = False) -> Optional[float]:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentTypeError(f"{name} must be a positive number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"{name} must be a positive number of seconds")
    return float(value)


class HttpResult:
    """A 2xx answer, read whole."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ProtocolError(f"the service answered {self.status} with a body that is not JSON ({type(e).__name__})") from None

    def __repr__(self) -> str:
        return f"HttpResult(status={self.status}, bytes={len(self.body)})"


def tls_context(ca_file: Optional[str] = None, client_cert: Optional[str] = None, client_key: Optional[str] = None) -> ssl.SSLContext:
    """An SSL context that verifies the service (certificate and host name): against
    ``ca_file`` alone when given (PEM), else the system's roots; presenting
    ``client_cert`` (PEM, with ``client_key`` when the key is in a file of its own) to a
    service that requires client certificates. Verification is never turned off."""
    if client_key is not None and client_cert is None:
        raise InvalidArgumentError("client_key needs client_cert")
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError, TypeError, ValueError) as e:
        raise InvalidArgumentError(f"ca_file: cannot load {ca_file} ({type(e).__name__})") from None
    if client_cert is not None:
        try:
            context.load_cert_chain(client_cert, client_key)
        except (OSError, ssl.SSLError, TypeError, ValueError) as e:
            raise InvalidArgumentError(f"client_cert: cannot load {client_cert} with its key ({type(e).__name__})") from None
    return context


class Transport:
    """Base URL, the tokens to redact, deadlines; one connection per call."""

    def __init__(
        self,
        base_url: str,
        *,
        secrets: Sequence[str] = (),
        timeout: float = 30.0,
        ssl_context: Optional[ssl.SSLContext] = None,
        user_agent: str = "lethe-python",
    ) -> None:
        if not isinstance(base_url, str):
            raise InvalidArgumentTypeError(f"base_url must be a string, not {type(base_url).__name__}")
        if _URL_FORBIDDEN.search(base_url):
            raise InvalidArgumentError("base_url must not hold spaces or control characters")
        try:
            parts = urllib.parse.urlsplit(base_url)
            port = parts.port  # raises on a port that is not a number, or out of range
        except ValueError as e:
            raise InvalidArgumentError(f"base_url is not a URL: {e}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidArgumentError("base_url must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8787")
        if parts.username is not None or parts.password is not None:
            raise InvalidArgumentError("base_url must not hold credentials: pass tokens as token= or tokens=")
        if parts.query or parts.fragment:
            raise InvalidArgumentError("base_url must not have a query or a fragment")
        try:
            # what the resolver and the Host header are given: an IDN host encodes, a lone surrogate or an empty label does not
            parts.hostname.encode("ascii" if ":" in parts.hostname else "idna")
        except UnicodeError:
            raise InvalidArgumentError("base_url has a host name that cannot be encoded (an empty label, or characters no host name may hold)") from None
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = port
        # sent percent-encoded: http.client sends a path as ASCII only
        self._prefix = urllib.parse.quote(_utf8(parts.path.rstrip("/"), "base_url"), safe=_PATH_SAFE)
        netloc = f"[{self._host}]" if ":" in self._host else self._host
        self.base_url = f"{self._scheme}://{netloc}{'' if self._port is None else f':{self._port}'}{self._prefix}"
        for secret in secrets:
            check_token(secret)
        # longest first: a token that contains another is redacted whole
        self._secrets = tuple(sorted(set(secrets), key=len, reverse=True))
        checked = _check_timeout(timeout, "timeout")
        assert checked is not None
        self.timeout: float = checked
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise InvalidArgumentTypeError(f"ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}")
        self._ssl_context = ssl_context
        self._user_agent = user_agent

    def __repr__(self) -> str:
        return f"Transport(base_url={self.base_url!r}, timeout={self.timeout:g})"

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "[token]")
        return text

    def _redact_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            return [self._redact_value(v) for v in value]
        if isinstance(value, dict):
            return {self.redact(str(k)): self._redact_value(v) for k, v in value.items()}
        return value

    # -- connections ---------------------------------------------------------------

    def _connect(self, deadline: float) -> Tuple[http.client.HTTPConnection, socket.socket]:
        remaining = _remaining(deadline)
        conn: http.client.HTTPConnection
        if self._scheme == "https":
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=remaining, context=self._ssl_context)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=remaining)
        conn.connect()
        sock = conn.sock
        assert sock is not None
        return conn, sock

    def _headers(self, token: Optional[str], accept: str, has_body: bool, extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        headers: Dict[str, str] = {"User-Agent": self._user_agent}
        for name, value in (extra or {}).items():
            if not isinstance(value, str):
                raise InvalidArgumentTypeError(f"header {name[:40]!r} must be a string, not {type(value).__name__}")
            if _HEADER_VALUE.fullmatch(value) is None:
                # not echoed: an Idempotency-Key may be anything the caller derived it from
                raise InvalidArgumentError(f"header {name[:40]!r} must be visible ASCII characters and spaces (no line break)")
            headers[name] = value
        headers["Accept"] = accept
        if has_body:
            headers["Content-Type"] = "application/json"
        if token is not None:
            if token not in self._secrets:
                raise InvalidArgumentError("a call's token must be one of the transport's (so that it is redacted)")
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _url(self, path: str, query: Optional[Mapping[str, Any]]) -> str:
        url = self._prefix + path
        if query:
            pairs = [(k, _utf8(_query_value(v), k)) for k, v in query.items() if v is not None]
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        return url

    def _send(
        self,
        method: str,
        path: str,
        token: Optional[str],
        query: Optional[Mapping[str, Any]],
        json_body: Any,
        headers: Optional[Mapping[str, str]],
        accept: str,
        deadline: float,
    ) -> Tuple[http.client.HTTPConnection, socket.socket, http.client.HTTPResponse]:
        data: Optional[bytes] = None
        if json_body is not _UNSET:
            try:
                # ensure_ascii: a lone surrogate travels as \udXXX and the service refuses it with a 400 naming the field
                data = json.dumps(json_body, allow_nan=False, separators=(",", ":")).encode("ascii")
            except (TypeError, ValueError) as e:
                raise InvalidArgumentError(f"the request body is not JSON: {e}") from None
        sent_headers = self._headers(token, accept, data is not None, headers)
        conn, sock = self._connect(deadline)
        try:
            _arm(sock, deadline)
            conn.request(method, self._url(path, query), body=data, headers=sent_headers)
            _arm(sock, deadline)
            resp = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        return conn, sock, resp

    def _read_all(self, resp: http.client.HTTPResponse, sock: socket.socket, deadline: float) -> bytes:
        chunks = []
        while True:
            _arm(sock, deadline)
            chunk = resp.read1(_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def _failure(self, method: str, path: str, resp: http.client.HTTPResponse, body: bytes) -> ServiceError:
        text = self.redact(body.decode("utf-8", "replace"))
        problem: Optional[Dict[str, Any]] = None
        try:
            parsed = json.loads(text)
            if isinstance(parsed, dict):
                problem = self._redact_value(parsed)
        except ValueError:
            pass
        named = problem.get("code") if problem is not None else None
        cls, code = error_for(resp.status, named if isinstance(named, str) else None)
        detail_field = problem.get("detail") if problem is not None else None
        detail = detail_field if isinstance(detail_field, str) else " ".join(text[:_BODY_SHOWN].split())
        title_field = problem.get("title") if problem is not None else None
        title = title_field if isinstance(title_field, str) else self.redact(resp.reason or "")
        retry_after = parse_retry_after(resp.getheader("Retry-After"))
        message = f"{method} {short_path(path)} answered {resp.status} {code}: {detail}" if detail else f"{method} {short_path(path)} answered {resp.status} {code}"
        return cls(message, status=resp.status, code=code, title=title, detail=detail, retry_after=retry_after, problem=problem)

    def _unreachable(self, method: str, path: str, error: BaseException, timeout: float) -> UnreachableError:
        if isinstance(error, (_DeadlinePassed, socket.timeout)):
            return LetheTimeoutError(
                f"{method} {short_path(path)}: no complete answer from {self.base_url} within {timeout:g} s", base_url=self.base_url, reason="timed out"
            )
        reason = self.redact(str(error)) or type(error).__name__
        if isinstance(error, ssl.SSLCertVerificationError):
            return UnreachableError(
                f"{method} {short_path(path)}: the lethe service at {self.base_url} was refused: its TLS certificate was not accepted ({reason})",
                base_url=self.base_url,
                reason=f"its TLS certificate was not accepted: {reason}",
            )
        return UnreachableError(f"{method} {short_path(path)}: the lethe service at {self.base_url} did not answer ({reason})", base_url=self.base_url, reason=reason)

    # -- calls -----------------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        *,
        token: Optional[str] = None,
        query: Optional[Mapping[str, Any]] = None,
        json_body: Any = _UNSET,
        headers: Optional[Mapping[str, str]] = None,
        accept: str = "application/json",
        timeout: Optional[float] = None,
    ) -> HttpResult:
        """One request, its answer read whole; a non-2xx answer raises."""
        limit = _check_timeout(timeout, "timeout") if timeout is not None else self.timeout
        assert limit is not None
        deadline = time.monotonic() + limit
        try:
            conn, sock, resp = self._send(method, path, token, query, json_body, headers, accept, deadline)
            try:
                body = self._read_all(resp, sock, deadline)
            finally:
                conn.close()
        except LetheError:
            raise
        except (OSError, http.client.HTTPException, _DeadlinePassed) as e:
            raise self._unreachable(method, path, e, limit) from (None if isinstance(e, _DeadlinePassed) else e)
        if not 200 <= resp.status < 300:
            raise self._failure(method, path, resp, body)
        return HttpResult(resp.status, resp.headers, body)

    def open_stream(
        self,
        method: str,
        path: str,
        *,
        token: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        accept: str = "text/event-stream",
        timeout: Optional[float] = None,
        idle_timeout: Optional[float] = None,
    ) -> "EventStreamResponse":
        """A streamed answer: the head within ``timeout``; then at most ``idle_timeout``
        seconds between bytes (None: no bound)."""
        limit = _check_timeout(timeout, "timeout") if timeout is not None else self.timeout
        assert limit is not None
        idle = _check_timeout(idle_timeout, "idle_timeout", allow_none=True)
        deadline = time.monotonic() + limit
        try:
            conn, sock, resp = self._send(method, path, token, None, _UNSET, headers, accept, deadline)
        except LetheError:
            raise
        except (OSError, http.client.HTTPException, _DeadlinePassed) as e:
            raise self._unreachable(method, path, e, limit) from (None if isinstance(e, _DeadlinePassed) else e)
        if not 200 <= resp.status < 300:
            try:
                body = self._read_all(resp, sock, deadline)
            except (OSError, http.client.HTTPException, _DeadlinePassed):
                body = b""
            finally:
                conn.close()
            raise self._failure(method, path, resp, body)
        return EventStreamResponse(self, method, path, conn, sock, resp, idle)


class EventStreamResponse:
    """The body of a streamed answer, chunk by chunk; close it when done (or use ``with``)."""

    def __init__(
        self,
        transport: Transport,
        method: str,
        path: str,
        conn: http.client.HTTPConnection,
        sock: socket.socket,
        resp: http.client.HTTPResponse,
        idle_timeout: Optional[float],
    ) -> None:
        self._transport = transport
        self._method = method
        self._path = path
        self._conn = conn
        self._sock = sock
        self._resp = resp
        self._idle = idle_timeout
        self.status = resp.status
        self.headers = resp.headers
        self.closed = False

    def chunks(self) -> Iterator[bytes]:
        while not self.closed:
            try:
                self._sock.settimeout(self._idle)
                chunk = self._resp.read1(_CHUNK)
            except socket.timeout:
                self.close()
                raise LetheTimeoutError(
                    f"{self._method} {short_path(self._path)}: nothing streamed for {self._idle:g} s", base_url=self._transport.base_url, reason="idle timeout"
                ) from None
            except (OSError, http.client.HTTPException, ValueError) as e:
                was_closed = self.closed
                self.close()
                if was_closed:
                    return
                raise self._transport._unreachable(self._method, self._path, e, self._idle or 0.0) from e
            if not chunk:
                self.close()
                return
            yield chunk

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self._resp.close()
            finally:
                self._conn.close()
                try:
                    self._sock.close()
                except OSError:
                    pass

    def __enter__(self) -> "EventStreamResponse":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _DeadlinePassed()
    return left


def _arm(sock: socket.socket, deadline: float) -> None:
    sock.settimeout(_remaining(deadline))


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
