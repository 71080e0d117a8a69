CREATE TABLE "embedding_counts" (
	"shard" integer PRIMARY KEY NOT NULL,
	"records" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "destruction_ledger_pending" ON "destruction_ledger" USING btree ("destroyed_at","key_id") WHERE "destruction_ledger"."durable_at" is null;--> statement-breakpoint
CREATE INDEX "ledger_exports_chain_seq" ON "ledger_exports" USING btree ("bucket","chain_seq");--> statement-breakpoint
INSERT INTO "embedding_counts" ("shard", "records") SELECT g, CASE WHEN g = 0 THEN (SELECT count(*) FROM "embeddings" e WHERE NOT EXISTS (SELECT 1 FROM "destruction_ledger" d WHERE d."key_id" = e."key_id")) ELSE 0 END FROM generate_series(0, 15) g;--> statement-breakpoint
CREATE FUNCTION "embeddings_counted"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE delta bigint;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE "embedding_counts" SET "records" = 0 WHERE "records" <> 0;
    RETURN NULL;
  END IF;
  -- rows of a destroyed key do not count (each looked up by the ledger's primary key)
  SELECT count(*) INTO delta FROM counted_rows r WHERE (SELECT 1 FROM "destruction_ledger" d WHERE d."key_id" = r."key_id") IS NULL;
  IF TG_OP = 'DELETE' THEN delta := -delta; END IF;
  IF delta <> 0 THEN
    UPDATE "embedding_counts" SET "records" = "records" + delta WHERE "shard" = pg_backend_pid() % 16;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE FUNCTION "embeddings_uncounted"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE delta bigint;
BEGIN
  -- a key just destroyed: its rows still stored stop counting (by the embeddings_key index)
  SELECT count(*) INTO delta FROM "embeddings" e WHERE e."key_id" = any(array(SELECT k."key_id" FROM destroyed_keys k));
  IF delta <> 0 THEN
    UPDATE "embedding_counts" SET "records" = "records" - delta WHERE "shard" = pg_backend_pid() % 16;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "embeddings_counted_insert" AFTER INSERT ON "embeddings" REFERENCING NEW TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION "embeddings_counted"();--> statement-breakpoint
CREATE TRIGGER "embeddings_counted_delete" AFTER DELETE ON "embeddings" REFERENCING OLD TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION "embeddings_counted"();--> statement-breakpoint
CREATE TRIGGER "embeddings_counted_truncate" AFTER TRUNCATE ON "embeddings" FOR EACH STATEMENT EXECUTE FUNCTION "embeddings_counted"();--> statement-breakpoint
CREATE TRIGGER "destruction_ledger_uncounted" AFTER INSERT ON "destruction_ledger" REFERENCING NEW TABLE AS destroyed_keys FOR EACH STATEMENT EXECUTE FUNCTION "embeddings_uncounted"();
