/**
 * A writer process that is killed (SIGKILL) after uploading its segment and before
 * registering it: the crash the log's fsck exists for. Configured by environment:
 * CRASH_BASE_URL, CRASH_TOKEN, CRASH_S3 (JSON of S3Options), CRASH_SUBJECT.
 */
import { LetheWriter } from '../../src/client/index.js';
import { S3ObjectStore } from '../../src/storage/s3.js';

const writer = new LetheWriter({
  baseUrl: process.env.CRASH_BASE_URL!,
  token: process.env.CRASH_TOKEN!,
  store: new S3ObjectStore(JSON.parse(process.env.CRASH_S3!)),
  segmentMaxAgeMs: 10,
  beforeRegister: async (segment) => {
    process.stdout.write(`uploaded ${segment}\n`);
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => {});
  },
});
await writer.append(process.env.CRASH_SUBJECT!, { text: 'never acknowledged' });
process.stdout.write('acknowledged\n');
