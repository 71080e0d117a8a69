ALTER TABLE "erasures" ADD COLUMN "successor_id" text;--> statement-breakpoint
ALTER TABLE "log_entries" ADD COLUMN "written_by" text;--> statement-breakpoint
ALTER TABLE "log_entries" ADD COLUMN "supersedes" text;--> statement-breakpoint
CREATE INDEX "log_entries_supersedes" ON "log_entries" USING btree ("supersedes") WHERE "log_entries"."supersedes" is not null;