"""The README's five-line example, run as written against the real service (only the
URL and the tokens are swapped for the test service's)."""

from __future__ import annotations

import re
import unittest

from . import support
from .support import CLIENT_ROOT, TOKENS

from lethe import GoneError, SubjectErasedError


def setUpModule() -> None:
    support.server()


class ReadmeTest(unittest.TestCase):
    def test_the_five_lines_run(self) -> None:
        readme = (CLIENT_ROOT / "README.md").read_text("utf-8")
        section = readme.split("## Five lines", 1)[1]
        code = re.search(r"```python\n(.*?)```", section, re.S)
        assert code is not None
        source = code.group(1)
        self.assertEqual(len([line for line in source.splitlines() if line.strip() and not line.startswith("from ")]), 5)
        subject = support.unique("user:readme-")
        source = (
            source.replace("http://127.0.0.1:8787", support.server().url)
            .replace("dev-writer-token", TOKENS["writer"])
            .replace("dev-eraser-token", TOKENS["eraser"])
            .replace("user:42", subject)
        )
        scope: dict = {}
        exec(compile(source, "README.md", "exec"), scope)
        # what it did: found the memory in scope, forgot it, erased the person for good
        self.assertIn(scope["memory"].entry_id, [h.id for h in scope["hits"]])
        lethe = scope["lethe"]
        with self.assertRaises(GoneError):
            lethe.entry(scope["memory"].entry_id)
        with self.assertRaises(SubjectErasedError):
            lethe.append(subject, "learnt again?")
        # the example waited for the subject's erasure; the forget's runs on its own: wait for it too
        erasures = [lethe.wait_for_erasure(e.erasure_id, timeout=120) for e in lethe.iter_erasures(subject=subject)]
        self.assertEqual([(e.scope, e.status) for e in erasures], [("records", "completed"), ("subject", "completed")])


if __name__ == "__main__":
    unittest.main()
