CREATE TABLE "ledger_chain" (
	"bucket" text NOT NULL,
	"seq" bigint NOT NULL,
	"body" text NOT NULL,
	"mac" "bytea" NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"stored_at" timestamp with time zone,
	CONSTRAINT "ledger_chain_bucket_seq_pk" PRIMARY KEY("bucket","seq")
);
--> statement-breakpoint
ALTER TABLE "artifact_keys" ADD COLUMN "purpose" text DEFAULT 'artifact-version' NOT NULL;--> statement-breakpoint
ALTER TABLE "audit_head" ADD COLUMN "head_mac" "bytea";--> statement-breakpoint
ALTER TABLE "destruction_ledger" ADD COLUMN "durable_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "epochs" ADD COLUMN "wrap_format" integer DEFAULT 2 NOT NULL;--> statement-breakpoint
ALTER TABLE "ledger_exports" ADD COLUMN "chain_seq" bigint;--> statement-breakpoint
-- epochs created before purposes were bound may hold keys wrapped under the older context
UPDATE "epochs" SET "wrap_format" = 1;--> statement-breakpoint
-- an erasure's own key is the artifact_keys row keyed by the erasure id
UPDATE "artifact_keys" SET "purpose" = 'erasure' WHERE "artifact_id" IN (SELECT "erasure_id" FROM "erasures");--> statement-breakpoint
-- every destruction goes into the ledger chain (the per-key copies before it are not authenticated)
DELETE FROM "ledger_exports";
