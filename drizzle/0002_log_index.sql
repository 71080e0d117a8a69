CREATE TABLE "log_entries" (
	"entry_id" text PRIMARY KEY NOT NULL,
	"subject_hash" "bytea" NOT NULL,
	"key_id" text NOT NULL,
	"seq" integer NOT NULL,
	"segment" text NOT NULL,
	"frame_offset" integer NOT NULL,
	"frame_length" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "subject_keys" ADD COLUMN "next_seq" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "log_entries_key_seq" ON "log_entries" USING btree ("key_id","seq");--> statement-breakpoint
CREATE INDEX "log_entries_subject" ON "log_entries" USING btree ("subject_hash");