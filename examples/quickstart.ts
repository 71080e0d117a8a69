/**
 * The five-minute quickstart: everything lethe does, once, against a running service,
 * one line per step with the numbers that matter.
 *
 *   LETHE_TOKENS=admin=dev-admin-token LETHE_LEASE_TTL_SECONDS=30 npm start   # terminal 1
 *   npm run quickstart                                                         # terminal 2
 *
 * Two users write memories — alice through `LetheWriter`, which seals them in this
 * process (her plaintext never crosses the network), bob through the service — a job
 * derives a summary from both, scoped searches run, a backup is taken, alice is erased
 * and her erasure is watched to its end; then the report and the signed certificate are
 * downloaded and the certificate is verified offline against the vault's public keys.
 * Any failure exits non-zero with a plain message.
 *
 * Environment (all optional): LETHE_URL (default http://127.0.0.1:8787); LETHE_TOKENS, the
 * service's tokens by role (default admin=dev-admin-token, what the command above gives it);
 * LETHE_DATA_DIR and S3_BUCKET as the service has them (default ./.lethe and lethe): the
 * writer uploads its segments to the service's own bucket, on the embedded default a
 * folder under the data directory — so run it from the folder `npm start` runs in.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ErasureTransition, FsObjectStore, isLetheError, Lethe, tokensFromEnv, verifyCertificate } from '../src/client/index.js';

const START = 'LETHE_TOKENS=admin=dev-admin-token LETHE_LEASE_TTL_SECONDS=30 npm start';
const baseUrl = process.env.LETHE_URL ?? 'http://127.0.0.1:8787';
const tokens = tokensFromEnv(process.env.LETHE_TOKENS?.trim() || 'admin=dev-admin-token');
const objects = path.resolve(process.env.LETHE_DATA_DIR ?? '.lethe', 'objects');
const bucket = process.env.S3_BUCKET ?? 'lethe';

let step = 0;
const say = (line: string): void => void process.stdout.write(`${String(++step).padStart(2)}. ${line}\n`);
const detail = (line: string): void => void process.stdout.write(`      ${line}\n`);

class QuickstartError extends Error {}
function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new QuickstartError(message);
}

/** The service answers and takes the token, or a message that says how to start it. */
async function connect(lethe: Lethe): Promise<void> {
  try {
    await lethe.certificates.keys();
  } catch (e) {
    throw new QuickstartError(
      `no lethe service answers at ${baseUrl} (${e instanceof Error ? e.message : String(e)}): start one in another terminal with\n  ${START}`,
    );
  }
  try {
    await lethe.backups.page({ limit: 1 });
  } catch (e) {
    if (isLetheError(e) && (e.code === 'unauthorized' || e.code === 'forbidden')) {
      throw new QuickstartError(
        `the service at ${baseUrl} refused the token (${e.code}): start it with\n  ${START}\nor set LETHE_TOKENS to its tokens (admin=…)`,
      );
    }
    throw e;
  }
  check(
    existsSync(path.join(objects, bucket)),
    `the writer uploads to the service's bucket, ${path.join(objects, bucket)}, which does not exist: run the quickstart in the folder \`npm start\` runs in (or set LETHE_DATA_DIR as the service has it)`,
  );
  say(`connected to ${baseUrl} (admin token; writer segments go to ${path.join(objects, bucket)})`);
}

function stepLine(t: ErasureTransition): string {
  const text = t.detail ? `: ${t.detail.length > 100 ? `${t.detail.slice(0, 97)}…` : t.detail}` : '';
  if (t.fromStep === null) return `requested${text}`;
  if (t.toStep === null) return `${t.fromStep} → ${t.status}${text}`;
  return `${t.fromStep} ${t.toStep === t.fromStep ? t.status : 'done'}${text}`;
}

