/** Writer registrations made in a test: entries sealed as a writer seals them, one segment uploaded, then registered. */
import { expect } from 'vitest';
import type { App } from '../../src/app/open.js';
import { toBase64Url, zeroize } from '../../src/crypto/index.js';
import { newId, newSegmentKey } from '../../src/ids.js';
import { sealEntry } from '../../src/log/frame.js';
import { encodeSegment } from '../../src/log/segment.js';

/** Seals `texts` for `subject` as a writer does (record keys), uploads one segment, and answers its registration. */
export async function upload(vault: App, subject: string, texts: readonly string[]) {
  const { keyId, firstSeq } = await vault.log.reserve(subject, texts.length, 'writer');
  const { dek } = await vault.keys.dekFor(keyId);
  try {
    const sealed = texts.map((text, i) => {
      const entryId = newId('entry');
      const seq = firstSeq + i;
      return { entryId, seq, ...sealEntry(dek, { keyId, entryId, seq }, { text, kind: null, metadata: null }) };
    });
    const { bytes, places } = encodeSegment(sealed.map((s) => s.envelope));
    const segment = newSegmentKey();
    await vault.objects.put(segment, bytes);
    return {
      segment,
      keyId,
      entries: sealed.map((s, i) => ({ entryId: s.entryId, subject, keyId, seq: s.seq, wrappedKey: toBase64Url(s.wrappedKey), ...places[i]! })),
    };
  } finally {
    zeroize(dek);
  }
}

export async function registerTexts(vault: App, subject: string, texts: readonly string[]) {
  const body = await upload(vault, subject, texts);
  const results = await vault.log.register(body.segment, body.entries);
  expect(results.map((r) => r.status)).toEqual(texts.map(() => 'registered'));
  return { ...body, ids: body.entries.map((e) => e.entryId) };
}
