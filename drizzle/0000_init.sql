CREATE TABLE "audit_head" (
	"id" integer PRIMARY KEY NOT NULL,
	"seq" bigint NOT NULL,
	"mac" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"key_id" text,
	"subject_hash" "bytea",
	"epoch" integer,
	"detail" text NOT NULL,
	"prev_mac" "bytea" NOT NULL,
	"mac" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "destruction_ledger" (
	"key_id" text PRIMARY KEY NOT NULL,
	"subject_hash" "bytea" NOT NULL,
	"destroyed_at" timestamp with time zone NOT NULL,
	"reason" text NOT NULL,
	"wrapped_epoch" integer NOT NULL,
	"leased_until" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "epochs" (
	"epoch" integer PRIMARY KEY NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"activated_at" timestamp with time zone,
	"retired_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "subject_keys" (
	"key_id" text PRIMARY KEY NOT NULL,
	"subject_hash" "bytea" NOT NULL,
	"state" text NOT NULL,
	"epoch" integer NOT NULL,
	"wrapped_dek" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "subject_keys" ADD CONSTRAINT "subject_keys_epoch_epochs_epoch_fk" FOREIGN KEY ("epoch") REFERENCES "public"."epochs"("epoch") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_log_key_at" ON "audit_log" USING btree ("key_id","at");--> statement-breakpoint
CREATE INDEX "destruction_ledger_subject_hash" ON "destruction_ledger" USING btree ("subject_hash","destroyed_at");--> statement-breakpoint
CREATE UNIQUE INDEX "epochs_one_active" ON "epochs" USING btree ("state") WHERE "epochs"."state" = 'active';--> statement-breakpoint
CREATE UNIQUE INDEX "subject_keys_subject_hash" ON "subject_keys" USING btree ("subject_hash");--> statement-breakpoint
CREATE INDEX "subject_keys_epoch_key" ON "subject_keys" USING btree ("epoch","key_id");