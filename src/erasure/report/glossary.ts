/**
 * The report's glossary: the technical sections' terms in plain words, so the first
 * page can stay free of them and link here instead.
 */
const TERMS: ReadonlyArray<readonly [term: string, meaning: string]> = [
  ['Keyed hash', 'How lethe names a person without keeping their id: a one-way code computed with a secret key. It cannot be turned back into the id.'],
  ['Key (DEK)', "The data key that encrypts one person's data. Destroying it makes every copy of that data unreadable at once, backups included."],
  [
    'Master key (KEK) and its epoch',
    "The vault's key that locks the data keys. Each generation of it is an epoch; retiring an epoch destroys it, and with it every old locked copy of a data key made under it.",
  ],
  [
    'Wrapped copy (wrapped-dek)',
    'A data key locked under a master key, as database backups and logs may still hold it. It can be unlocked only while that master key exists.',
  ],
  [
    'Probe',
    'The reconstruction check run after the erasure: it looks for the erased content in everything still readable and reports the share still recoverable against a threshold.',
  ],
  [
    'Gist',
    'What an embedding (the numbers search-by-meaning uses) says about a text: other texts saying the same thing land near it, so meaning can outlive the erased records.',
  ],
  ['Residual', 'Something the erasure could not remove, with how much at most and until when, or "unbounded" when no bound can honestly be given.'],
  ['Tier', "A place a person's data lives: the key table, the log, the search index, derived texts (artifacts), backups, model weights."],
  [
    'Class A, B, C',
    'A: nothing was derived from the data. B: summaries or facts were derived from it and were rebuilt. C: the data went into a registered training set of a model.',
  ],
  ['Lease', "A writer program's time-limited hold on a data key."],
  ['Fingerprints', 'Sealed one-way hashes of the erased records, kept only so the probe can run again after a redaction.'],
  ['Redaction', "Removing the erased information from another person's record that still carried it, by re-encrypting that person's log without the record."],
  [
    'Dismissal',
    'A stated human judgement that a record the probe named does not carry the erased content, proposed by one person and approved by a second; shown apart and signed into the certificate. A near copy can never be dismissed.',
  ],
  [
    'Provisional and final certificate',
    'Provisional while a master key that could unlock an old copy of the destroyed key exists; final, and signed again, once every such master key is retired.',
  ],
];

export function glossarySection(): string {
  return `<section id="glossary">
<h2>Glossary</h2>
<dl class="glossary">
${TERMS.map(([t, m]) => `<dt>${t}</dt><dd>${m}</dd>`).join('\n')}
</dl>
</section>`;
}
