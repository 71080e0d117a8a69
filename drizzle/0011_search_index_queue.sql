CREATE TABLE "index_queue" (
	"entry_id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"enqueued_at" timestamp with time zone NOT NULL,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "log_entries" ADD COLUMN "refused" text;--> statement-breakpoint
ALTER TABLE "index_queue" ADD CONSTRAINT "index_queue_entry_id_log_entries_entry_id_fk" FOREIGN KEY ("entry_id") REFERENCES "public"."log_entries"("entry_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "index_queue_seq" ON "index_queue" USING btree ("seq");