async function main(): Promise<void> {
  const lethe = new Lethe({ baseUrl, tokens });
  await connect(lethe);
  // users of their own on each run: an erased subject cannot be written again
  const run = randomBytes(3).toString('hex');
  const alice = `user:alice-${run}`;
  const bob = `user:bob-${run}`;

  const writer = lethe.writer({ store: new FsObjectStore(objects, bucket) });
  const aliceTexts = ['Alice lives at 14 Rue des Lilas in Lyon.', 'Alice is allergic to penicillin.', 'Alice prefers morning meetings.'];
  let aliceEntries;
  try {
    aliceEntries = await Promise.all(aliceTexts.map((text) => writer.append(alice, { text })));
  } finally {
    const closed = await writer.close();
    check(
      closed.unreleased.length === 0,
      `the writer could not release ${closed.unreleased.length} lease(s): ${closed.unreleased.map((l) => l.error.message).join('; ')}`,
    );
  }
  say(`${alice}: ${aliceEntries.length} memories sealed in this process by LetheWriter (key ${aliceEntries[0]!.keyId}); its lease released on close()`);

  const bobTexts = ['Bob is training for the Berlin marathon in September.', 'Bob has a cat called Pixel.', 'Bob prefers afternoon meetings.'];
  for (const text of bobTexts) await lethe.entries.append(bob, { text });
  say(`${bob}: ${bobTexts.length} memories appended through the service (it seals them)`);

  const sources: string[] = [];
  const readFences: string[] = [];
  const lines: string[] = [];
  for (const user of [alice, bob]) {
    for await (const page of lethe.entries.pages(user)) {
      readFences.push(page.readFence);
      for (const e of page.entries) {
        sources.push(e.entryId);
        lines.push(e.text);
      }
    }
  }
  const summary = await lethe.artifacts.create({ kind: 'summary', text: lines.join(' '), sources, readFences, generator: 'quickstart' });
  say(`shared summary ${summary.artifactId}: derived from ${sources.length} memories of ${summary.subjects} users (v${summary.version})`);

  // what a writer registers is searchable once the service's indexer has embedded it, off the append's path
  // (usually well under a second; lethe_search_lag_seconds in /metrics): wait for alice's three, at most 10 s
  let aliceSearch = await lethe.search('where does alice live', { subject: alice, k: 5 });
  for (let waited = 0; waited < 10_000 && !aliceEntries.every((e) => aliceSearch.hits.some((h) => h.id === e.entryId)); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    aliceSearch = await lethe.search('where does alice live', { subject: alice, k: 5 });
  }
  const bobSearch = await lethe.search('meetings summary', { subject: bob, k: 10 });
  const bothSearch = await lethe.search('meetings summary', { subjects: [alice, bob], k: 10 });
  const has = (r: { hits: Array<{ id: string }> }) => r.hits.some((h) => h.id === summary.artifactId);
  check(aliceSearch.hits.length > 0 && aliceSearch.hits.every((h) => h.subject === alice), "alice's scoped search returned something that is not hers");
  check(!has(bobSearch) && has(bothSearch), 'the shared summary must be a hit only of a search that names both users');
  say(
    `search scoped to alice: ${aliceSearch.hits.length} hits, all hers (top: "${aliceSearch.hits[0]!.text}"); the shared summary is a hit of a search naming both users, not of bob's alone`,
  );

  const backup = await lethe.backups.run();
  say(`backup ${backup.backupId}: ${backup.objects} objects, ${backup.keys} wrapped keys`);

  const requested = await lethe.erase({ subject: alice, reason: 'the user asked to be forgotten', legalBasis: 'gdpr-art17' });
  say(`erasing ${alice}: erasure ${requested.erasureId} accepted; its steps, live (GET /v1/erasures/{id}/events):`);
  const started = Date.now();
  const erasure = await lethe.erasures.wait(requested.erasureId, { onStep: (t) => detail(stepLine(t)), timeoutMs: 600_000 });
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  check(
    erasure.status === 'completed',
    `the erasure ended ${erasure.status}${erasure.residuals.length ? ` with ${erasure.residuals.length} residual(s)` : ''}: see its report`,
  );
  const regenerated = erasure.graph.nodes.filter((n) => n.outcome === 'regenerated').length;
  say(
    `erasure completed in ${seconds} s: class ${erasure.class ?? '?'}, probe recovered ${erasure.probe.recovered} (threshold ${erasure.probe.threshold}), ${regenerated} artifact(s) regenerated, ${erasure.residuals.length} residual(s) stated with their bounds (in the report)`,
  );

  const gone = await lethe.entries.get(aliceEntries[0]!.entryId).then(
    () => 'readable',
    (e: unknown) => (isLetheError(e) ? e.code : String(e)),
  );
  check(gone === 'key_destroyed', `alice's memory should be unreadable (key_destroyed), it is ${gone}`);
  const after = await lethe.artifacts.get(summary.artifactId);
  check(!/Alice/.test(after.text), 'the regenerated summary still holds alice');
  const validity = await lethe.subjects.validity([aliceEntries[0]!.keyId]);
  say(
    `afterwards: alice's memories answer ${gone}, her key is ${validity[aliceEntries[0]!.keyId]}, the summary is v${after.version} from bob alone: "${after.text}"`,
  );

  const out = mkdtempSync(path.join(tmpdir(), 'lethe-quickstart-'));
  const reportFile = path.join(out, 'report.html');
  writeFileSync(reportFile, await lethe.erasures.report(requested.erasureId));
  say(`report: open ${pathToFileURL(reportFile).href}`);
  // or share it: a signed link any browser opens without a token, until it expires
  const link = await lethe.erasures.reportLink(requested.erasureId, { expiresInSeconds: 3600 });
  say(`report link (no token needed, expires ${link.expiresAt}): ${link.url}`);

  const certificateFile = path.join(out, 'certificate.json');
  const keysFile = path.join(out, 'keys.json');
  writeFileSync(certificateFile, `${JSON.stringify(await lethe.erasures.certificate(requested.erasureId), null, 2)}\n`);
  writeFileSync(keysFile, `${JSON.stringify({ keys: await lethe.certificates.keys() }, null, 2)}\n`);
  // offline from here: the files alone, the vault's public keys trusted (never the key the certificate carries)
  const keys = (JSON.parse(readFileSync(keysFile, 'utf8')) as { keys: Array<{ publicKey: string }> }).keys.map((k) => k.publicKey);
  const verdict = verifyCertificate(JSON.parse(readFileSync(certificateFile, 'utf8')), keys);
  check(verdict.valid, `the certificate does not verify: ${verdict.reason ?? 'unknown reason'}`);
  say(
    `certificate verified offline: signed by ${verdict.keyId ?? '?'}, one of the vault's ${keys.length} key(s) (${erasure.certificateState ?? 'no'} certificate in ${certificateFile})`,
  );
  detail(`check it again yourself: npx lethe certificate verify ${certificateFile} --public-key-file ${keysFile}`);
}

main().catch((e: unknown) => {
  process.stderr.write(`quickstart failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
