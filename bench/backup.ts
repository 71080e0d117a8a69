/**
 * Backups against a real MinIO, in one run: backup throughput against a plain copy of
 * the same objects, and how long a key's destruction takes to reach the backups holding
 * it (through the backup bucket's ledger chain: manifests are written once, never
 * rewritten) and how many bytes it writes to the backup bucket, for a key held by 1
 * backup and by BENCH_BACKUP_HOLDERS backups (default 1,000, also with BENCH_FULL=1; 50
 * when quick). Aim (issue 18): propagate ms, the key in H backups ÷ in 1 <= 2.
 *
 *   setup       a MinIO server started here (infra/minio-server.ts), a fresh lethe_bench_*
 *               database, the vault opened in this process with openApp on fresh live
 *               and backup buckets (S3_BUCKET, S3_BACKUP_BUCKET) and `listen: false`: no
 *               replica listener and no periodic propagation catch-up. Filled through the
 *               vault's own paths: BENCH_BACKUP_SUBJECTS subjects (default 40; 200 with
 *               BENCH_FULL=1; 20 when quick) x BENCH_BACKUP_ENTRIES entries each (default
 *               20; 25 with BENCH_FULL=1; 10 when quick) of
 *               512 B of random printable text through vault.log.append (one segment
 *               object per entry, as the HTTP append writes them), 16 in flight; then
 *               BENCH_BACKUP_ARTIFACTS artifacts (default 40; 100 with BENCH_FULL=1; 20 when quick) of 2 KiB
 *               through vault.artifacts.write, each citing 5 entries, 8 in flight.
 *   1. copy     baseline: a plain copy of the same objects (log/ and artifacts/ of the live
 *               bucket) into a fresh versioned bucket with the minio client — listing, then
 *               getObject + putObject one object at a time, as the backup job copies.
 *               Unmeasured warm-up: the first 50 objects copied the same way into another
 *               fresh bucket. Measured twice, into two fresh buckets: before the full backup
 *               and right after it (A-B-A, since the machine may be shared); the baseline is
 *               the mean of the two times.
 *   2. full     vault.backups.run(), the first backup (every object copied). Its phases are
 *               timed through onProgress: objects (get, sha256, head, put, key ids from the
 *               envelope headers), key table + database export + ledger copy, key states +
 *               manifest, then the index rows and its own propagation. Figure: objects/s and
 *               MB/s of live object bytes over the whole run, ÷ the plain copy's.
 *   3. incremental  vault.backups.run() again with nothing new: every object is read and
 *               hashed, none copied.
 *   4. propagation  holders: the first two backups, then H − 3 more, then a third taken after
 *               BENCH_BACKUP_SINGLE subjects (default 5; 3 when quick) of 10 entries each were
 *               written. Each original subject key is then held by exactly H backups; each
 *               of the late subjects' keys by exactly 1 (the last). The H − 3 extra backups
 *               are real vault.backups.run() calls when (H − 3) x the incremental run's time
 *               fits in BENCH_BACKUP_REAL_LIMIT_SECONDS (default 180); otherwise synthetic:
 *               the first backup's manifest copied to H − 3 new backup ids (its backupId
 *               changed, MAC'd again) under backups/<id>/manifest.json in the backup bucket,
 *               and its `backups` and `backup_keys` rows copied to the new ids in SQL (the key
 *               table and database export are not copied: neither propagation nor the folded
 *               manifest reads them); the last backup's run records their manifests in the
 *               ledger chain, as each real run records its own.
 *               BENCH_BACKUP_EXTRAS=real|synthetic forces either.
 *   5. propagation  each late subject's key, and one original subject key, is destroyed
 *               with vault.keys.destroyKey. destroyKey's onDestroyed hook calls
 *               backups.propagateSoon([keyId]) itself, which starts propagate({ keyIds:
 *               [keyId] }) in the background — a second, explicit propagate would race it.
 *               So the hook's call is what is timed: propagateSoon is replaced on this
 *               vault's BackupService instance by the same call (`propagate(keyIds ? { keyIds }
 *               : {})`, errors logged) that also records when that promise settles. Figures
 *               per destruction: propagate ms from its start until it returns, and from
 *               destroyKey's call until then; and the bytes and objects written to the
 *               backup bucket: every object version in it (delete markers left out) listed
 *               with the minio client (a version listing, paged here: see bucketVersions)
 *               before destroyKey and after the propagation settled, the new versions
 *               counted and their sizes summed. Checked each time: propagate reports 1
 *               destruction and exactly the holders as backups; the new versions are
 *               exactly one ledger/chain/<seq>.json record and one ledger/head.json version
 *               (no manifest version: every backup's manifest still has exactly one); in
 *               PostgreSQL no backups.manifest_version changed; the folded manifest
 *               (vault.backups.manifest) of the holders (all of them for the 1-backup key,
 *               10 of them for the H-backup key) marks the key destroyed, overlay.destroyed
 *               >= 1 over base version 1. Figures: the medians per group, propagate ms and
 *               bytes written, H ÷ 1 for each.
 *
 * Everything runs in this one process except MinIO and PostgreSQL, on the same machine.
 * 1 MB = 10^6 bytes.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from 'minio';
import postgres from 'postgres';
import type { Manifest } from '../src/backups/manifest.js';
import { manifestKey, sealManifest } from '../src/backups/manifest.js';
import { LEDGER_CHAIN_PREFIX, LEDGER_HEAD_KEY } from '../src/backups/ledger-chain.js';
import { deriveSubkey, KeyedHasher } from '../src/crypto/index.js';
import type { BackupProgress, BackupSummary } from '../src/backups/service.js';
import { loadConfig } from '../src/config/index.js';
import { createLogger, describeError } from '../src/observability/logger.js';
import { newId } from '../src/ids.js';
import { openApp, type App } from '../src/app/open.js';
import { byMode, envInt, QUICK } from './support/mode.js';
import { cleanup, openScratch, randomRootKey, type Scratch } from './support/scratch.js';
import { cpuSeconds, pool, runIfMain } from './support/process.js';
import { listObjects, minioClient } from './support/minio.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, fmtSeconds, formatAims, median, progress, table } from './support/report.js';

// ------------------------------------------------------------------ result types

export interface CopyPhase {
  readonly label: string;
  readonly objects: number;
  /** Live object bytes (what both the copy and the backup move). */
  readonly bytes: number;
  readonly seconds: number;
  readonly objectsPerSec: number;
  readonly mbPerSec: number;
  /** user + system CPU of this process during the phase. */
  readonly cpuSeconds: number;
}

