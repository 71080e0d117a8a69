"""Small local servers standing in for a misbehaving service or network (no lethe)."""

from __future__ import annotations

import http.server
import socket
import threading
from typing import Callable, List, Optional, Tuple

Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


class FakeHttpServer:
    """An HTTP server whose every request is answered by ``handle`` (one thread each).
    ``requests`` records (method, path, headers) of each request."""

    def __init__(self, handle: Handler) -> None:
        self.requests: List[Tuple[str, str, dict]] = []
        outer = self

        class _H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                outer.requests.append((self.command, self.path, dict(self.headers)))
                length = int(self.headers.get("Content-Length") or 0)
                self.body = self.rfile.read(length) if length else b""
                handle(self)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def reply(h: http.server.BaseHTTPRequestHandler, status: int, body: bytes, content_type: str = "application/json", headers: Optional[dict] = None) -> None:
    h.send_response(status)
    h.send_header("Content-Type", content_type)
    h.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


class RawServer:
    """A TCP server that runs ``serve(conn)`` for each connection (one thread each)."""

    def __init__(self, serve: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.closed = threading.Event()
        self._serve = serve
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        try:
            self._serve(conn)
        except OSError:
            pass
        finally:
            conn.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


def read_request_head(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data
