CREATE TABLE "subject_tombstones" (
	"subject_hash" "bytea" PRIMARY KEY NOT NULL,
	"erasure_id" text NOT NULL,
	"erased_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
DROP INDEX "erasures_open_subject";--> statement-breakpoint
ALTER TABLE "erasures" ADD COLUMN "scope" text DEFAULT 'subject' NOT NULL;--> statement-breakpoint
ALTER TABLE "erasures" ADD COLUMN "entry_ids" jsonb;--> statement-breakpoint
ALTER TABLE "log_entries" ADD COLUMN "wrapped_key" "bytea";--> statement-breakpoint
ALTER TABLE "log_entries" ADD COLUMN "forgotten_by" text;--> statement-breakpoint
CREATE INDEX "artifacts_created" ON "artifacts" USING btree ("created_at","artifact_id");--> statement-breakpoint
CREATE INDEX "backups_created" ON "backups" USING btree ("created_at","backup_id");--> statement-breakpoint
CREATE INDEX "erasures_created" ON "erasures" USING btree ("created_at","erasure_id");--> statement-breakpoint
CREATE UNIQUE INDEX "erasures_open_subject" ON "erasures" USING btree ("subject_hash") WHERE "erasures"."status" in ('pending', 'running') and "erasures"."scope" = 'subject';