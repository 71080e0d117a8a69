#!/usr/bin/env python3
"""Runs the Python client's tests (unittest, standard library) and reports the counts.

    python3 clients/python/run_tests.py                 # every test module
    python3 clients/python/run_tests.py test_search     # some modules (names under tests/)
    python3 clients/python/run_tests.py --json-file r.json

The tests start a real ``lethe serve`` (``node dist/cli/main.js serve`` on the embedded
default) once, and stop it at the end — also on SIGTERM/SIGINT. They build nothing:
``dist/`` must exist (``npm test`` builds it first).

Prints test progress on stderr and, last on stdout, ``python: N passed, M failed``
(``--json``: the counts as one JSON object instead). ``--json-file`` also writes that
object to a file. Exits 0 only when every test passed and at least one ran.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import unittest
from typing import Any, Dict, List, Set

MIN_PYTHON = (3, 9)
HERE = os.path.dirname(os.path.abspath(__file__))


def counts(result: unittest.TestResult) -> Dict[str, Any]:
    failed_tests: Set[str] = set()
    other_failures: List[str] = []  # a setUpModule / setUpClass that failed: its tests never ran
    for test, _ in result.failures + result.errors:
        case = getattr(test, "test_case", test)  # a failed subTest counts as its test
        if isinstance(case, unittest.TestCase) and not type(case).__name__ == "_ErrorHolder":
            failed_tests.add(case.id())
        else:
            other_failures.append(str(test))
    failed = len(failed_tests) + len(other_failures) + len(result.unexpectedSuccesses)
    passed = result.testsRun - len(failed_tests) - len(result.skipped) - len(result.expectedFailures) - len(result.unexpectedSuccesses)
    notes = [f"not run: {name}" for name in other_failures]
    if result.testsRun == 0:
        failed = max(failed, 1)
        notes.append("no test ran")
    return {"passed": max(passed, 0), "failed": failed, "skipped": len(result.skipped), "notes": notes}


def write_report(report: Dict[str, Any], json_file: str | None) -> None:
    if json_file:
        with open(json_file, "w", encoding="utf-8") as f:
            json.dump(report, f)
            f.write("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description="the lethe Python client's tests")
    parser.add_argument("modules", nargs="*", help="test modules under tests/ (default: all)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON on stdout")
    parser.add_argument("--json-file", help="also write the counts as JSON to this file")
    parser.add_argument("-q", "--quiet", action="store_true", help="one character per test instead of one line")
    args = parser.parse_args()

    if sys.version_info < MIN_PYTHON:
        report: Dict[str, Any] = {"passed": 0, "failed": 1, "skipped": 0, "notes": [f"Python {'.'.join(map(str, MIN_PYTHON))} or newer is needed, this is {sys.version.split()[0]}"]}
        sys.stderr.write(f"lethe python tests: {report['notes'][0]}\n")
        write_report(report, args.json_file)
        print(json.dumps(report) if args.json else "python: 0 passed, 1 failed")
        return 1

    # SIGTERM ends the run like Ctrl-C: the finally below and atexit stop the service
    def terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, terminate)

    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if args.modules:
        names = [m if m.startswith("tests.") else f"tests.{m[:-3] if m.endswith('.py') else m}" for m in args.modules]
        suite = loader.loadTestsFromNames(names)
    else:
        suite = loader.discover(os.path.join(HERE, "tests"), pattern="test_*.py", top_level_dir=HERE)

    from tests import support

    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=1 if args.quiet else 2)
    interrupted = False
    try:
        result = runner.run(suite)
    except KeyboardInterrupt:
        interrupted = True
        result = unittest.TestResult()
    finally:
        support.stop_server()

    report = counts(result)
    if interrupted:
        report["failed"] += 1
        report["notes"].append("interrupted")
    for note in report["notes"]:
        sys.stderr.write(f"lethe python tests: {note}\n")
    write_report(report, args.json_file)
    print(json.dumps(report) if args.json else f"python: {report['passed']} passed, {report['failed']} failed")
    return 0 if report["failed"] == 0 and not interrupted else 1


if __name__ == "__main__":
    sys.exit(main())
