/**
 * Mem0's open-source `Memory` on lethe, through Mem0's own API: a Mem0 user keeps
 * add/search/get/getAll/update/delete/deleteAll and gains a key per person, forgets with
 * certificates, and an erasure for `deleteAll({ userId })`.
 *
 *   LETHE_TOKENS=admin=dev-admin-token,writer=dev-writer-token,eraser=dev-eraser-token npm start   # terminal 1
 *   npm run example:mem0                                                                            # terminal 2
 *
 * Two memories are added for one user and one for another (`infer: false`: Mem0's fact
 * extraction needs a model; a stub stands in for the LLM and refuses to be called), searched,
 * read, updated; one is deleted (a forget, followed to `completed`); then the first user's
 * deleteAll is an erasure followed to `completed`, whose certificate is verified against the
 * service's keys. The other user keeps their memory. One line per step; a failure exits 1.
 * Mem0 is configured in memory.ts: lethe's built-in embedder, no model.
 *
 * Environment (all optional): LETHE_URL (default http://127.0.0.1:8787), LETHE_TOKENS
 * (default writer=dev-writer-token,eraser=dev-eraser-token). Mem0 reports usage to PostHog
 * unless MEM0_TELEMETRY=false: memory.ts sets it before Mem0 loads.
 */
import { randomBytes } from 'node:crypto';
import { Lethe, tokensFromEnv } from '../../src/client/index.js';
import { openMemory } from './memory.js';

const baseUrl = process.env.LETHE_URL?.trim() || 'http://127.0.0.1:8787';
const tokens = tokensFromEnv(process.env.LETHE_TOKENS?.trim() || 'writer=dev-writer-token,eraser=dev-eraser-token');

let step = 0;
const say = (line: string): void => void process.stdout.write(`${String(++step).padStart(2)}. ${line}\n`);

class SessionError extends Error {}

async function main(): Promise<void> {
  const lethe = new Lethe({ baseUrl, tokens });
  const memory = openMemory(lethe, { eraseReason: 'the user asked to be forgotten' });

  // users of their own on each run: an erased subject cannot be written again
  const run = randomBytes(3).toString('hex');
  const a = `user:mem0-a-${run}`;
  const b = `user:mem0-b-${run}`;
  const added = await memory.add('Prefers window seats and vegetarian meals on long flights.', { userId: a, infer: false });
  const second = await memory.add('Her daughter Mila starts school in Ghent in September.', { userId: a, infer: false, metadata: { topic: 'family' } });
  await memory.add('Prefers aisle seats; allergic to peanuts.', { userId: b, infer: false });
  const seatId = added.results[0]!.id;
  say(`added 2 memories for ${a} and 1 for ${b}; ids name their subject: ${seatId}`);

  const found = await memory.search('which seat does she like on a plane', { filters: { user_id: a }, topK: 3 });
  const top = found.results[0];
  if (!top) throw new SessionError('search found nothing');
  say(`search "which seat does she like on a plane": ${found.results.length} result(s), first: "${top.memory}"`);

  await memory.update(seatId, 'Prefers window seats and vegan meals on long flights now.');
  const read = await memory.get(seatId);
  say(`updated and read back: "${read?.memory}"`);

  const forgot = await memory.delete(second.results[0]!.id);
  if (!forgot.erasureId) throw new SessionError('delete answered no erasure');
  const forgotten = await lethe.erasures.wait(forgot.erasureId);
  say(`deleted one memory: erasure ${forgot.erasureId} ${forgotten.status}`);

  const before = await memory.getAll({ filters: { user_id: a } });
  say(`getAll for ${a}: ${before.results.length} memory`);

  const erased = await memory.deleteAll({ userId: a });
  if (!erased.erasureId) throw new SessionError('deleteAll answered no erasure');
  const view = await lethe.erasures.wait(erased.erasureId);
  if (view.status !== 'completed') throw new SessionError(`the erasure ended ${view.status}`);
  say(`deleteAll for ${a}: erasure ${erased.erasureId} ${view.status}${view.class ? ` (class ${view.class})` : ''}`);

  const certificate = await lethe.certificates.get(erased.erasureId);
  // the service's public keys (GET /v1/certificates/keys, no token), never the key the certificate carries
  const verdict = await lethe.certificates.verify(certificate);
  if (!verdict.valid) throw new SessionError(`the certificate does not verify: ${verdict.reason ?? 'unknown reason'}`);
  say(`certificate verified: ${certificate.algorithm}, signed by ${verdict.keyId ?? '?'}, one of the service's keys`);

  const after = await memory.getAll({ filters: { user_id: a } });
  const kept = await memory.search('seat preference', { filters: { user_id: b } });
  say(`${a} has ${after.results.length} memories left; ${b} keeps ${kept.results.length}: "${kept.results[0]?.memory}"`);
}

main().catch((e: unknown) => {
  process.stderr.write(`mem0 session failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
