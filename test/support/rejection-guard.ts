// Spawned by test/app/rejections.test.ts: installs the serving process's rejection
// guard, then leaves one promise rejected with nothing waiting on it — a dropped
// connection's error (57P01, as postgres.js gives it) or any other — and says
// whether the process is still alive afterwards.
import { guardUnhandledRejections } from '../../src/app/rejections.js';
import { createLogger } from '../../src/observability/logger.js';

const kind = process.argv[2];
let swallowed = 0;
guardUnhandledRejections(createLogger('warn'), () => swallowed++);
const reason =
  kind === 'dropped'
    ? Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' })
    : new TypeError('a bug');
void Promise.reject(reason);
setTimeout(() => {
  process.stdout.write(`alive, swallowed ${swallowed}\n`);
}, 200);
