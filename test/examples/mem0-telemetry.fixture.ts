/**
 * Run by test/examples/mem0.test.ts as a process of its own, with Mem0's telemetry on
 * (MEM0_TELEMETRY=true, every event sampled): what Mem0 would send to PostHog is caught at
 * `fetch` and printed as JSON, after add, search, get, update and delete of one memory of
 * SUBJECT through a Memory on lethe.
 */
const sent: string[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const url = input instanceof Request ? input.url : String(input);
  if (!url.startsWith(process.env.LETHE_URL!)) {
    sent.push(`${url} ${typeof init?.body === 'string' ? init.body : ''}`);
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  }
  return realFetch(input, init);
};

const { Lethe, tokensFromEnv } = await import('../../src/client/index.js');
const { openMemory } = await import('../../examples/mem0/memory.js');
const memory = openMemory(new Lethe({ baseUrl: process.env.LETHE_URL!, tokens: tokensFromEnv(process.env.LETHE_TOKENS) }));
const subject = process.env.SUBJECT!;
const added = await memory.add('Dana waters the ferns on Sundays', { userId: subject, infer: false });
const id = added.results[0]!.id;
await memory.search('ferns', { filters: { user_id: subject } });
await memory.get(id);
await memory.update(id, 'Dana waters the ferns on Saturdays');
await memory.delete(id);
// what Mem0 sends it sends without awaiting: give it a moment
await new Promise((resolve) => setTimeout(resolve, 1000));
process.stdout.write(JSON.stringify({ sent }));
