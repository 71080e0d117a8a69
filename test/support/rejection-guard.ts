// Spawned by test/app/rejections.test.ts: installs the serving process's rejection
// guard, then leaves one promise rejected with nothing waiting on it — a dropped
// connection's error (57P01, as postgres.js gives it), a socket reset under an
// object-store request (the store's deadline transport) or a KMS request (the KMS
// client's agents), a bare socket reset nobody marked, or any other error — and says
// whether the process is still alive afterwards and what origins it swallowed.
import http from 'node:http';
import { createServer } from 'node:net';
import { guardUnhandledRejections } from '../../src/app/rejections.js';
import { kmsAgents } from '../../src/keyprovider/aws-kms.js';
import { createLogger } from '../../src/observability/logger.js';
import { timedTransport } from '../../src/storage/deadline.js';

const kind = process.argv[2];
const swallowed: string[] = [];
guardUnhandledRejections(createLogger('warn'), (origin) => swallowed.push(origin));

/** A server that resets every connection: the request's socket fails with ECONNRESET. */
const server = createServer((socket) => socket.resetAndDestroy());
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as { port: number }).port;

/** A GET through `request`, rejected on its error: a promise nobody waits for. */
function reset(request: (o: http.RequestOptions) => http.ClientRequest): Promise<never> {
  return new Promise((_, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET' });
    req.on('error', reject);
    req.end();
  });
}

if (kind === 'dropped')
  void Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' }));
else if (kind === 'object-store') void reset((o) => timedTransport(false, 5000).transport.request(o));
else if (kind === 'kms') void reset((o) => http.request({ ...o, agent: kmsAgents({ keepAlive: true }).http }));
else if (kind === 'unknown') void reset((o) => http.request(o));
else void Promise.reject(new TypeError('a bug'));

setTimeout(() => {
  process.stdout.write(`alive, swallowed ${swallowed.length} (${swallowed.join(',')})\n`);
  server.close();
}, 500);
