"""Backups and certificate-signing keys against the real service."""

from __future__ import annotations

import unittest

from . import support
from .support import client

from lethe import ForbiddenError, NotFoundError, ValidationFailedError


def setUpModule() -> None:
    support.server()


class BackupTest(unittest.TestCase):
    def test_take_list_and_page(self) -> None:
        backup = client("backup")
        taken = [backup.take_backup(timeout=120) for _ in range(2)]
        self.assertTrue(all(t.backup_id.startswith("bak_") for t in taken))
        first = backup.backups(limit=1)
        self.assertEqual(len(first.items), 1)
        self.assertIsNotNone(first.next_cursor)
        listed = [b.backup_id for b in backup.iter_backups(page_size=1)]
        self.assertEqual([i for i in listed if i in {t.backup_id for t in taken}], [t.backup_id for t in taken])
        manifest = backup.backup_manifest(taken[0].backup_id)
        self.assertEqual(manifest.get("backupId"), taken[0].backup_id)
        with self.assertRaises(NotFoundError):
            backup.backup_manifest("bak_AAAAAAAAAAAAAAAAAAAAAA")
        with self.assertRaises(ValidationFailedError):
            backup.backups(limit=5000)
        with self.assertRaises(ForbiddenError):
            client("writer").backups()


class SigningKeyTest(unittest.TestCase):
    def test_keys_without_a_token_and_rotation(self) -> None:
        keys = client(None).certificate_keys()
        self.assertGreaterEqual(len(keys), 1)
        self.assertEqual((keys[0].state, keys[0].algorithm), ("current", "Ed25519"))
        self.assertTrue(keys[0].key_id.startswith("csk_"))
        with self.assertRaises(ForbiddenError):
            client("eraser").rotate_certificate_key()
        rotated = client("admin").rotate_certificate_key()
        self.assertEqual(rotated["retired"].key_id, keys[0].key_id)
        after = client(None).certificate_keys()
        self.assertEqual(after[0].key_id, rotated["current"].key_id)
        # the retired key stays listed: what it signed still verifies
        retired = {k.key_id: k.state for k in after}
        self.assertEqual(retired[keys[0].key_id], "retired")


if __name__ == "__main__":
    unittest.main()
