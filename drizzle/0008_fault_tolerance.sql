CREATE TABLE "append_requests" (
	"subject_hash" "bytea" NOT NULL,
	"idempotency_key" text NOT NULL,
	"request_digest" "bytea" NOT NULL,
	"entry_id" text NOT NULL,
	"key_id" text NOT NULL,
	"seq" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "append_requests_subject_hash_idempotency_key_pk" PRIMARY KEY("subject_hash","idempotency_key")
);
--> statement-breakpoint
CREATE TABLE "replica_heartbeats" (
	"replica_id" text PRIMARY KEY NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"seen_at" timestamp with time zone NOT NULL,
	"applied_seq" bigint DEFAULT 0 NOT NULL,
	"listener" text NOT NULL,
	"index" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "destruction_ledger" ADD COLUMN "seq" bigserial NOT NULL;--> statement-breakpoint
CREATE INDEX "append_requests_created" ON "append_requests" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "destruction_ledger_seq" ON "destruction_ledger" USING btree ("seq");