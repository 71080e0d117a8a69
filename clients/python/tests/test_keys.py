"""Keys and leases against the real service."""

from __future__ import annotations

import unittest

from . import support
from .support import TOKENS, client, unique

from lethe import ForbiddenError, Lease, NoTokenError, NotFoundError, UnauthorizedError, ValidationFailedError


def setUpModule() -> None:
    support.server()


class KeysTest(unittest.TestCase):
    def test_ensure_key_creates_then_returns_the_live_key(self) -> None:
        writer = client("writer")
        subject = unique("user:keys-")
        first = writer.ensure_key(subject)
        self.assertTrue(first.created)
        self.assertEqual((first.subject, first.state), (subject, "active"))
        again = writer.ensure_key(subject)
        self.assertFalse(again.created)
        self.assertEqual(again.key_id, first.key_id)

    def test_lease_and_release(self) -> None:
        writer = client("writer")
        subject = unique("user:lease-")
        lease = writer.lease(subject)
        self.assertIsInstance(lease, Lease)
        self.assertEqual(len(lease.dek), 32)
        self.assertTrue(lease.lease_id.startswith("lease_"))
        # the data key never shows in a repr
        self.assertNotIn(repr(lease.dek), repr(lease))
        self.assertNotIn("dek", repr(lease))
        writer.release_lease(subject, lease)
        writer.release_lease(subject, lease.lease_id)  # idempotent: 204 again
        # the same DEK is leased again (same key), as a new lease
        again = writer.lease(subject)
        self.assertEqual((again.key_id, again.dek), (lease.key_id, lease.dek))
        self.assertNotEqual(again.lease_id, lease.lease_id)
        writer.release_lease(subject, again)

    def test_release_of_a_lease_never_handed_out_is_not_found(self) -> None:
        writer = client("writer")
        subject = unique("user:lease-")
        mine = writer.lease(subject)
        other = unique("user:lease-")
        # a lease of another subject is not this subject's
        with self.assertRaises(NotFoundError):
            writer.release_lease(other, mine)
        with self.assertRaises(NotFoundError):
            writer.release_lease(subject, "lease_AAAAAAAAAAAAAAAAAAAAAA")
        with self.assertRaises(ValidationFailedError):
            writer.release_lease(subject, "not-a-lease-id")
        writer.release_lease(subject, mine)

    def test_leased_releases_at_the_end_of_the_block(self) -> None:
        writer = client("writer")
        subject = unique("user:lease-")
        with writer.leased(subject) as lease:
            self.assertEqual(len(lease.dek), 32)
            self.assertNotEqual(bytes(lease.dek), bytes(32))
        self.assertEqual(bytes(lease.dek), bytes(32))  # wiped
        # released: releasing again is the idempotent 204, not a 404
        writer.release_lease(subject, lease)

    def test_key_validity_needs_the_backup_role(self) -> None:
        writer = client("writer")
        subject = unique("user:validity-")
        key = writer.ensure_key(subject)
        states = client("backup").key_validity([key.key_id, "key_AAAAAAAAAAAAAAAAAAAAAA"])
        self.assertEqual(states, {key.key_id: "active", "key_AAAAAAAAAAAAAAAAAAAAAA": "unknown"})
        with self.assertRaises(ForbiddenError) as cm:
            writer.key_validity([key.key_id])
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))

    def test_bad_input_and_bad_tokens(self) -> None:
        with self.assertRaises(ValidationFailedError) as cm:
            client("writer").ensure_key("no spaces allowed")
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("subject", cm.exception.detail)
        # no token for the role: refused before any request
        with self.assertRaises(NoTokenError):
            client(None).lease(unique("user:"))
        with self.assertRaises(UnauthorizedError) as unauthorized:
            client(None)._http.call("POST", f"/v1/subjects/{unique('user:')}/key/lease")
        self.assertEqual((unauthorized.exception.status, unauthorized.exception.code), (401, "unauthorized"))
        wrong = support.LetheClient(support.server().url, token="not-a-known-token")
        with self.assertRaises(UnauthorizedError) as wrong_token:
            wrong.lease(unique("user:"))
        self.assertNotIn("not-a-known-token", str(wrong_token.exception) + repr(wrong_token.exception))
        # the eraser role may not lease
        with self.assertRaises(ForbiddenError):
            client("eraser").lease(unique("user:"))
        self.assertNotIn(TOKENS["eraser"], repr(client("eraser")))


if __name__ == "__main__":
    unittest.main()
