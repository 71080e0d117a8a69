CREATE TABLE "artifact_keys" (
	"key_id" text PRIMARY KEY NOT NULL,
	"artifact_id" text NOT NULL,
	"version" integer NOT NULL,
	"epoch" integer NOT NULL,
	"wrapped_dek" "bytea" NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "artifacts" (
	"artifact_id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"state" text NOT NULL,
	"version" integer NOT NULL,
	"height" integer NOT NULL,
	"key_id" text,
	"object" text,
	"generator" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "embeddings" (
	"record_id" text PRIMARY KEY NOT NULL,
	"record_type" text NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
	"sealed" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "provenance" (
	"artifact_id" text NOT NULL,
	"source_id" text NOT NULL,
	"source_type" text NOT NULL,
	CONSTRAINT "provenance_artifact_id_source_id_pk" PRIMARY KEY("artifact_id","source_id")
);
--> statement-breakpoint
CREATE TABLE "training_exposure_records" (
	"exposure_id" text NOT NULL,
	"record_id" text NOT NULL,
	"record_type" text NOT NULL,
	"version" integer,
	CONSTRAINT "training_exposure_records_exposure_id_record_id_pk" PRIMARY KEY("exposure_id","record_id")
);
--> statement-breakpoint
CREATE TABLE "training_exposure_subjects" (
	"subject_hash" "bytea" NOT NULL,
	"exposure_id" text NOT NULL,
	CONSTRAINT "training_exposure_subjects_subject_hash_exposure_id_pk" PRIMARY KEY("subject_hash","exposure_id")
);
--> statement-breakpoint
CREATE TABLE "training_exposures" (
	"exposure_id" text PRIMARY KEY NOT NULL,
	"corpus" text NOT NULL,
	"model" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "destruction_ledger" ALTER COLUMN "subject_hash" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "destruction_ledger" ADD COLUMN "key_kind" text DEFAULT 'subject' NOT NULL;--> statement-breakpoint
ALTER TABLE "artifact_keys" ADD CONSTRAINT "artifact_keys_epoch_epochs_epoch_fk" FOREIGN KEY ("epoch") REFERENCES "public"."epochs"("epoch") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "artifact_keys_epoch_key" ON "artifact_keys" USING btree ("epoch","key_id");--> statement-breakpoint
CREATE UNIQUE INDEX "artifact_keys_version" ON "artifact_keys" USING btree ("artifact_id","version");--> statement-breakpoint
CREATE INDEX "embeddings_key" ON "embeddings" USING btree ("key_id","record_id");--> statement-breakpoint
CREATE INDEX "provenance_source" ON "provenance" USING btree ("source_id","artifact_id");--> statement-breakpoint
CREATE INDEX "training_exposure_records_record" ON "training_exposure_records" USING btree ("record_id");