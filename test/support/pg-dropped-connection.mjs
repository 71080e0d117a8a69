// The postgres.js dropped-connection crash (porsager/postgres#1154, #1066, #1208),
// reproduced deterministically: a reserved connection whose backend is terminated, then
// a query on it. postgres.js buffers the small write behind a setImmediate that fires
// after the socket was nulled; unpatched, that throws where no caller can catch it and
// the process exits 1. Patched (patches/postgres+3.4.9.patch), the query rejects with
// CONNECTION_CLOSED and the process lives on.
//
//   node pg-dropped-connection.mjs <postgres module entry> <database url>
// Prints one line per outcome; exits 0 when it got to the end.
const [entry, url] = process.argv.slice(2);
const { default: postgres } = await import(entry);
const admin = postgres(url, { max: 1, onnotice: () => {} });
const sql = postgres(url, { max: 4, onnotice: () => {}, connection: { application_name: 'lethe-driver-test' } });

// pooled and in a transaction: the driver rejects these through its normal path
for (let i = 0; i < 3; i++) {
  try {
    await sql.begin(async (tx) => {
      const [{ pid }] = await tx`select pg_backend_pid() as pid`;
      await admin`select pg_terminate_backend(${pid})`;
      await new Promise((r) => setTimeout(r, 50));
      await tx`select 1`;
    });
    console.log('transaction: no error');
  } catch (e) {
    console.log(`transaction: ${e.code ?? e.message}`);
  }
}

// a transaction whose connection dies while another query waits for that (only)
// connection: the pool reconnects it for the waiting query, and the transaction's
// ROLLBACK must not be written to it in that query's place
{
  const one = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: 'lethe-driver-test' } });
  let waiting;
  try {
    await one.begin(async (tx) => {
      const [{ pid }] = await tx`select pg_backend_pid() as pid`;
      waiting = one`select 42 as answer`; // queued: the pool's one connection is the transaction's
      waiting.catch(() => {});
      await admin`select pg_terminate_backend(${pid})`;
      await tx`select 1`;
    });
    console.log('one-connection transaction: no error');
  } catch (e) {
    console.log(`one-connection transaction: ${e.code ?? e.message}`);
  }
  try {
    const [{ answer }] = await waiting;
    console.log(`queued behind it: ${answer}`);
  } catch (e) {
    console.log(`queued behind it: ${e.code ?? e.message}`);
  }
  await one.end({ timeout: 1 });
}

// reserved: the connection cannot be rotated away, the buffered write outlives the socket
const reserved = await sql.reserve();
const [{ pid }] = await reserved`select pg_backend_pid() as pid`;
await admin`select pg_terminate_backend(${pid})`;
await new Promise((r) => setTimeout(r, 100));
try {
  await reserved`select 1`;
  console.log('reserved: no error');
} catch (e) {
  console.log(`reserved: ${e.code ?? e.message}`);
}
reserved.release();
await new Promise((r) => setTimeout(r, 100));
// the pool still works afterwards
const [{ one }] = await sql`select 1 as one`;
console.log(`pool after: ${one}`);
await sql.end({ timeout: 1 });
await admin.end({ timeout: 1 });
console.log('alive');
