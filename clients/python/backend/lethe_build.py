"""The Python client's build backend (PEP 517, PEP 660): standard library only.

``pip install ./clients/python`` needs nothing but pip and Python — no setuptools, no
wheel, no network (``pyproject.toml``: ``requires = []``, this module by
``backend-path``). It builds the pure-Python package ``lethe`` into a wheel
(``WHEEL``, ``METADATA``, ``RECORD`` with each file's sha256), an sdist, or an
editable wheel (a ``.pth`` naming this checkout).

The metadata is read from ``pyproject.toml``'s ``[project]`` table. Python 3.9 and
3.10 have no ``tomllib``, so :func:`read_project` reads the small part of TOML that
table uses (strings, arrays of strings, inline tables of strings) and refuses anything
else rather than guess; ``tests/test_install.py`` checks it agrees with ``tomllib``.

Archives are reproducible: entries sorted, timestamps from ``SOURCE_DATE_EPOCH`` (else
1980-01-01), modes 0644.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

__all__ = [
    "build_wheel",
    "build_sdist",
    "build_editable",
    "get_requires_for_build_wheel",
    "get_requires_for_build_sdist",
    "get_requires_for_build_editable",
    "prepare_metadata_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "read_project",
    "metadata_text",
]

#: The checkout's clients/python (where pyproject.toml is).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The one import package the distribution holds.
PACKAGE = "lethe"
#: Besides the package: what an sdist carries (paths under ROOT).
SDIST_EXTRA = ("pyproject.toml", "README.md", "backend/lethe_build.py")
TAG = "py3-none-any"
GENERATOR = "lethe_build"

Toml = Union[str, List[str], Dict[str, str]]


# -- pyproject.toml --------------------------------------------------------------------

_KEY = re.compile(r"([A-Za-z0-9_-]+)\s*=\s*(.*)$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _string(text: str, where: str) -> Tuple[str, str]:
    """A basic TOML string at the start of ``text``: its value and the rest of the text."""
    m = _STRING.match(text)
    if m is None:
        raise ValueError(f"pyproject.toml: {where}: expected a double-quoted string")
    value = re.sub(r"\\(.)", lambda e: _unescape(e.group(1), where), m.group(1))
    return value, text[m.end() :].lstrip()


def _unescape(char: str, where: str) -> str:
    if char not in _ESCAPES:
        raise ValueError(f"pyproject.toml: {where}: the escape \\{char} is not supported here")
    return _ESCAPES[char]


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` inside a string stays)."""
    out, quoted, i = [], False, 0
    while i < len(line):
        c = line[i]
        if c == "\\" and quoted:
            out.append(line[i : i + 2])
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "#" and not quoted:
            break
        out.append(c)
        i += 1
    return "".join(out).strip()


def _value(text: str, where: str) -> Toml:
    """A string, an array of strings or an inline table of strings: the whole of ``text``."""
    if text.startswith('"'):
        value, rest = _string(text, where)
        if rest:
            raise ValueError(f"pyproject.toml: {where}: unexpected {rest[:20]!r} after the string")
        return value
    if text.startswith("[") and text.endswith("]"):
        items: List[str] = []
        rest = text[1:-1].strip()
        while rest:
            item, rest = _string(rest, where)
            items.append(item)
            if rest.startswith(","):
                rest = rest[1:].lstrip()
            elif rest:
                raise ValueError(f"pyproject.toml: {where}: expected ',' between array items")
        return items
    if text.startswith("{") and text.endswith("}"):
        table: Dict[str, str] = {}
        rest = text[1:-1].strip()
        while rest:
            m = re.match(r"([A-Za-z0-9_-]+)\s*=\s*", rest)
            if m is None:
                raise ValueError(f"pyproject.toml: {where}: expected key = \"value\" in an inline table")
            table[m.group(1)], rest = _string(rest[m.end() :], where)
            if rest.startswith(","):
                rest = rest[1:].lstrip()
            elif rest:
                raise ValueError(f"pyproject.toml: {where}: expected ',' in an inline table")
        return table
    raise ValueError(f"pyproject.toml: {where}: only strings, arrays of strings and inline tables of strings are supported, not {text[:30]!r}")


