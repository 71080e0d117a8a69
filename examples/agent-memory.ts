/**
 * Agent memory with lethe: two users talk to a LangGraph.js agent whose long-term
 * memory is a `LetheStore`; a consolidation job writes a summary shared by both; then
 * alice asks to be forgotten. Her erasure destroys her key, regenerates the shared
 * summary from bob's memories alone, and ends with a signed certificate that this
 * script verifies against the vault's keys. The agent no longer recalls alice (and may
 * not learn her again), and bob's memories and his part of the summary survive.
 *
 *   npm run example:agent                 # starts `lethe serve` on the embedded default (PGlite, local files) in a temp dir
 *   npm run example:agent -- --url http://127.0.0.1:8787
 *                                         # uses a running service: LETHE_TOKENS (writer and
 *                                         # eraser tokens, or an admin token: role=token,…)
 *
 * With `--json` the last line is a JSON summary of what happened (the test reads it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ErasureTransition, isLetheError, Lethe, tokensFromEnv } from '../src/client/index.js';
import { LetheStore } from '../src/client/langgraph.js';
import { ask, buildMemoryAgent, memories } from './memory-agent.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const json = process.argv.includes('--json');
const urlAt = process.argv.indexOf('--url');
const givenUrl = urlAt >= 0 ? process.argv[urlAt + 1] : undefined;

const say = (line = ''): void => void process.stdout.write(`${line}\n`);

interface Service {
  readonly baseUrl: string;
  readonly tokens: { writer?: string; eraser?: string; admin?: string };
  stop(): Promise<void>;
}

/** `lethe serve` on the embedded default in a fresh temp dir, on a free port, with tokens of its own. */
async function startService(): Promise<Service> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'lethe-agent-memory-'));
  const tokens = {
    writer: `w-${randomBytes(12).toString('hex')}`,
    eraser: `e-${randomBytes(12).toString('hex')}`,
    admin: `a-${randomBytes(12).toString('hex')}`,
  };
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      PORT: '0',
      HOST: '127.0.0.1',
      LETHE_DATA_DIR: dataDir,
      LETHE_ROOT_KEY: randomBytes(32).toString('base64'),
      LETHE_TOKENS: Object.entries(tokens)
        .map(([role, token]) => `${role}=${token}`)
        .join(','),
      LETHE_ERASURE_POLL_MS: '100',
      LETHE_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`lethe serve did not start within 120 s:\n${log.slice(-2000)}`)), 120_000);
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const line = log.split('\n').find((l) => l.includes('lethe listening'));
      if (!line) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`lethe serve exited with ${code}:\n${log.slice(-2000)}`));
    });
  });
  child.stderr!.removeAllListeners('data');
  child.stderr!.resume();
  say(`lethe serve started on the embedded default at http://127.0.0.1:${port} (data in ${dataDir}, removed at the end)`);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    tokens,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A running service named by --url, with tokens from the environment. */
function connect(url: string): Service {
  const all = tokensFromEnv();
  const tokens = { writer: all.writer ?? all.admin, eraser: all.eraser ?? all.admin, admin: all.admin };
  if (!tokens.writer || !tokens.eraser) throw new Error('with --url, set LETHE_TOKENS to role=token pairs: writer and eraser tokens, or an admin token');
  say(`using the lethe service at ${url}`);
  return { baseUrl: url, tokens, stop: async () => {} };
}

function stepLine(t: ErasureTransition): string {
  const detail = t.detail ? `: ${t.detail.length > 110 ? `${t.detail.slice(0, 107)}…` : t.detail}` : '';
  if (t.fromStep === null) return `  requested${detail}`;
  if (t.toStep === null) return `  ${t.fromStep} → ${t.status}${detail}`;
  return `  ${t.fromStep} ${t.toStep === t.fromStep ? t.status : 'done'}${detail}`;
}

async function main(): Promise<void> {
  const service = givenUrl ? connect(givenUrl) : await startService();
  try {
    await run(service);
  } finally {
    await service.stop();
  }
}

