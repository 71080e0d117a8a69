DROP TABLE "backup_propagations" CASCADE;--> statement-breakpoint
CREATE INDEX "backup_keys_backup" ON "backup_keys" USING btree ("backup_id");