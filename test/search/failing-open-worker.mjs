// A rebuild worker that fails on its first batch (test/search/rebuild-workers.test.ts): ready at once, then it zeroes the keys it is sent and throws.
import { parentPort } from 'node:worker_threads';

parentPort.on('message', (message) => {
  message.input.keys.fill(0);
  throw new Error('this worker fails on purpose');
});
parentPort.postMessage({ ready: true });
