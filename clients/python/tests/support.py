"""The real service the tests call: one ``node dist/cli/main.js serve`` per test process,
on the embedded default (PGlite, local object store, local keyring, a generated
development root key) in a temporary LETHE_DATA_DIR, on a free port (PORT=0: the port
is read from its ``lethe listening`` log line), ready once ``/healthz`` answers.

It is started by the first test module that asks (``setUpModule``) and stopped when the
process exits (atexit; the runner also stops it on SIGTERM/SIGINT), and on Linux it dies
with the test process even when that is killed outright (PR_SET_PDEATHSIG). Nothing is
built here: ``dist/`` must exist (``npm run build``; ``npm test`` runs it first).
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Dict, Optional

HERE = Path(__file__).resolve().parent
CLIENT_ROOT = HERE.parent
REPO = CLIENT_ROOT.parent.parent
SERVE_JS = REPO / "dist" / "cli" / "main.js"

sys.path.insert(0, str(CLIENT_ROOT))

from lethe import LetheClient  # noqa: E402

#: One token per role; distinctive, so a test can look for them in every message.
TOKENS: Dict[str, str] = {
    "writer": "pytest-writer-Tk9x2q",
    "eraser": "pytest-eraser-Tk9x2q",
    "approver": "pytest-approver-Tk9x2q",
    "admin": "pytest-admin-Tk9x2q",
    "backup": "pytest-backup-Tk9x2q",
}

#: A second writer token: another principal of the writer role (a writer forgets only what its own token wrote).
SECOND_WRITER = "pytest-writer2-Tk9x2q"

#: Short leases: an erasure's drain step waits for outstanding leases to end.
LEASE_TTL_SECONDS = 20
START_TIMEOUT_SECONDS = 180


def unique(prefix: str) -> str:
    """A subject id (or word) no other test uses."""
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def words(n: int = 8) -> str:
    """Text of ``n`` words no other record shares (the erasure probe then finds nothing of it elsewhere)."""
    return " ".join(f"w{uuid.uuid4().hex[:10]}" for _ in range(n))


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return
    libc = ctypes.CDLL(libc_name, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Server:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="lethe-py-tests-"))
        self.data_dir = self.root / "data"
        self.log_path = self.root / "serve.log"
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.port: Optional[int] = None

    @property
    def url(self) -> str:
        assert self.port is not None
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text("utf-8", "replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def start(self) -> None:
        if not SERVE_JS.is_file():
            raise RuntimeError(f"{SERVE_JS} is missing: build the service first (`npm run build` in {REPO}; `npm test` does it before these tests)")
        node = os.environ.get("LETHE_NODE") or shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH (or set LETHE_NODE): the tests run the real lethe service")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(self.root)),
            "LETHE_DATA_DIR": str(self.data_dir),
            "LETHE_TOKENS": ",".join([*(f"{role}={token}" for role, token in TOKENS.items()), f"writer={SECOND_WRITER}"]),
            "PORT": "0",
            "HOST": "127.0.0.1",
            "LETHE_LOG_LEVEL": "info",
            "LETHE_LEASE_TTL_SECONDS": str(LEASE_TTL_SECONDS),
        }
        log = open(self.log_path, "wb")
        try:
            self.process = subprocess.Popen(
                [node, str(SERVE_JS), "serve"],
                cwd=str(REPO),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while self.port is None:
            if self.process.poll() is not None:
                raise RuntimeError(f"lethe serve exited with {self.process.returncode} before listening:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"lethe serve did not listen within {START_TIMEOUT_SECONDS} s:\n{self.log_tail()}")
            self.port = self._listening_port()
            if self.port is None:
                time.sleep(0.1)
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"lethe serve did not answer /healthz within {START_TIMEOUT_SECONDS} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def _listening_port(self) -> Optional[int]:
        try:
            text = self.log_path.read_text("utf-8", "replace")
        except OSError:
            return None
        for line in text.splitlines():
            if "lethe listening" not in line:
                continue
            try:
                port = json.loads(line).get("port")
            except ValueError:
                continue
            if isinstance(port, int) and port > 0:
                return port
        return None

    def stop(self) -> None:
        p = self.process
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=5)
        self.process = None
        if os.environ.get("LETHE_KEEP_TEST_DATA"):
            sys.stderr.write(f"lethe python tests: data and log kept in {self.root}\n")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


_server: Optional[Server] = None
_start_error: Optional[BaseException] = None


def server() -> Server:
    """The running service, started on first use."""
    global _server, _start_error
    if _server is not None:
        return _server
    if _start_error is not None:
        raise RuntimeError(f"lethe serve failed to start earlier: {_start_error}")
    s = Server()
    try:
        s.start()
    except BaseException as e:
        _start_error = e
        s.stop()
        raise
    _server = s
    atexit.register(stop_server)
    return s


def stop_server() -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None


def second_writer() -> LetheClient:
    """A client with the second writer token (another principal than ``client("writer")``)."""
    return LetheClient(server().url, token=SECOND_WRITER)


def client(role: Optional[str], **kwargs: object) -> LetheClient:
    """A client of the running service with the token of ``role`` (None: no token)."""
    return LetheClient(server().url, token=TOKENS[role] if role is not None else None, **kwargs)  # type: ignore[arg-type]
