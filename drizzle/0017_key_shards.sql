DROP INDEX "subject_keys_subject_hash";--> statement-breakpoint
ALTER TABLE "subject_keys" ADD COLUMN "head" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "subject_keys" ADD COLUMN "base_seq" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "subject_keys_subject_head" ON "subject_keys" USING btree ("subject_hash") WHERE "subject_keys"."head";--> statement-breakpoint
CREATE INDEX "subject_keys_subject_hash" ON "subject_keys" USING btree ("subject_hash");