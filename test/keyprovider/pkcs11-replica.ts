/**
 * Another process on the same PKCS#11 token (a second replica), for
 * test/keyprovider/pkcs11.test.ts: opens a Pkcs11EpochStore from the options it is
 * given on argv (JSON) and answers unwrap requests over IPC until told to stop.
 * SOFTHSM2_CONF comes from the parent's environment.
 */
import { Pkcs11EpochStore } from '../../src/keyprovider/pkcs11.js';

const opts = JSON.parse(process.argv[2]!) as { module: string; tokenLabel: string; pin: string; prefix: string };
const store = await Pkcs11EpochStore.open(opts);
process.on('message', (m: { op: 'unwrap'; epoch: number; wrapped: string; keyId: string } | { op: 'stop' }) => {
  if (m.op === 'stop') {
    void store.close().then(() => process.exit(0));
    return;
  }
  store.unwrap(m.epoch, Buffer.from(m.wrapped, 'base64'), m.keyId, 'subject').then(
    (dek) => process.send!({ ok: Buffer.from(dek).toString('base64') }),
    (e: unknown) => process.send!({ code: (e as { code?: string }).code ?? 'unknown' }),
  );
});
process.send!({ ready: true });