async function run(service: Service): Promise<void> {
  const lethe = new Lethe({ baseUrl: service.baseUrl, tokens: service.tokens });
  // on a shared vault, users of their own: an erased subject cannot be written again
  const suffix = givenUrl ? `-${randomBytes(3).toString('hex')}` : '';
  const alice = `alice${suffix}`;
  const bob = `bob${suffix}`;
  // each user is a subject: the namespace's first label (memories(user) is [encodeSubjectLabel(user), 'memories']);
  // search matches a memory's text
  const store = new LetheStore({ lethe, subjectLabel: 0, fields: ['text'] });
  const agent = buildMemoryAgent(store);

  const turn = async (user: string, message: string): Promise<string> => {
    const reply = await ask(agent, user, message);
    say(`${user}> ${message}`);
    say(`agent> ${reply}`);
    return reply;
  };

  say('\n== two users talk to the agent; it keeps their memories in lethe');
  await turn(alice, 'Remember that I live at 14 Rue des Lilas in Lyon');
  await turn(alice, 'Remember that my daughter Chloé plays the oboe');
  await turn(bob, 'Remember that I am training for the Berlin marathon in September');
  await turn(bob, 'Remember that my cat Pixel hides during thunderstorms');
  const aliceBefore = await turn(alice, 'Where do I live?');
  await turn(bob, 'What am I training for?');

  say('\n== a consolidation job writes a summary shared by both users (it names its sources and the reads it made)');
  const sources: string[] = [];
  const readFences: string[] = [];
  const lines: string[] = [];
  for (const user of [alice, bob]) {
    for await (const page of lethe.entries.pages(user)) {
      readFences.push(page.readFence);
      for (const e of page.entries) {
        sources.push(e.entryId);
        lines.push(`${user}: ${e.text}.`);
      }
    }
  }
  const summary = await lethe.artifacts.create({ kind: 'summary', text: lines.join(' '), sources, readFences, generator: 'agent-memory example' });
  const summaryBefore = (await lethe.artifacts.get(summary.artifactId)).text;
  say(`summary ${summary.artifactId} (v1, ${summary.subjects} subjects): ${summaryBefore}`);
  const bobScopeBefore = await lethe.search('marathon thunderstorms summary', { subject: bob, k: 10 });
  const sharedInBobScopeBefore = bobScopeBefore.hits.some((h) => h.id === summary.artifactId);
  say(
    `bob's scoped search finds the shared summary: ${sharedInBobScopeBefore ? 'yes' : 'no (it reaches alice too: a scoped search never leaks another person)'}`,
  );

  say(`\n== ${alice} asks to be forgotten`);
  const requested = await lethe.erase({ subject: alice, reason: 'the user asked the agent to forget her', legalBasis: 'gdpr-art17' });
  say(`erasure ${requested.erasureId} accepted; its steps, live:`);
  const erasure = await lethe.erasures.wait(requested.erasureId, { onStep: (t) => say(stepLine(t)), timeoutMs: 300_000 });
  const verdict = await lethe.certificates.verifyErasure(requested.erasureId);
  say(
    `erasure ${erasure.status} (class ${erasure.class ?? '?'}); probe recovered ${erasure.probe.recovered} of her private content (threshold ${erasure.probe.threshold})`,
  );
  say(
    `certificate: ${erasure.certificateState ?? 'none'}, signed by ${verdict.keyId ?? '?'} (${verdict.keyState ?? 'unknown key'}): signature ${verdict.valid ? 'verified' : `NOT verified (${verdict.reason})`} against GET /v1/certificates/keys`,
  );

  say('\n== afterwards');
  const aliceAfter = await turn(alice, 'Where do I live?');
  let relearn = 'accepted';
  try {
    await ask(agent, alice, 'Remember that I live at 14 Rue des Lilas in Lyon');
  } catch (e) {
    if (!isLetheError(e)) throw e;
    relearn = e.code;
  }
  say(`${alice}> Remember that I live at 14 Rue des Lilas in Lyon`);
  say(`agent> (refused: ${relearn} — an erased user is not learnt again unless an admin reinstates her)`);
  const bobAfter = await turn(bob, 'What am I training for?');
  const bobMemories = (await store.search(memories(bob))).map((i) => String(i.value.text));
  say(`bob's memories: ${bobMemories.join(' | ')}`);
  const summaryAfter = await lethe.artifacts.get(summary.artifactId);
  say(`summary ${summary.artifactId} (v${summaryAfter.version}, regenerated from the surviving sources): ${summaryAfter.text}`);
  const bobScopeAfter = await lethe.search('marathon thunderstorms summary', { subject: bob, k: 10 });
  const sharedInBobScopeAfter = bobScopeAfter.hits.some((h) => h.id === summary.artifactId);
  say(`bob's scoped search finds the summary now: ${sharedInBobScopeAfter ? 'yes (it is derived from bob alone)' : 'no'}`);

  if (json) {
    say(
      JSON.stringify({
        alice,
        bob,
        aliceBefore,
        aliceAfter,
        bobAfter,
        bobMemories,
        relearn,
        erasure: { erasureId: erasure.erasureId, status: erasure.status, class: erasure.class, certificateState: erasure.certificateState },
        certificate: { valid: verdict.valid, keyId: verdict.keyId, keyState: verdict.keyState },
        summary: { before: summaryBefore, after: summaryAfter.text, version: summaryAfter.version },
        bobScope: { before: sharedInBobScopeBefore, after: sharedInBobScopeAfter },
      }),
    );
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`agent-memory: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
