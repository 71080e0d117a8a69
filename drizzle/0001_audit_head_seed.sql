-- The audit chain's tip starts at seq 0 with an all-zero MAC. Seeding it here (not at
-- the first append) means concurrent first appends serialize on this row's lock.
INSERT INTO "audit_head" ("id", "seq", "mac") VALUES (1, 0, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea) ON CONFLICT DO NOTHING;