export interface BackupRunPhase extends CopyPhase {
  readonly backupId: string;
  readonly copied: number;
  readonly reused: number;
  /** Seconds per phase of the run (from onProgress). */
  readonly breakdown: {
    readonly objects: number;
    readonly keyTableDatabaseLedger: number;
    readonly manifest: number;
    readonly indexAndPropagate: number;
  };
  /** Objects phase alone: objects/s. */
  readonly objectsPhasePerSec: number;
}

/** What one destruction's propagation added to the backup bucket: stored object versions, by kind. */
export interface BucketWrites {
  /** New object versions (any object, any prefix) and the sum of their sizes. */
  readonly objects: number;
  readonly bytes: number;
  /** Of those: ledger/chain/<seq>.json records, ledger/head.json versions, backups/<id>/manifest.json versions, anything else. */
  readonly chainRecords: number;
  readonly heads: number;
  readonly manifests: number;
  readonly other: number;
}

export interface PropagationSample {
  readonly keyId: string;
  readonly holders: number;
  /** What propagate returned: chain records written, destructions they hold, backups holding those keys. */
  readonly reported: { readonly records: number; readonly keys: number; readonly backups: number };
  /** propagate({ keyIds: [keyId] }) started by the onDestroyed hook, until it returned. */
  readonly propagateMs: number;
  /** From the destroyKey call until that propagate returned. */
  readonly destroyToDoneMs: number;
  /** destroyKey's own call (its transaction; the hook fires before it returns). */
  readonly destroyMs: number;
  readonly msPerBackup: number;
  /** The backup bucket's object versions after the propagation settled, less those before the destruction. */
  readonly written: BucketWrites;
  /** No manifest version added; every backup's manifest still has exactly one stored version. */
  readonly manifestsWrittenOnce: boolean;
  /** Exactly one chain record and one head version were added, nothing else. */
  readonly ledgerOnly: boolean;
  /** backups.manifest_version unchanged for every backup. */
  readonly databaseVersionsOk: boolean;
  /** Folded manifests (vault.backups.manifest) checked: all holders for 1 backup, 10 for H. */
  readonly manifestsChecked: number;
  /** Each checked folded manifest marks the key destroyed, with overlay.destroyed >= 1 over base version 1. */
  readonly manifestsMarkDestroyed: boolean;
  readonly ok: boolean;
}

export interface PropagationFigure {
  readonly holders: number;
  readonly samples: PropagationSample[];
  readonly medianPropagateMs: number;
  readonly medianDestroyToDoneMs: number;
  readonly msPerBackup: number;
  /** Bytes and object versions written to the backup bucket per destruction (median over the samples). */
  readonly medianBytesWritten: number;
  readonly medianObjectsWritten: number;
}

export interface BackupResult {
  readonly subjects: number;
  readonly entriesPerSubject: number;
  readonly entryBytes: number;
  readonly artifacts: number;
  readonly fill: { readonly entries: number; readonly seconds: number; readonly entriesPerSec: number; readonly artifactsSeconds: number };
  readonly live: { readonly objects: number; readonly bytes: number; readonly logObjects: number; readonly artifactObjects: number };
  /** The plain copy's mean time over its two runs (before and after the full backup). */
  readonly baseline: CopyPhase;
  readonly copies: { readonly before: CopyPhase; readonly after: CopyPhase };
  readonly full: BackupRunPhase;
  readonly incremental: BackupRunPhase;
  /** Full backup objects/s ÷ plain copy objects/s (the same objects, so also the MB/s ratio). */
  readonly ratio: number;
  /** The backup's objects phase alone ÷ the plain copy. */
  readonly objectsPhaseRatio: number;
  /** Bytes the first backup wrote besides the objects. */
  readonly backupExtras: { readonly manifestBytes: number; readonly keyTableBytes: number; readonly databaseBytes: number };
  readonly propagation: {
    readonly holders: number;
    readonly extras: 'real' | 'synthetic';
    /** How the H − 3 extra backups were made, and how long it took. */
    readonly extraBackups: number;
    readonly extrasSeconds: number;
    /** (H − 3) x the incremental run, the estimate the choice was made on. */
    readonly projectedRealSeconds: number;
    readonly realLimitSeconds: number;
    /** Size of a holder's manifest (written once with its backup; a propagation writes none). */
    readonly manifestBytes: number;
    readonly one: PropagationFigure;
    readonly many: PropagationFigure;
    /** many.medianPropagateMs ÷ one.medianPropagateMs. */
    readonly ratio: number;
    /** Bytes written to the backup bucket per destruction, key in 1 backup and in H (medians), and many ÷ one. */
    readonly bytesWritten: { readonly one: number; readonly many: number; readonly ratio: number };
  };
  /** Propagation H ÷ 1 backup, aim <= 2 (issue 18: the cost should not follow the holders one by one). */
  readonly aims: Aim[];
  readonly valid: boolean;
  readonly warnings: string[];
}