def read_project(path: Optional[str] = None) -> Dict[str, Toml]:
    """The ``[project]`` table of ``pyproject.toml`` (a multi-line array is joined first)."""
    with open(path or os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    project: Dict[str, Toml] = {}
    table: Optional[str] = None
    i = 0
    while i < len(lines):
        line = _strip_comment(lines[i])
        i += 1
        if not line:
            continue
        if line.startswith("["):
            table = line.strip("[]").strip()
            continue
        if table != "project":
            continue
        m = _KEY.match(line)
        if m is None:
            raise ValueError(f"pyproject.toml line {i}: expected key = value in [project]")
        key, text = m.group(1), m.group(2)
        # an array over several lines: up to the line closing it
        while text.startswith("[") and not text.endswith("]") and i < len(lines):
            text += " " + _strip_comment(lines[i])
            i += 1
        project[key] = _value(text, f"[project] {key}")
    for required in ("name", "version"):
        if not isinstance(project.get(required), str):
            raise ValueError(f"pyproject.toml: [project] has no {required}")
    return project


# -- metadata ----------------------------------------------------------------------------


def _normalized(name: str) -> str:
    """The distribution name in file names (PEP 427 / PEP 625): ``lethe-client`` → ``lethe_client``."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _names(project: Mapping[str, Toml]) -> Tuple[str, str]:
    name, version = project["name"], project["version"]
    assert isinstance(name, str) and isinstance(version, str)
    return _normalized(name), version


def metadata_text(project: Mapping[str, Toml]) -> str:
    """Core metadata 2.1 (``METADATA``, an sdist's ``PKG-INFO``), the README as the description."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if isinstance(project.get("description"), str):
        lines.append(f"Summary: {' '.join(str(project['description']).split())}")
    if isinstance(project.get("requires-python"), str):
        lines.append(f"Requires-Python: {project['requires-python']}")
    licence = project.get("license")
    if isinstance(licence, dict) and "text" in licence:
        lines.append(f"License: {licence['text']}")
    for classifier in project.get("classifiers", []) or []:
        lines.append(f"Classifier: {classifier}")
    dependencies = project.get("dependencies", [])
    if dependencies:
        raise ValueError("pyproject.toml: this backend builds a client without dependencies; [project] dependencies must be []")
    readme = project.get("readme")
    body = ""
    if isinstance(readme, str):
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: text/markdown" if readme.endswith(".md") else "Description-Content-Type: text/plain")
    return "\n".join(lines) + "\n\n" + body


def _wheel_text(root_is_purelib: bool = True) -> str:
    return f"Wheel-Version: 1.0\nGenerator: {GENERATOR}\nRoot-Is-Purelib: {'true' if root_is_purelib else 'false'}\nTag: {TAG}\n"


def _package_files() -> List[Tuple[str, str]]:
    """(path in the archive, path on disk) of every file of the package, sorted: its
    modules and ``py.typed``, never bytecode."""
    out: List[Tuple[str, str]] = []
    for directory, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith(".py") or name == "py.typed":
                disk = os.path.join(directory, name)
                out.append((os.path.relpath(disk, ROOT).replace(os.sep, "/"), disk))
    return sorted(out)


# -- archives ----------------------------------------------------------------------------


def _epoch() -> int:
    value = os.environ.get("SOURCE_DATE_EPOCH", "")
    return max(int(value), 315532800) if value.isdigit() else 315532800  # zip cannot go before 1980


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


class _Wheel:
    """A wheel being written: every file is hashed into RECORD as it is added."""

    def __init__(self, path: str, dist_info: str) -> None:
        self.dist_info = dist_info
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self._records: List[str] = []
        self._when = time.gmtime(_epoch())[:6]

    def add(self, name: str, data: bytes) -> None:
        if any(c in name for c in ',"\r\n') or name.startswith("/") or ".." in name.split("/"):
            raise ValueError(f"a wheel entry cannot be named {name!r}")  # RECORD is CSV: keep it unquoted
        info = zipfile.ZipInfo(name, date_time=self._when)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        self._records.append(f"{name},{_record_hash(data)},{len(data)}")

    def close(self) -> None:
        record = f"{self.dist_info}/RECORD"
        lines = self._records + [f"{record},,"]
        info = zipfile.ZipInfo(record, date_time=self._when)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, "\n".join(lines) + "\n")
        self._zip.close()


def _write_wheel(wheel_directory: str, extra: Optional[Tuple[str, bytes]] = None, editable: bool = False) -> str:
    project = read_project()
    name, version = _names(project)
    dist_info = f"{name}-{version}.dist-info"
    filename = f"{name}-{version}-{TAG}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    wheel = _Wheel(os.path.join(wheel_directory, filename), dist_info)
    try:
        if editable:
            assert extra is not None
            wheel.add(*extra)
        else:
            for arcname, disk in _package_files():
                with open(disk, "rb") as f:
                    wheel.add(arcname, f.read())
        wheel.add(f"{dist_info}/METADATA", metadata_text(project).encode("utf-8"))
        wheel.add(f"{dist_info}/WHEEL", _wheel_text().encode("utf-8"))
        wheel.add(f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode("utf-8"))
    finally:
        wheel.close()
    return filename


def _write_metadata(metadata_directory: str) -> str:
    project = read_project()
    name, version = _names(project)
    dist_info = f"{name}-{version}.dist-info"
    target = os.path.join(metadata_directory, dist_info)
    os.makedirs(target, exist_ok=True)
    for file, text in (("METADATA", metadata_text(project)), ("WHEEL", _wheel_text()), ("top_level.txt", f"{PACKAGE}\n")):
        with open(os.path.join(target, file), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    return dist_info


# -- PEP 517 / PEP 660 hooks -------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    return _write_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    return _write_metadata(metadata_directory)


def build_wheel(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    """``lethe_client-<version>-py3-none-any.whl``: the package, METADATA, WHEEL, RECORD."""
    return _write_wheel(wheel_directory)


def build_editable(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    """An editable wheel (``pip install -e``): a ``.pth`` file putting this checkout's
    clients/python on ``sys.path``, so ``import lethe`` reads the sources in place."""
    name, _ = _names(read_project())
    return _write_wheel(wheel_directory, extra=(f"__editable__.{name}.pth", (ROOT + "\n").encode("utf-8")), editable=True)


def build_sdist(sdist_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    """``lethe_client-<version>.tar.gz``: PKG-INFO, pyproject.toml, the README, this
    backend and the package — enough to build the wheel again, offline."""
    project = read_project()
    name, version = _names(project)
    top = f"{name}-{version}"
    filename = f"{top}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    members: List[Tuple[str, bytes]] = [("PKG-INFO", metadata_text(project).encode("utf-8"))]
    for relative in SDIST_EXTRA:
        with open(os.path.join(ROOT, relative), "rb") as f:
            members.append((relative, f.read()))
    for arcname, disk in _package_files():
        with open(disk, "rb") as f:
            members.append((arcname, f.read()))
    epoch = _epoch()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for relative, data in sorted(members):
            info = tarfile.TarInfo(f"{top}/{relative}")
            info.size = len(data)
            info.mtime = epoch
            info.mode = 0o644
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    with open(os.path.join(sdist_directory, filename), "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=epoch) as gz:
            gz.write(raw.getvalue())
    return filename
