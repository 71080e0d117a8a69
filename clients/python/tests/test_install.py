"""Installing the client offline: ``pip install --no-index ./clients/python`` in a fresh
virtual environment, with nothing but the standard library to build it with (the
in-tree backend, ``backend/lethe_build.py``). No service is needed.

- The pip test makes a venv with pip (``python -m venv``, pip from ``ensurepip``'s
  bundled wheel: no network), installs with ``--no-index`` and imports ``lethe`` from
  it. Without ``ensurepip`` (Debian without ``python3-venv``) it is skipped, saying so.
- The backend's own tests need no pip: the wheel it builds has a RECORD whose every
  hash and size holds, the metadata pyproject.toml gives, and, unpacked into a venv
  made ``--without-pip``, imports; the sdist builds the same wheel again.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path
from typing import Dict, List

from .support import CLIENT_ROOT

BACKEND = CLIENT_ROOT / "backend"
WHEEL = "lethe_client-0.1.0-py3-none-any.whl"
DIST_INFO = "lethe_client-0.1.0.dist-info"


def _env() -> Dict[str, str]:
    """The environment of a child: no PYTHONPATH (lethe must come from the venv), no pip
    configuration or index, no version check."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env.update({"PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"})
    return env


def _run(args: List[str], cwd: str, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}")
    return done


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _build(hook: str, source: Path, out: Path) -> str:
    """Runs the backend's hook in a child interpreter as a frontend would (``-I``: no site
    packages, so nothing but the standard library can help it): the file name it built."""
    code = f"import sys; sys.path.insert(0, {str(source / 'backend')!r}); import lethe_build; print(lethe_build.{hook}({str(out)!r}))"
    return _run([sys.executable, "-I", "-c", code], cwd=str(source)).stdout.strip().splitlines()[-1]


def _has_ensurepip() -> bool:
    return subprocess.run([sys.executable, "-I", "-c", "import ensurepip"], capture_output=True).returncode == 0


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


class InstallTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="lethe-install-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_pip_install_no_index_into_a_fresh_venv(self) -> None:
        if not _has_ensurepip():
            self.skipTest("this Python has no ensurepip (Debian: apt-get install python3-venv): pip cannot be put in a venv offline")
        venv = self.tmp / "venv"
        _run([sys.executable, "-m", "venv", str(venv)], cwd=str(self.tmp))
        python = _venv_python(venv)
        # the brief's command, from a checkout: no index, build isolation on (nothing to install for it)
        installed = _run([str(python), "-m", "pip", "install", "--no-index", str(CLIENT_ROOT)], cwd=str(self.tmp))
        self.assertIn("Successfully installed lethe-client-0.1.0", installed.stdout)
        # imported from the venv, not the checkout (-I: no cwd, no PYTHONPATH)
        where = _run([str(python), "-I", "-c", "import lethe; print(lethe.__file__); print(lethe.LetheClient.__name__)"], cwd=str(self.tmp)).stdout.split()
        self.assertTrue(Path(where[0]).resolve().is_relative_to(venv.resolve()), where[0])
        self.assertEqual(where[1], "LetheClient")
        files = _run([str(python), "-m", "pip", "show", "-f", "lethe-client"], cwd=str(self.tmp)).stdout
        self.assertIn("lethe/py.typed", files)
        self.assertIn("Requires: \n", files + "\n")  # no dependencies
        # and uninstalls cleanly (pip read the RECORD it wrote)
        _run([str(python), "-m", "pip", "uninstall", "-y", "lethe-client"], cwd=str(self.tmp))
        gone = subprocess.run([str(python), "-I", "-c", "import lethe"], cwd=str(self.tmp), env=_env(), capture_output=True)
        self.assertNotEqual(gone.returncode, 0)

    def test_the_wheel_is_valid_and_installs_without_pip(self) -> None:
        out = self.tmp / "dist"
        self.assertEqual(_build("build_wheel", CLIENT_ROOT, out), WHEEL)
        with zipfile.ZipFile(out / WHEEL) as wheel:
            names = wheel.namelist()
            record = wheel.read(f"{DIST_INFO}/RECORD").decode("utf-8").splitlines()
            # every file is in RECORD with its sha256 and size, RECORD itself without
            listed = {}
            for line in record:
                path, digest, size = line.split(",")
                listed[path] = (digest, size)
            self.assertEqual(sorted(listed), sorted(names))
            for name in names:
                if name == f"{DIST_INFO}/RECORD":
                    self.assertEqual(listed[name], ("", ""))
                    continue
                data = wheel.read(name)
                self.assertEqual(listed[name], (_record_hash(data), str(len(data))), name)
            package = sorted(n for n in names if n.startswith("lethe/"))
            self.assertEqual(package, sorted(f"lethe/{p.name}" for p in (CLIENT_ROOT / "lethe").iterdir() if p.suffix == ".py" or p.name == "py.typed"))
            self.assertFalse([n for n in names if n.endswith(".pyc") or "__pycache__" in n])
            wheel_file = wheel.read(f"{DIST_INFO}/WHEEL").decode("utf-8")
            self.assertIn("Wheel-Version: 1.0\n", wheel_file)
            self.assertIn("Root-Is-Purelib: true\n", wheel_file)
            self.assertIn("Tag: py3-none-any\n", wheel_file)
            metadata = wheel.read(f"{DIST_INFO}/METADATA").decode("utf-8")
            head, _, body = metadata.partition("\n\n")
            fields = [line.split(": ", 1) for line in head.splitlines()]
            self.assertIn(["Metadata-Version", "2.1"], fields)
            self.assertIn(["Name", "lethe-client"], fields)
            self.assertIn(["Version", "0.1.0"], fields)
            self.assertIn(["Requires-Python", ">=3.9"], fields)
            self.assertNotIn("Requires-Dist", [f[0] for f in fields])
            self.assertEqual(body, (CLIENT_ROOT / "README.md").read_text("utf-8"))
            # installed as pip would (files unpacked into site-packages) into a venv without pip
            venv = self.tmp / "bare"
            _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=str(self.tmp))
            python = _venv_python(venv)
            purelib = _run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=str(self.tmp)).stdout.strip()
            wheel.extractall(purelib)
        where = _run([str(python), "-I", "-c", "import lethe, importlib.metadata as m; print(lethe.__file__); print(m.version('lethe-client'))"], cwd=str(self.tmp))
        path, version = where.stdout.split()
        self.assertTrue(Path(path).resolve().is_relative_to(venv.resolve()), path)
        self.assertEqual(version, "0.1.0")

    def test_the_sdist_builds_the_same_wheel(self) -> None:
        out = self.tmp / "dist"
        sdist = _build("build_sdist", CLIENT_ROOT, out)
        self.assertEqual(sdist, "lethe_client-0.1.0.tar.gz")
        with tarfile.open(out / sdist) as tar:
            names = tar.getnames()
            self.assertIn("lethe_client-0.1.0/PKG-INFO", names)
            self.assertIn("lethe_client-0.1.0/backend/lethe_build.py", names)
            tar.extractall(self.tmp / "unpacked", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        source = self.tmp / "unpacked" / "lethe_client-0.1.0"
        again = self.tmp / "again"
        self.assertEqual(_build("build_wheel", source, again), WHEEL)
        _build("build_wheel", CLIENT_ROOT, out)
        with zipfile.ZipFile(again / WHEEL) as a, zipfile.ZipFile(out / WHEEL) as b:
            self.assertEqual(a.read(f"{DIST_INFO}/RECORD"), b.read(f"{DIST_INFO}/RECORD"))

    def test_the_backend_reads_pyproject_as_tomllib_does(self) -> None:
        try:
            import tomllib  # type: ignore[import-not-found]
        except ImportError:
            self.skipTest("tomllib is Python 3.11 or newer")
        sys.path.insert(0, str(BACKEND))
        try:
            import lethe_build  # type: ignore[import-not-found]
        finally:
            sys.path.remove(str(BACKEND))
        with open(CLIENT_ROOT / "pyproject.toml", "rb") as f:
            document = tomllib.load(f)
        self.assertEqual(lethe_build.read_project(), document["project"])
        self.assertEqual(document["build-system"], {"requires": [], "build-backend": "lethe_build", "backend-path": ["backend"]})
        from lethe import __version__

        self.assertEqual(document["project"]["version"], __version__)


if __name__ == "__main__":
    unittest.main()