// ------------------------------------------------------------------ helpers

const ENTRY_BYTES = 512;
const ARTIFACT_BYTES = 2048;
const BACKED_UP = ['log/', 'artifacts/'] as const;
// printable ASCII
const CHARSET = Buffer.from(Array.from({ length: 0x7f - 0x20 }, (_, i) => 0x20 + i));

function randomText(bytes: number): string {
  const raw = randomBytes(bytes);
  for (let i = 0; i < raw.length; i++) raw[i] = CHARSET[raw[i]! % CHARSET.length]!;
  return raw.toString('latin1');
}

interface StoredVersion {
  readonly name: string;
  readonly versionId: string;
  readonly size: number;
}

/**
 * Every stored version (delete markers left out) of every object in the bucket, keyed
 * by name and version id. Paged here with the client's own listObjectsQuery, since
 * minio-js 8's listObjects sends a paginated version listing's key-marker unescaped and
 * MinIO refuses the signature of a key-marker holding "/" (SignatureDoesNotMatch): the
 * marker MinIO answers (URL-encoded, encoding-type=url) is decoded and escaped again.
 */
async function bucketVersions(client: Client, bucket: string): Promise<Map<string, StoredVersion>> {
  const out = new Map<string, StoredVersion>();
  let keyMarker = '';
  let versionIdMarker = '';
  for (;;) {
    const page = await client.listObjectsQuery(bucket, '', '', {
      Delimiter: '',
      MaxKeys: 1000,
      IncludeVersion: true,
      keyMarker: keyMarker ? encodeURIComponent(decodeURIComponent(keyMarker)) : '',
      versionIdMarker,
    });
    for (const v of page.objects) {
      const o = v as { name?: string; versionId?: string | null; size?: number; isDeleteMarker?: boolean };
      if (!o.name || o.isDeleteMarker) continue;
      const versionId = o.versionId ?? 'null';
      out.set(`${o.name}\0${versionId}`, { name: o.name, versionId, size: o.size ?? 0 });
    }
    if (!page.isTruncated) return out;
    if (!page.keyMarker) throw new Error(`listing the versions in ${bucket}: a truncated page without a next key marker`);
    keyMarker = page.keyMarker;
    versionIdMarker = page.versionIdMarker ?? '';
  }
}

/** The versions in `after` that are not in `before`. */
function newVersions(before: ReadonlyMap<string, StoredVersion>, after: ReadonlyMap<string, StoredVersion>): StoredVersion[] {
  return [...after].filter(([k]) => !before.has(k)).map(([, v]) => v);
}

