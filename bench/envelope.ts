/**
 * Envelope throughput: lethe's envelope (src/crypto/envelope.ts: HKDF-SHA256 subkey
 * + key commitment + XChaCha20-Poly1305, pure JS) seal+open, against node:crypto
 * AES-256-GCM encrypt+decrypt (OpenSSL, AES-NI) of the same payloads with the same
 * associated data. One operation = one seal and one open of the payload; MB/s counts
 * the payload once per operation (1 MB = 10^6 bytes).
 *
 * Each size runs a warm-up, then ROUNDS interleaved timed rounds per implementation
 * (lethe, AES-GCM, lethe, ...), summed: slow drift (thermal, other load) hits both.
 * 1 s per case after 0.2 s of warm-up (1.5 s after 0.3 s with BENCH_FULL=1). Reported
 * figures: no aim.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { encodeContext, open, seal } from '../src/crypto/index.js';
import { newId } from '../src/ids.js';
import { byMode } from './support/mode.js';
import { runIfMain } from './support/process.js';
import { fmtBytes, fmtInt, fmtNum, fmtRatio, progress, table } from './support/report.js';

export const ENVELOPE_SIZES = [64, 1024, 64 * 1024, 1024 * 1024] as const;

export interface Throughput {
  readonly ops: number;
  readonly seconds: number;
  /** Payload megabytes (10^6) per second through seal+open. */
  readonly mbPerSec: number;
  readonly opsPerSec: number;
}

export interface EnvelopeSizeResult {
  readonly sizeBytes: number;
  readonly lethe: Throughput;
  readonly aesGcm: Throughput;
  /** lethe MB/s ÷ AES-256-GCM MB/s. */
  readonly ratio: number;
}

export interface EnvelopeResult {
  readonly warmupSeconds: number;
  readonly measureSeconds: number;
  readonly rounds: number;
  readonly sizes: EnvelopeSizeResult[];
}

type Op = () => void;

/** Runs `op` for about `seconds`; returns operations done and the exact time taken. */
function runFor(op: Op, seconds: number, checkEvery: number): { ops: number; seconds: number } {
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  let ops = 0;
  for (;;) {
    for (let i = 0; i < checkEvery; i++) op();
    ops += checkEvery;
    if (performance.now() >= deadline) break;
  }
  return { ops, seconds: (performance.now() - started) / 1000 };
}

function throughput(ops: number, seconds: number, size: number): Throughput {
  return { ops, seconds, mbPerSec: (ops * size) / seconds / 1e6, opsPerSec: ops / seconds };
}

function letheOp(size: number): Op {
  const key = new Uint8Array(randomBytes(32));
  const keyId = newId('key');
  const plaintext = new Uint8Array(randomBytes(size));
  const associatedData = encodeContext('frame', { keyId, subject: 'bench-subject', seq: 1 });
  const check = open({ key, envelope: seal({ key, keyId, plaintext, associatedData }), associatedData, expectedKeyId: keyId });
  if (Buffer.compare(Buffer.from(check), Buffer.from(plaintext)) !== 0) throw new Error('lethe envelope round trip failed');
  return () => {
    const envelope = seal({ key, keyId, plaintext, associatedData });
    const out = open({ key, envelope, associatedData, expectedKeyId: keyId });
    if (out.length !== size) throw new Error('lethe envelope: wrong length');
  };
}

function aesGcmOp(size: number): Op {
  const key = randomBytes(32);
  const plaintext = randomBytes(size);
  const keyId = newId('key');
  const aad = Buffer.from(encodeContext('frame', { keyId, subject: 'bench-subject', seq: 1 }));
  const encrypt = () => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad);
    // GCM's final() yields no bytes: skip the concat copy when it is empty
    const head = cipher.update(plaintext);
    const tail = cipher.final();
    const ct = tail.length === 0 ? head : Buffer.concat([head, tail]);
    return { iv, ct, tag: cipher.getAuthTag() };
  };
  const decrypt = (e: { iv: Buffer; ct: Buffer; tag: Buffer }) => {
    const decipher = createDecipheriv('aes-256-gcm', key, e.iv);
    decipher.setAAD(aad);
    decipher.setAuthTag(e.tag);
    const head = decipher.update(e.ct);
    const tail = decipher.final();
    return tail.length === 0 ? head : Buffer.concat([head, tail]);
  };
  if (!decrypt(encrypt()).equals(plaintext)) throw new Error('AES-GCM round trip failed');
  return () => {
    const out = decrypt(encrypt());
    if (out.length !== size) throw new Error('AES-GCM: wrong length');
  };
}

export async function runEnvelope(): Promise<EnvelopeResult> {
  const warmupSeconds = byMode({ quick: 0.05, normal: 0.2, full: 0.3 });
  const measureSeconds = byMode({ quick: 0.2, normal: 1, full: 1.5 });
  const rounds = 3;
  const sizes: EnvelopeSizeResult[] = [];
  for (const size of ENVELOPE_SIZES) {
    progress(`envelope: ${fmtBytes(size)} payloads`);
    const checkEvery = size >= 64 * 1024 ? 1 : size >= 1024 ? 8 : 32;
    const lethe = letheOp(size);
    const aes = aesGcmOp(size);
    runFor(lethe, warmupSeconds, checkEvery);
    runFor(aes, warmupSeconds, checkEvery);
    const acc = { lethe: { ops: 0, seconds: 0 }, aes: { ops: 0, seconds: 0 } };
    for (let r = 0; r < rounds; r++) {
      const l = runFor(lethe, measureSeconds / rounds, checkEvery);
      acc.lethe.ops += l.ops;
      acc.lethe.seconds += l.seconds;
      const a = runFor(aes, measureSeconds / rounds, checkEvery);
      acc.aes.ops += a.ops;
      acc.aes.seconds += a.seconds;
    }
    const l = throughput(acc.lethe.ops, acc.lethe.seconds, size);
    const a = throughput(acc.aes.ops, acc.aes.seconds, size);
    sizes.push({ sizeBytes: size, lethe: l, aesGcm: a, ratio: l.mbPerSec / a.mbPerSec });
  }
  return { warmupSeconds, measureSeconds, rounds, sizes };
}

export function formatEnvelope(r: EnvelopeResult): string {
  const rows = r.sizes.map((s) => [
    fmtBytes(s.sizeBytes),
    fmtNum(s.lethe.mbPerSec, 2),
    fmtInt(s.lethe.opsPerSec),
    fmtNum(s.aesGcm.mbPerSec, 2),
    fmtInt(s.aesGcm.opsPerSec),
    fmtRatio(s.ratio),
  ]);
  return [
    `Envelope seal+open vs node:crypto AES-256-GCM encrypt+decrypt (baseline); ${r.measureSeconds} s per case after ${r.warmupSeconds} s warm-up`,
    table(['payload', 'lethe MB/s', 'lethe ops/s', 'AES-GCM MB/s', 'AES-GCM ops/s', 'lethe / AES-GCM'], rows),
  ].join('\n');
}

await runIfMain(import.meta.url, runEnvelope, formatEnvelope);
