CREATE TABLE "index_shards" (
	"shard" integer PRIMARY KEY NOT NULL,
	"owner" text,
	"owner_url" text,
	"fence" bigint DEFAULT 0 NOT NULL,
	"expires_at" timestamp with time zone,
	"state" text DEFAULT 'rebuilding' NOT NULL
);
