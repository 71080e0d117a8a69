CREATE TABLE "index_shard_members" (
	"replica_id" text PRIMARY KEY NOT NULL,
	"shards" integer NOT NULL,
	"seen_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "index_shards" (
	"shard" integer PRIMARY KEY NOT NULL,
	"owner" text,
	"owner_url" text,
	"owner_url_mac" text,
	"fence" bigint DEFAULT 0 NOT NULL,
	"expires_at" timestamp with time zone,
	"state" text DEFAULT 'rebuilding' NOT NULL
);