async function getBytes(client: Client, bucket: string, name: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of await client.getObject(bucket, name)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function copyPhase(label: string, objects: number, bytes: number, seconds: number, cpu: number): CopyPhase {
  return { label, objects, bytes, seconds, objectsPerSec: objects / seconds, mbPerSec: bytes / seconds / 1e6, cpuSeconds: cpu };
}

async function timedBackup(vault: App, label: string, liveBytes: number): Promise<BackupRunPhase> {
  const marks: Partial<Record<BackupProgress['phase'], number>> = {};
  let last: BackupProgress | undefined;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const summary: BackupSummary = await vault.backups.run({
    onProgress: (p) => {
      marks[p.phase] = performance.now();
      last = p;
    },
  });
  const t1 = performance.now();
  const cpu = cpuSeconds(cpu0);
  const seconds = (t1 - t0) / 1000;
  // the run's order (src/backups/run.ts): key table, database export and ledger ('keys'), then every object ('objects', the last mark), then the manifest
  const tKeys = marks.keys ?? t0;
  const tObjects = marks.objects ?? tKeys;
  const tManifest = marks.manifest ?? tObjects;
  const base = copyPhase(label, summary.objects, liveBytes, seconds, cpu);
  return {
    ...base,
    backupId: summary.backupId,
    copied: last?.copied ?? 0,
    reused: last?.reused ?? 0,
    breakdown: {
      objects: (tObjects - tKeys) / 1000,
      keyTableDatabaseLedger: (tKeys - t0) / 1000,
      manifest: (tManifest - tObjects) / 1000,
      indexAndPropagate: (t1 - tManifest) / 1000,
    },
    objectsPhasePerSec: summary.objects / ((tObjects - tKeys) / 1000),
  };
}

// ------------------------------------------------------------------ the benchmark

export async function runBackup(): Promise<BackupResult> {
  const subjects = envInt('BENCH_BACKUP_SUBJECTS', byMode({ quick: 20, normal: 40, full: 200 }), 2);
  const perSubject = envInt('BENCH_BACKUP_ENTRIES', byMode({ quick: 10, normal: 20, full: 25 }), 1);
  const nArtifacts = envInt('BENCH_BACKUP_ARTIFACTS', byMode({ quick: 20, normal: 40, full: 100 }), 1);
  const holders = envInt('BENCH_BACKUP_HOLDERS', byMode({ quick: 50, normal: 1000, full: 1000 }), 4);
  const singles = envInt('BENCH_BACKUP_SINGLE', QUICK ? 3 : 5, 1);
  const realLimitSeconds = envInt('BENCH_BACKUP_REAL_LIMIT_SECONDS', 180, 0);
  const extrasMode = process.env.BENCH_BACKUP_EXTRAS ?? 'auto';
  if (!['auto', 'real', 'synthetic'].includes(extrasMode)) throw new Error('BENCH_BACKUP_EXTRAS must be auto, real or synthetic');
  const tag = randomBytes(4).toString('hex');
  const bucket = `lethe-bench-live-${tag}`;
  const backupBucket = `lethe-bench-bak-${tag}`;
  const copyBucket = `lethe-bench-copy-${tag}`;
  const warnings: string[] = [];

  let scratch: Scratch | undefined;
  let vault: App | undefined;
  let ledgerMac: KeyedHasher | undefined;
  let sql: postgres.Sql | undefined;
  try {
    scratch = await openScratch('backup', { minio: true });
    const { db, dataDir } = scratch;
    const minio = scratch.minio!;
    const logger = createLogger('warn', process.stderr);
    const rootKey = randomRootKey();
    // the synthetic backups' manifests are MAC'd as lethe's own are (propagation refuses to write over any other)
    ledgerMac = new KeyedHasher(deriveSubkey(Buffer.from(rootKey, 'base64'), 'ledger-chain'));
    vault = await openApp(
      loadConfig({
        DATABASE_URL: db.url,
        LETHE_DATA_DIR: dataDir,
        LETHE_ROOT_KEY: rootKey,
        LETHE_LOG_LEVEL: 'warn',
        ...scratch.s3,
        S3_BUCKET: bucket,
        S3_BACKUP_BUCKET: backupBucket,
      }),
      // listen false: no replica listener, no start-up or periodic propagation catch-up
      { logger, listen: false },
    );
    const v = vault;
    sql = postgres(db.url, { max: 2, onnotice: () => {} });
    const q = sql;
    const client = minioClient(minio);

    // ------------------------------------------------------------ fill
    const entries = subjects * perSubject;
    progress(`backup: appending ${fmtInt(subjects)} subjects x ${perSubject} entries x ${ENTRY_BYTES} B through vault.log.append, 16 in flight`);
    const subjectName = (i: number) => `bench-backup-subject-${String(i).padStart(5, '0')}`;
    const subjectKeys = new Array<string>(subjects);
    const entryIds = new Array<string>(entries);
    const f0 = performance.now();
    await pool(entries, 16, async (i) => {
      const s = i % subjects;
      const r = await v.log.append(subjectName(s), { text: randomText(ENTRY_BYTES) }, 'bench');
      subjectKeys[s] = r.keyId;
      entryIds[i] = r.entryId;
    });
    const fillSeconds = (performance.now() - f0) / 1000;
    progress(`backup: ${fmtInt(entries)} entries in ${fmtSeconds(fillSeconds)}; writing ${nArtifacts} artifacts of ${ARTIFACT_BYTES} B, 8 in flight`);
    const a0 = performance.now();
    await pool(nArtifacts, 8, async (i) => {
      const sources = Array.from({ length: 5 }, (_, k) => entryIds[(i * 37 + k * 101) % entries]!);
      await v.artifacts.write({ kind: 'summary', text: randomText(ARTIFACT_BYTES), sources }, 'bench');
    });
    const artifactsSeconds = (performance.now() - a0) / 1000;

    const liveObjects = (await Promise.all(BACKED_UP.map((p) => listObjects(client, bucket, p))))
      .flat()
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const liveBytes = liveObjects.reduce((n, o) => n + o.size, 0);
    const logObjects = liveObjects.filter((o) => o.name.startsWith('log/')).length;
    const artifactObjects = liveObjects.length - logObjects;
    if (logObjects !== entries) warnings.push(`${logObjects} segment objects under log/, expected ${entries} (one per append)`);
    if (artifactObjects !== nArtifacts) warnings.push(`${artifactObjects} objects under artifacts/, expected ${nArtifacts}`);

    // ------------------------------------------------------------ 1. plain copy
    progress(`backup: plain copy of ${fmtInt(liveObjects.length)} objects (${fmtNum(liveBytes / 1e6, 2)} MB) with the minio client, one at a time`);
    for (const b of [copyBucket, `${copyBucket}-warm`]) {
      await client.makeBucket(b, 'us-east-1');
      await client.setBucketVersioning(b, { Status: 'Enabled' });
    }
    for (const o of liveObjects.slice(0, 50)) {
      const bytes = await getBytes(client, bucket, o.name);
      await client.putObject(`${copyBucket}-warm`, o.name, bytes, bytes.length);
    }
    const plainCopy = async (target: string, label: string): Promise<CopyPhase> => {
      const c0cpu = process.cpuUsage();
      const c0 = performance.now();
      let copiedBytes = 0;
      let copiedObjects = 0;
      for (const p of BACKED_UP) {
        // the listing is part of the job, as in the backup
        for (const o of await listObjects(client, bucket, p)) {
          const bytes = await getBytes(client, bucket, o.name);
          await client.putObject(target, o.name, bytes, bytes.length);
          copiedBytes += bytes.length;
          copiedObjects++;
        }
      }
      if (copiedObjects !== liveObjects.length) warnings.push(`plain copy moved ${copiedObjects} objects, the live bucket holds ${liveObjects.length}`);
      return copyPhase(label, copiedObjects, copiedBytes, (performance.now() - c0) / 1000, cpuSeconds(c0cpu));
    };
    const copyBefore = await plainCopy(copyBucket, 'plain copy before the full backup: list, getObject + putObject (minio client)');

    // ------------------------------------------------------------ 2. full backup
    progress('backup: vault.backups.run(), first (full) backup');
    const full = await timedBackup(v, 'vault.backups.run(), first (full)', liveBytes);
    if (full.objects !== liveObjects.length) warnings.push(`the full backup holds ${full.objects} objects, the live bucket ${liveObjects.length}`);
    if (full.copied + full.reused !== full.objects) warnings.push(`full backup: copied ${full.copied} + reused ${full.reused} != ${full.objects} objects`);
    const b1 = full.backupId;
    const b1ManifestBytes = await getBytes(client, backupBucket, manifestKey(b1));
    const b1Manifest = JSON.parse(b1ManifestBytes.toString('utf8')) as Manifest;
    const backupExtras = {
      manifestBytes: b1ManifestBytes.length,
      keyTableBytes: (await client.statObject(backupBucket, b1Manifest.keyTable.key)).size,
      databaseBytes: (await client.statObject(backupBucket, b1Manifest.database.key)).size,
    };
    progress('backup: plain copy again, after the full backup');
    await client.makeBucket(`${copyBucket}-2`, 'us-east-1');
    await client.setBucketVersioning(`${copyBucket}-2`, { Status: 'Enabled' });
    const copyAfter = await plainCopy(`${copyBucket}-2`, 'plain copy after the full backup: the same');
    const meanCopySeconds = (copyBefore.seconds + copyAfter.seconds) / 2;
    const baseline = copyPhase(
      'plain copy, mean of the two (baseline)',
      copyBefore.objects,
      copyBefore.bytes,
      meanCopySeconds,
      (copyBefore.cpuSeconds + copyAfter.cpuSeconds) / 2,
    );
    progress(
      `backup: full ${fmtSeconds(full.seconds)} (${fmtNum(full.objectsPerSec, 0)} objects/s, ${fmtNum(full.mbPerSec, 2)} MB/s) vs plain copy ` +
        `${fmtSeconds(copyBefore.seconds)} before, ${fmtSeconds(copyAfter.seconds)} after (mean ${fmtNum(baseline.objectsPerSec, 0)} objects/s); ` +
        `manifest ${fmtNum(backupExtras.manifestBytes / 1e6, 2)} MB, database export ${fmtNum(backupExtras.databaseBytes / 1e6, 2)} MB`,
    );

    // ------------------------------------------------------------ 3. incremental
    progress('backup: vault.backups.run() again, nothing new (incremental)');
    const incremental = await timedBackup(v, 'vault.backups.run(), second (nothing new)', liveBytes);
    if (incremental.copied !== 0) warnings.push(`the incremental backup copied ${incremental.copied} objects, expected none`);

    // ------------------------------------------------------------ 4. holders
    const extraCount = holders - 3;
    const projectedRealSeconds = extraCount * incremental.seconds;
    const extras: 'real' | 'synthetic' = extrasMode === 'real' || (extrasMode === 'auto' && projectedRealSeconds <= realLimitSeconds) ? 'real' : 'synthetic';
    progress(
      `backup: ${fmtInt(extraCount)} more backups holding every original key: ${extras} ` +
        `(${fmtInt(extraCount)} real runs would take ~${fmtSeconds(projectedRealSeconds)}; limit ${realLimitSeconds} s)`,
    );
    const e0 = performance.now();
    if (extras === 'real') {
      for (let i = 0; i < extraCount; i++) await v.backups.run();
    } else {
      const ids = Array.from({ length: extraCount }, () => newId('bak'));
      // the manifests first, so no index row names a backup without one
      await pool(ids.length, 4, async (i) => {
        const m: Manifest = sealManifest(ledgerMac!, { ...b1Manifest, backupId: ids[i]! });
        await v.backups.store.put(manifestKey(ids[i]!), Buffer.from(JSON.stringify(m)));
      });
      // chained_version left at 0: the last backup's run records these manifests in the ledger chain, as each real run records its own
      await q.begin(async (tx) => {
        await tx`insert into backups (backup_id, created_at, manifest_version, objects, keys)
                 select s.id, b.created_at, b.manifest_version, b.objects, b.keys
                   from backups b cross join unnest(${ids}::text[]) as s(id) where b.backup_id = ${b1}`;
        await tx`insert into backup_keys (key_id, backup_id)
                 select bk.key_id, s.id from backup_keys bk cross join unnest(${ids}::text[]) as s(id) where bk.backup_id = ${b1}`;
      });
      await q`analyze backups, backup_keys`;
    }
    const extrasSeconds = (performance.now() - e0) / 1000;

    // late subjects: held only by the last backup
    const singleKeys: string[] = [];
    for (let s = 0; s < singles; s++) {
      let keyId = '';
      for (let k = 0; k < 10; k++) keyId = (await v.log.append(`bench-backup-late-${s}`, { text: randomText(ENTRY_BYTES) }, 'bench')).keyId;
      singleKeys.push(keyId);
    }
    progress('backup: the last holder backup (after the late subjects)');
    const last = await v.backups.run();
    const lastManifestBytes = (await client.statObject(backupBucket, manifestKey(last.backupId))).size;
    const manyKeys = [subjectKeys[0]!];

    const holderCount = async (keyId: string) => Number((await q`select count(*)::int as n from backup_keys where key_id = ${keyId}`)[0]!.n);
    for (const k of singleKeys) {
      const n = await holderCount(k);
      if (n !== 1) warnings.push(`late key ${k} is held by ${n} backups, expected 1`);
    }
    for (const k of manyKeys) {
      const n = await holderCount(k);
      if (n !== holders) warnings.push(`key ${k} is held by ${n} backups, expected ${holders}`);
    }

    // the last run flushed the chain (its own manifest and the synthetic ones recorded): nothing left for a destruction's record to carry
    const unchained = Number((await q`select count(*)::int as n from backups where manifest_version > chained_version`)[0]!.n);
    if (unchained !== 0) warnings.push(`${unchained} backups' manifest versions are not in the ledger chain before the destructions`);

    // ------------------------------------------------------------ 5. propagation
    // the hook's own call, instrumented: the same propagate call propagateSoon makes
    type Reported = { records: number; keys: number; backups: number };
    const hookCalls: Array<{ keyIds: readonly string[] | undefined; started: number; done: Promise<{ result: Reported; ended: number }> }> = [];
    const backups = v.backups;
    backups.propagateSoon = (keyIds?: readonly string[]) => {
      const started = performance.now();
      const p = backups.propagate(keyIds ? { keyIds } : {});
      hookCalls.push({ keyIds, started, done: p.then((result) => ({ result, ended: performance.now() })) });
      p.catch((e: unknown) => logger.warn({ err: describeError(e) }, 'backup ledger propagation failed'));
    };

    const isManifest = (name: string) => name.startsWith('backups/') && name.endsWith('/manifest.json');
    const measure = async (keyId: string): Promise<PropagationSample> => {
      const holderIds = (await q`select backup_id from backup_keys where key_id = ${keyId}`).map((r) => String(r.backup_id));
      const dbBefore = new Map((await q`select backup_id, manifest_version from backups`).map((r) => [String(r.backup_id), Number(r.manifest_version)]));
      const before = await bucketVersions(client, backupBucket);
      hookCalls.length = 0;
      const d0 = performance.now();
      await v.keys.destroyKey(keyId, { reason: 'bench: backup propagation', actor: 'bench' });
      const d1 = performance.now();
      if (hookCalls.length !== 1 || hookCalls[0]!.keyIds?.length !== 1 || hookCalls[0]!.keyIds[0] !== keyId) {
        throw new Error(`destroyKey's onDestroyed hook made ${hookCalls.length} propagation calls, expected one for ${keyId}`);
      }
      const call = hookCalls[0]!;
      const { result, ended } = await call.done;
      const propagateMs = ended - call.started;

      // what the destruction wrote to the backup bucket, once its propagation settled
      const after = await bucketVersions(client, backupBucket);
      const added = newVersions(before, after);
      const written = {
        objects: added.length,
        bytes: added.reduce((n, o) => n + o.size, 0),
        chainRecords: added.filter((o) => o.name.startsWith(LEDGER_CHAIN_PREFIX)).length,
        heads: added.filter((o) => o.name === LEDGER_HEAD_KEY).length,
        manifests: added.filter((o) => isManifest(o.name)).length,
        other: added.filter((o) => !o.name.startsWith(LEDGER_CHAIN_PREFIX) && o.name !== LEDGER_HEAD_KEY && !isManifest(o.name)).length,
      };
      const manifestVersionCounts = new Map<string, number>();
      for (const o of after.values()) if (isManifest(o.name)) manifestVersionCounts.set(o.name, (manifestVersionCounts.get(o.name) ?? 0) + 1);
      const manifestsOnce =
        written.manifests === 0 &&
        manifestVersionCounts.size === dbBefore.size &&
        [...dbBefore.keys()].every((id) => manifestVersionCounts.get(manifestKey(id)) === 1);
      const ledgerOnly = written.chainRecords === 1 && written.heads === 1 && written.other === 0 && written.manifests === 0;

      const dbAfter = await q`select backup_id, manifest_version from backups`;
      const dbOk = dbAfter.length === dbBefore.size && dbAfter.every((r) => Number(r.manifest_version) === dbBefore.get(String(r.backup_id)));
      const toCheck = holderIds.length <= 10 ? holderIds : holderIds.filter((_, i) => i % Math.ceil(holderIds.length / 10) === 0).slice(0, 10);
      let marked = true;
      for (const id of toCheck) {
        const m = await v.backups.manifest(id);
        const k = m.keys.find((x) => x.keyId === keyId);
        if (!k || k.state !== 'destroyed' || m.overlay.destroyed < 1 || m.base.version !== 1) marked = false;
      }
      const reportedOk = result.keys === 1 && result.backups === holderIds.length;
      if (!reportedOk) {
        warnings.push(
          `propagate for ${keyId} reported ${result.keys} destructions / ${result.backups} backups (${result.records} records), expected 1 / ${holderIds.length}`,
        );
      }
      if (!manifestsOnce)
        warnings.push(
          `after destroying ${keyId}: ${written.manifests} manifest object versions were added, or a backup's manifest does not have exactly one version`,
        );
      if (!ledgerOnly) {
        warnings.push(
          `after destroying ${keyId}: the backup bucket gained ${written.chainRecords} chain record(s), ${written.heads} head version(s), ` +
            `${written.manifests} manifest version(s) and ${written.other} other object(s); expected exactly 1 chain record and 1 head`,
        );
      }
      if (!dbOk) warnings.push(`after destroying ${keyId}: backups.manifest_version changed in PostgreSQL`);
      if (!marked) warnings.push(`after destroying ${keyId}: a checked folded manifest does not mark it destroyed (overlay.destroyed >= 1, base version 1)`);
      progress(
        `backup: key held by ${fmtInt(holderIds.length)} backup(s): propagate ${fmtNum(propagateMs, 1)} ms, destroy → done ${fmtNum(ended - d0, 1)} ms; ` +
          `wrote ${fmtInt(written.objects)} object(s), ${fmtInt(written.bytes)} B to the backup bucket`,
      );
      return {
        keyId,
        holders: holderIds.length,
        reported: result,
        propagateMs,
        destroyToDoneMs: ended - d0,
        destroyMs: d1 - d0,
        msPerBackup: propagateMs / holderIds.length,
        written,
        manifestsWrittenOnce: manifestsOnce,
        ledgerOnly,
        databaseVersionsOk: dbOk,
        manifestsChecked: toCheck.length,
        manifestsMarkDestroyed: marked,
        ok: reportedOk && manifestsOnce && ledgerOnly && dbOk && marked,
      };
    };
    const figure = (samples: PropagationSample[]): PropagationFigure => {
      const m = median(samples.map((s) => s.propagateMs));
      return {
        holders: samples[0]!.holders,
        samples,
        medianPropagateMs: m,
        medianDestroyToDoneMs: median(samples.map((s) => s.destroyToDoneMs)),
        msPerBackup: m / samples[0]!.holders,
        medianBytesWritten: median(samples.map((s) => s.written.bytes)),
        medianObjectsWritten: median(samples.map((s) => s.written.objects)),
      };
    };
    const group = async (keys: readonly string[]): Promise<PropagationSample[]> => {
      const samples: PropagationSample[] = [];
      for (const k of keys) samples.push(await measure(k));
      return samples;
    };
    progress(`backup: destroying ${singles} keys held by 1 backup each`);
    const oneSamples = await group(singleKeys);
    progress(`backup: destroying ${manyKeys.length} key(s) held by ${fmtInt(holders)} backups`);
    const manySamples = await group(manyKeys);
    const one = figure(oneSamples);
    const many = figure(manySamples);

    return {
      subjects,
      entriesPerSubject: perSubject,
      entryBytes: ENTRY_BYTES,
      artifacts: nArtifacts,
      fill: { entries, seconds: fillSeconds, entriesPerSec: entries / fillSeconds, artifactsSeconds },
      live: { objects: liveObjects.length, bytes: liveBytes, logObjects, artifactObjects },
      baseline,
      copies: { before: copyBefore, after: copyAfter },
      full,
      incremental,
      ratio: full.objectsPerSec / baseline.objectsPerSec,
      objectsPhaseRatio: full.objectsPhasePerSec / baseline.objectsPerSec,
      backupExtras,
      propagation: {
        holders,
        extras,
        extraBackups: extraCount,
        extrasSeconds,
        projectedRealSeconds,
        realLimitSeconds,
        manifestBytes: Math.max(backupExtras.manifestBytes, lastManifestBytes),
        one,
        many,
        ratio: many.medianPropagateMs / one.medianPropagateMs,
        bytesWritten: { one: one.medianBytesWritten, many: many.medianBytesWritten, ratio: many.medianBytesWritten / one.medianBytesWritten },
      },
      aims: [
        aim(
          `backup propagation ms, key in ${fmtInt(holders)} backups ÷ in 1`,
          many.medianPropagateMs / one.medianPropagateMs,
          '<= 2 (issue 18)',
          many.medianPropagateMs / one.medianPropagateMs <= 2,
        ),
      ],
      valid: warnings.length === 0,
      warnings,
    };
  } finally {
    await cleanup('backup', [
      ['sql', async () => sql?.end({ timeout: 5 })],
      ['vault', async () => vault?.close()],
      ['ledger key', async () => ledgerMac?.destroy()],
    ]);
    await scratch?.cleanup();
  }
}

// ------------------------------------------------------------------ report

export function formatBackup(r: BackupResult): string {
  const row = (p: CopyPhase, extra: string) => [
    p.label,
    fmtInt(p.objects),
    fmtNum(p.seconds, 2),
    fmtNum(p.objectsPerSec, 0),
    fmtNum(p.mbPerSec, 3),
    fmtNum(p.cpuSeconds, 1),
    extra,
  ];
  const br = (b: BackupRunPhase) =>
    `copied ${fmtInt(b.copied)}, reused ${fmtInt(b.reused)}; objects ${fmtNum(b.breakdown.objects, 2)} s, key table+database+ledger ` +
    `${fmtNum(b.breakdown.keyTableDatabaseLedger, 2)} s, manifest ${fmtNum(b.breakdown.manifest, 2)} s, index+propagate ${fmtNum(b.breakdown.indexAndPropagate, 2)} s`;
  const p = r.propagation;
  const prow = (label: string, f: PropagationFigure) => [
    label,
    fmtInt(f.holders),
    fmtInt(f.samples.length),
    fmtNum(f.medianPropagateMs, 1),
    fmtNum(f.msPerBackup, 2),
    fmtNum(f.medianDestroyToDoneMs, 1),
    fmtNum(median(f.samples.map((s) => s.destroyMs)), 1),
    fmtInt(f.medianBytesWritten),
    fmtInt(f.medianObjectsWritten),
    f.samples.map((s) => fmtNum(s.propagateMs, 1)).join(', '),
    f.samples.every((s) => s.ok) ? 'ok' : 'FAILED',
  ];
  const lines = [
    `Backup throughput vs a plain copy of the same objects; real MinIO, vault in-process; ${fmtInt(r.subjects)} subjects x ${r.entriesPerSubject} entries x ` +
      `${r.entryBytes} B (vault.log.append, one segment each) + ${fmtInt(r.artifacts)} artifacts of 2 KiB: ${fmtInt(r.live.objects)} objects, ` +
      `${fmtNum(r.live.bytes / 1e6, 2)} MB (mean ${fmtInt(r.live.bytes / r.live.objects)} B); fill ${fmtNum(r.fill.entriesPerSec, 0)} appends/s`,
    table(
      ['path', 'objects', 'seconds', 'objects/s', 'MB/s', 'CPU s', 'note'],
      [
        row(r.copies.before, 'sequential'),
        row(r.copies.after, 'sequential'),
        row(r.baseline, 'baseline for the ratio'),
        row(r.full, br(r.full)),
        row(r.incremental, br(r.incremental)),
      ],
    ),
    `full backup ÷ plain copy = ${fmtRatio(r.ratio)} (÷ the copy before ${fmtRatio(r.full.objectsPerSec / r.copies.before.objectsPerSec)}, ` +
      `÷ the copy after ${fmtRatio(r.full.objectsPerSec / r.copies.after.objectsPerSec)}; objects phase alone ${fmtRatio(r.objectsPhaseRatio)}); incremental run ${fmtSeconds(r.incremental.seconds)} ` +
      `= ${fmtRatio(r.incremental.seconds / r.full.seconds)} of the full run's time`,
    `besides the objects, each backup writes a manifest of ${fmtNum(r.backupExtras.manifestBytes / 1e6, 2)} MB, a key table of ` +
      `${fmtNum(r.backupExtras.keyTableBytes / 1e3, 1)} kB and a database export of ${fmtNum(r.backupExtras.databaseBytes / 1e6, 2)} MB`,
    '',
    `Propagation: destroyKey, then the propagate({ keyIds: [keyId] }) its onDestroyed hook starts, timed until it returns; ` +
      `${fmtInt(p.holders)} holders = 3 real backups + ${fmtInt(p.extraBackups)} ${p.extras === 'real' ? 'real vault.backups.run() calls' : 'synthetic copies of the first manifest (SQL rows + manifest objects)'} ` +
      `(made in ${fmtSeconds(p.extrasSeconds)}; ${fmtInt(p.extraBackups)} real runs estimated at ${fmtSeconds(p.projectedRealSeconds)}, limit ${p.realLimitSeconds} s); ` +
      `manifest ${fmtNum(p.manifestBytes / 1e6, 2)} MB (written once, never by a propagation); bytes/objects written = new object versions in the backup bucket per destruction`,
    table(
      [
        'key held by',
        'backups',
        'samples',
        'propagate ms (median)',
        'ms per backup',
        'destroy → done ms',
        'destroyKey ms',
        'bytes written',
        'objects written',
        'samples ms',
        'checks',
      ],
      [prow('1 backup', p.one), prow(`${fmtInt(p.holders)} backups`, p.many)],
    ),
    `${fmtInt(p.holders)} ÷ 1 backup: propagate ms ${fmtRatio(p.ratio)}, bytes written per destruction ${fmtRatio(p.bytesWritten.ratio)} ` +
      `(${fmtInt(p.bytesWritten.many)} / ${fmtInt(p.bytesWritten.one)} B); checks: propagate reports 1 destruction and exactly the holders, the backup bucket gained ` +
      `exactly one chain record and one head version (no manifest version: each still has one), manifest_version unchanged in PostgreSQL, the folded ` +
      `manifest (vault.backups.manifest) marks the key destroyed with overlay.destroyed >= 1 (all holders for 1 backup, 10 for ${fmtInt(p.holders)})`,
    formatAims(r.aims),
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runBackup, formatBackup);
