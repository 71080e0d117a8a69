"""HTTPS: the client verifies the service against ``ca_file`` and presents ``client_cert``.

A stand-in service (tests/fakes.py) behind TLS with certificates made by ``openssl`` for
this run: a CA, a server certificate for 127.0.0.1 and localhost (subjectAltName), a
client certificate, and a second CA the service was not signed by.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import tempfile
import unittest
from pathlib import Path
from typing import Optional

from . import support  # noqa: F401  (puts the client on sys.path)
from .fakes import FakeHttpServer, reply
from lethe import LetheClient
from lethe.errors import UnreachableError

_dir: Optional[Path] = None


def _openssl(*args: str) -> None:
    assert _dir is not None
    if shutil.which("openssl") is None:
        raise RuntimeError("openssl is not installed: these tests make their certificates with it")
    done = subprocess.run(["openssl", *args], cwd=str(_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {done.stderr.decode('utf-8', 'replace')}")


def _ca(name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt",
             "-days", "2", "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def _leaf(name: str, ca: str, extensions: str) -> None:
    assert _dir is not None
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
    (_dir / f"{name}.ext").write_text(f"basicConstraints=CA:FALSE\n{extensions}\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")


def setUpModule() -> None:
    global _dir
    _dir = Path(tempfile.mkdtemp(prefix="lethe-py-tls-"))
    _ca("ca")
    _leaf("server", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth")
    _leaf("client", "ca", "extendedKeyUsage=clientAuth")
    _ca("rogue-ca")


def tearDownModule() -> None:
    if _dir is not None:
        shutil.rmtree(_dir, ignore_errors=True)


def f(name: str) -> str:
    assert _dir is not None
    return str(_dir / name)


def _healthy(h) -> None:  # type: ignore[no-untyped-def]
    reply(h, 200, json.dumps({"status": "ok"}).encode())


class TlsServer:
    """The stand-in service behind TLS; with ``client_ca``, a client certificate signed by it is required."""

    def __init__(self, client_ca: Optional[str] = None) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(f("server.crt"), f("server.key"))
        if client_ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(client_ca)
        self.fake = FakeHttpServer(_healthy)
        # before any client connects: accept() then hands out TLS connections
        self.fake.httpd.socket = context.wrap_socket(self.fake.httpd.socket, server_side=True)
        self.port = self.fake.httpd.server_address[1]

    def close(self) -> None:
        self.fake.close()


class ServerVerification(unittest.TestCase):
    def setUp(self) -> None:
        self.server = TlsServer()
        self.addCleanup(self.server.close)

    def test_with_the_ca_the_service_is_verified_and_answers(self) -> None:
        for host in ("127.0.0.1", "localhost"):
            lethe = LetheClient(f"https://{host}:{self.server.port}", token="pytest-tls-token-1", ca_file=f("ca.crt"), timeout=10)
            self.assertEqual(lethe.health(), {"status": "ok"})

    def test_without_the_ca_or_with_another_the_certificate_is_refused(self) -> None:
        for ca in (None, f("rogue-ca.crt")):
            lethe = LetheClient(f"https://127.0.0.1:{self.server.port}", token="pytest-tls-token-1", ca_file=ca, timeout=10)
            with self.assertRaises(UnreachableError) as caught:
                lethe.health()
            self.assertTrue(caught.exception.reason.startswith("its TLS certificate was not accepted"), caught.exception.reason)
            self.assertIn("was refused", str(caught.exception))

    def test_unusable_options_are_refused_before_any_request(self) -> None:
        with self.assertRaises(ValueError) as caught:
            LetheClient("https://127.0.0.1:1", token="pytest-tls-token-1", ca_file=f("missing.crt"))
        self.assertIn("ca_file", str(caught.exception))
        with self.assertRaises(ValueError):
            LetheClient("https://127.0.0.1:1", token="pytest-tls-token-1", ca_file=f("ca.crt"), ssl_context=ssl.create_default_context())
        with self.assertRaises(ValueError):
            LetheClient("https://127.0.0.1:1", token="pytest-tls-token-1", client_key=f("client.key"))
        self.assertEqual(self.server.fake.requests, [])


class ClientCertificates(unittest.TestCase):
    def setUp(self) -> None:
        self.server = TlsServer(client_ca=f("ca.crt"))
        self.addCleanup(self.server.close)

    def test_a_client_certificate_signed_by_the_ca_is_required(self) -> None:
        url = f"https://127.0.0.1:{self.server.port}"
        without = LetheClient(url, token="pytest-tls-token-1", ca_file=f("ca.crt"), timeout=10)
        with self.assertRaises(UnreachableError):
            without.health()
        self.assertEqual(self.server.fake.requests, [])
        with_cert = LetheClient(url, token="pytest-tls-token-1", ca_file=f("ca.crt"), client_cert=f("client.crt"), client_key=f("client.key"), timeout=10)
        self.assertEqual(with_cert.health(), {"status": "ok"})
        self.assertEqual(len(self.server.fake.requests), 1)


if __name__ == "__main__":
    unittest.main()
