ALTER TABLE "log_entries" ADD COLUMN "item_hash" "bytea";--> statement-breakpoint
ALTER TABLE "log_entries" ADD COLUMN "namespace_hash" "bytea";--> statement-breakpoint
CREATE INDEX "log_entries_item" ON "log_entries" USING btree ("subject_hash","item_hash") WHERE "log_entries"."item_hash" is not null;--> statement-breakpoint
CREATE INDEX "log_entries_namespace" ON "log_entries" USING btree ("namespace_hash","seq") WHERE "log_entries"."namespace_hash" is not null;