/**
 * The report's first page in plain language: dates in words, the request's reason
 * category, the status, the certificate state, and one sentence per residual. These
 * return plain text (the caller escapes it); none of them uses the engine's terms
 * (wrapped keys, epochs, vector-space gist): a data-protection officer reads them.
 */
import type { ErasureStatus } from '../machine.js';
import type { ReasonCategory } from '../request.js';
import type { Residual } from '../view.js';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'] as const;

/**
 * An ISO time in words, in UTC: `2 December 2026, 14:47 UTC` (`seconds`: `14:47:08 UTC`).
 * Undefined when it does not parse.
 */
export function dateInWords(iso: string, options: { seconds?: boolean } = {}): string | undefined {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return undefined;
  const d = new Date(t);
  const hh = String(d.getUTCHours()).padStart(2, '0');
  const mm = String(d.getUTCMinutes()).padStart(2, '0');
  const ss = options.seconds ? `:${String(d.getUTCSeconds()).padStart(2, '0')}` : '';
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}, ${hh}:${mm}${ss} UTC`;
}

/** The day alone: `2 December 2026`. */
function dayInWords(iso: string): string | undefined {
  return dateInWords(iso)?.replace(/, .*$/, '');
}

/** Each reason category as a DPO files it (GDPR Art. 17(1)'s grounds). */
export const REASON_IN_WORDS: { readonly [K in ReasonCategory]: string } = {
  'withdrawn-consent': 'The person withdrew the consent the processing rested on',
  'no-longer-necessary': 'The data is no longer needed for the purpose it was collected for',
  objection: 'The person objected to the processing, and no overriding legitimate ground applies',
  'unlawful-processing': 'The data was processed unlawfully',
  'legal-obligation': 'A legal obligation requires the erasure',
  'child-consent': 'The data was collected from a child for an online service',
  other: 'Another reason, given by the controller',
};

/** The outcome of an erasure in one plain sentence. */
export const STATUS_IN_WORDS: { readonly [K in ErasureStatus]: string } = {
  completed: 'Completed: the data is erased, and the reconstruction check found nothing recoverable above the threshold.',
  incomplete: 'Incomplete: the erasure ran, but something recoverable remains (listed under "What remains").',
  failed: 'Failed: a step failed and the erasure did not finish; it can be resumed once the cause is fixed.',
  pending: 'Requested: the erasure has not started yet.',
  running: 'In progress: this report is a snapshot.',
};

/**
 * The outcome sentence for a completed erasure whose check found records it counted out
 * on a ruling: never "found nothing recoverable" when a ruling kept something readable.
 */
export function completedWithRulings(n: number): string {
  return `Completed on a ruling: the data is erased, but the reconstruction check found ${plural(n, 'record', 'records')} that still ${n === 1 ? 'carries' : 'carry'} the erased information and ${n === 1 ? 'stays' : 'stay'} readable, because one person proposed and a second approved the ruling that ${n === 1 ? 'it does' : 'they do'} not (listed under "What remains").`;
}

/** A short label for an outcome in the history. */
export const STATUS_LABEL: { readonly [K in ErasureStatus]: string } = {
  completed: 'Completed',
  incomplete: 'Incomplete',
  failed: 'Failed',
  pending: 'Requested',
  running: 'Running',
};

/** The certificate's state in words, with when it was signed (the payload's `issuedAt`). */
export function certificateInWords(state: 'provisional' | 'final' | undefined, issuedAt: string | undefined): string {
  const signed = issuedAt && dateInWords(issuedAt) ? ` Signed on ${dateInWords(issuedAt)}.` : '';
  if (state === 'final')
    return `Final.${signed} No old copy of the destroyed key can be unlocked any more: the master key that could unlock them has been retired.`;
  if (state === 'provisional') {
    return `Provisional.${signed} It becomes final, and is signed again, once the vault retires the master key that can still unlock old copies of the destroyed key (a routine key rotation).`;
  }
  return 'No certificate has been signed yet: it is signed when the erasure finishes.';
}

/** "until 2 December 2026" or the honest alternative, for a residual that has an end. */
function untilWords(r: Residual): string {
  const day = r.until ? dayInWords(r.until) : undefined;
  return day ? `until ${day}` : 'until the vault retires its current master key (not yet scheduled: an administrator rotates it)';
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function percentOf(bound: Residual['bound']): string | undefined {
  return typeof bound === 'number' && Number.isFinite(bound) ? `${(bound * 100).toFixed(1)}%` : undefined;
}

export interface ResidualContext {
  /** `records`: entries of a person who lives on were forgotten, not the person. */
  readonly scope?: 'subject' | 'records' | undefined;
}

/**
 * One plain sentence for a residual, for every kind `residuals.ts` records (and a
 * careful one for a kind it does not know). Plain text: the caller escapes it.
 */
export function residualSentence(r: Residual, context: ResidualContext = {}): string {
  const what = context.scope === 'records' ? 'the forgotten entries' : "the person's data";
  const ended = r.bound === 0 && r.until ? dayInWords(r.until) : undefined;
  switch (r.kind) {
    case 'gist': {
      const p = percentOf(r.bound);
      return `Search by meaning may still find other texts that say something similar to the erased records${p ? `; the reconstruction check measured ${p} of the erased content as still recoverable` : ''}.`;
    }
    case 'replica-lag':
      return 'One server of the service had not yet confirmed that it dropped the erased records from its search memory; it does so as soon as it catches up.';
    case 'wrapped-dek': {
      if (r.tier === 'backups') {
        const n = /^(\d+) /.exec(r.detail)?.[1];
        const holders = n ? plural(Number(n), 'backup holds', 'backups hold') : 'Backups hold';
        if (ended) return `${holders} a locked copy of the destroyed key; since ${ended} it can no longer be unlocked.`;
        return `${holders} a locked copy of the destroyed key, which could unlock ${what} ${untilWords(r)}.`;
      }
      const copies =
        context.scope === 'records'
          ? 'Old encrypted copies of the forgotten entries, in storage and in database backups,'
          : "Old locked copies of the person's key, in database backups and logs,";
      if (ended) return `${copies} could be read only until ${ended}, when the master key that could unlock them was retired.`;
      return `${copies} can be unlocked ${untilWords(r)}.`;
    }
    case 'lease': {
      const day = r.until ? dateInWords(r.until) : undefined;
      return `Programs that were writing ${what} before the request could keep its key in memory${day ? ` until ${day}` : ' for a few minutes'}; nothing they write with it has been accepted since.`;
    }
    case 'cross-subject':
      if (r.tier === 'artifacts')
        return 'A summary or other derived text still carries the erased information, because records it was built from carry it; those records need to be redacted.';
      if (r.tier === 'vector-index') return 'The search index still holds another record that carries the erased information, until that record is redacted.';
      return "Another person's record still carries the erased information; it remains until that record is redacted (no end date until then).";
    case 'dismissed-content': {
      const id = /^Record (\S+) /.exec(r.detail)?.[1];
      return `A record${id ? ` (${id})` : ''} that still carries the erased information stays readable: one person proposed and a second approved the ruling that it does not; it remains until the record is redacted or the ruling revoked.`;
    }
    case 'parametric': {
      const n = /in (\d+) registered/.exec(r.detail)?.[1];
      const sets = n ? plural(Number(n), 'registered training set', 'registered training sets') : 'a registered training set';
      return typeof r.bound === 'number'
        ? `${what[0]!.toUpperCase()}${what.slice(1)} went into ${sets} of a model; the requester states the model was made to unlearn it, within a stated bound of ${r.bound}.`
        : `${what[0]!.toUpperCase()}${what.slice(1)} went into ${sets} of a model, and no unlearning was stated: what the model retains cannot be bounded.`;
    }
    case 'unindexed': {
      const n = /^(\d+) /.exec(r.detail)?.[1];
      const one = n === '1';
      const records = n ? plural(Number(n), 'record', 'records') : 'Some records';
      return `${records} written shortly before the check ${one ? 'was' : 'were'} not yet ready to be searched, so the check could not look in ${one ? 'it' : 'them'} for what was erased; nothing is certified about ${one ? 'it' : 'them'}.`;
    }
    case 'fingerprints':
      return 'Sealed fingerprints of the erased records, which cannot be turned back into text, are kept so the check can run again after a redaction or after a ruling is revoked; they are destroyed once a check finds nothing left.';
    case 'certificate-refused':
      return "The service refused to make this erasure's certificate final: the erasure's records were changed after its certificate was signed, and they no longer agree with what the service signed and recorded. Someone should look into who changed them; until then the certificate is not final.";
    default:
      return 'Something else may remain; the technical detail below describes it.';
  }
}
