CREATE TABLE "backup_keys" (
	"key_id" text NOT NULL,
	"backup_id" text NOT NULL,
	CONSTRAINT "backup_keys_key_id_backup_id_pk" PRIMARY KEY("key_id","backup_id")
);
--> statement-breakpoint
CREATE TABLE "backup_propagations" (
	"key_id" text NOT NULL,
	"backup_id" text NOT NULL,
	"manifest_version" integer NOT NULL,
	"propagated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "backup_propagations_key_id_backup_id_pk" PRIMARY KEY("key_id","backup_id")
);
--> statement-breakpoint
CREATE TABLE "backups" (
	"backup_id" text PRIMARY KEY NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"manifest_version" integer NOT NULL,
	"objects" integer NOT NULL,
	"keys" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ledger_exports" (
	"bucket" text NOT NULL,
	"key_id" text NOT NULL,
	"exported_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ledger_exports_bucket_key_id_pk" PRIMARY KEY("bucket","key_id")
);
