CREATE TABLE "erasure_transitions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"erasure_id" text NOT NULL,
	"from_step" text,
	"to_step" text,
	"status" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"replica" text NOT NULL,
	"detail" text
);
--> statement-breakpoint
CREATE TABLE "erasures" (
	"erasure_id" text PRIMARY KEY NOT NULL,
	"subject_hash" "bytea" NOT NULL,
	"status" text NOT NULL,
	"class" text,
	"step" text,
	"legal_basis" text,
	"unlearning" jsonb,
	"seal_key_id" text,
	"sealed_request" "bytea",
	"sealed_fingerprints" "bytea",
	"state" jsonb NOT NULL,
	"certificate" jsonb,
	"certificate_state" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"not_before" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "erasure_transitions_erasure" ON "erasure_transitions" USING btree ("erasure_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "erasures_open_subject" ON "erasures" USING btree ("subject_hash") WHERE "erasures"."status" in ('pending', 'running');--> statement-breakpoint
CREATE INDEX "erasures_claimable" ON "erasures" USING btree ("not_before") WHERE "erasures"."status" in ('pending', 'running');--> statement-breakpoint
CREATE INDEX "erasures_subject" ON "erasures" USING btree ("subject_hash","created_at");--> statement-breakpoint
CREATE INDEX "erasures_provisional" ON "erasures" USING btree ("erasure_id") WHERE "erasures"."certificate_state" = 'provisional';