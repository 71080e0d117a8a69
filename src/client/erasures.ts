/**
 * Erasures through the service (eraser role): a subject's erasure, forgetting single
 * memories (records-scope erasures), the erasure's view, the list, its event stream
 * followed to the end (resumed with Last-Event-ID when the connection breaks), waiting
 * for the outcome, its certificate and report, and the orders that reopen it
 * (redactions, dismissals, resume).
 *
 * `followErasure` is also what `lethe erase` / `lethe erasure watch` follow with.
 */
import { FIRST_RUN, TERMINAL_STATUSES } from '../erasure/machine.js';
import type { BulkErasureRequest, ErasureRequest, RequestContext } from '../erasure/request.js';
import type { CertificateView, DismissalAccepted, ErasureAccepted, ErasureTransition, ErasureView } from '../erasure/view.js';
import { LetheError } from '../errors.js';
import type { BulkErasureAccepted, ReportLink } from '../wire/erasures.js';
import { readSse, type ServiceClient, ServiceError } from './http.js';
import { followPages, type PageOptions, query, type RoleCalls, seg } from './roles.js';

/** An erasure as `GET /v1/erasures/{id}` answers it; `scope` and `entryIds` say what a records-scope erasure forgot. */
export type Erasure = ErasureView & {
  readonly scope?: 'subject' | 'records';
  readonly entryIds?: readonly string[];
};

/** Forget some memories of a subject (a records-scope erasure): the entries, not the subject. */
export interface RecordsErasureRequest {
  readonly subject: string;
  readonly entryIds: readonly string[];
  readonly reason?: string;
  /** The request's context (reason category, legal basis, controller, reference): never personal data. */
  readonly request?: RequestContext;
}

/** What `POST /v1/erasures/{id}/report-link` answers: a link that opens the report without a token until `expiresAt`. */
export type { ReportLink };

/** What `POST /v1/erasures` answered: `created` false when the subject's erasure was already open (the same one). */
export interface RequestedErasure extends ErasureAccepted {
  readonly created: boolean;
}

/** What `POST /v1/erasures/batch` answered, one item per subject by its index in the request (the wire type: src/wire/erasures.ts). */
export type BulkRequestedErasures = BulkErasureAccepted;

export interface ErasurePage {
  readonly erasures: Erasure[];
  readonly nextCursor: string | null;
}

export interface FollowOptions {
  /** Aborting it ends the stream; the abort reason is thrown. */
  readonly signal?: AbortSignal;
  /** Start after this event id (a stream's `Last-Event-ID`). */
  readonly lastEventId?: string;
  /** Consecutive broken connections (no event in between) before giving up (default 5). */
  readonly maxBreaks?: number;
  /** Wait before reconnecting, doubling per consecutive break (default 500 ms). */
  readonly retryDelayMs?: number;
}

/** Following an erasure's events broke off too often; the erasure goes on in the service. */
export class ErasureProgressLostError extends LetheError {
  readonly erasureId: string;
  /** The last event received: resume from it. */
  readonly lastEventId: string | undefined;
  /** Why the last attempt failed (the network's or the service's words; never the token). */
  readonly reason: string;

  constructor(erasureId: string, lastEventId: string | undefined, reason: string, cause: unknown) {
    super('unavailable', `lost the erasure's progress (${reason}); it goes on in the service`, { cause, retryable: true });
    this.name = 'ErasureProgressLostError';
    this.erasureId = erasureId;
    this.lastEventId = lastEventId;
    this.reason = reason;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The transitions of an erasure (`GET /v1/erasures/{id}/events`), in order, until its
 * `end` event. A broken connection — no answer, reset, the stream cut, 429
 * too_many_streams or a 5xx — is resumed with `Last-Event-ID` after a doubling wait;
 * after `maxBreaks` in a row it throws `ErasureProgressLostError`. Any other error
 * answer (404, 401, 403) is thrown as it is.
 */
export async function* followErasure(client: ServiceClient, erasureId: string, options: FollowOptions = {}): AsyncGenerator<ErasureTransition> {
  const maxBreaks = options.maxBreaks ?? 5;
  const delay = options.retryDelayMs ?? 500;
  let lastId = options.lastEventId;
  let broken = 0;
  for (;;) {
    let failure: unknown;
    try {
      const res = await client.request('GET', `/v1/erasures/${seg(erasureId)}/events`, {
        accept: 'text/event-stream',
        ...(lastId ? { headers: { 'last-event-id': lastId } } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      for await (const e of readSse(res)) {
        if (e.id) lastId = e.id;
        if (e.event === 'end') return;
        if (e.event === 'step') {
          broken = 0;
          yield JSON.parse(e.data) as ErasureTransition;
        }
      }
      failure = new LetheError('unavailable', 'the stream ended before the erasure did');
    } catch (e) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (e instanceof ServiceError && e.status < 500 && e.code !== 'too_many_streams') throw e;
      failure = e;
    }
    if (++broken > maxBreaks) {
      const reason = failure instanceof Error ? (((failure as { reason?: unknown }).reason as string | undefined) ?? failure.message) : String(failure);
      throw new ErasureProgressLostError(erasureId, lastId, reason, failure);
    }
    await sleep(delay * 2 ** broken, options.signal);
  }
}

/**
 * One line a person reads for a transition: which step finished (`[3/9] fence done: …`),
 * waits or failed, and its detail (what `lethe erase` prints, and `lethe mcp`'s progress says).
 */
export function transitionLine(t: ErasureTransition): string {
  const detail = t.detail ? `: ${t.detail}` : '';
  if (t.fromStep === null) return t.toStep === null ? `certificate${detail}` : `requested${detail}`;
  const at = FIRST_RUN.indexOf(t.fromStep as (typeof FIRST_RUN)[number]);
  const counter = at >= 0 ? `[${at + 1}/${FIRST_RUN.length}] ` : '';
  if (t.status === 'failed') return `${counter}${t.fromStep} failed${detail}`;
  if (t.toStep === t.fromStep) return `${counter}${t.fromStep} ${t.status === 'running' ? 'waiting' : t.status}${detail}`;
  return `${counter}${t.fromStep} done${detail}`;
}

export interface WaitOptions extends FollowOptions {
  /** Called with each transition as it happens. */
  readonly onStep?: (transition: ErasureTransition) => void;
  /** Give up after this long (rejects with a TimeoutError; the erasure goes on). */
  readonly timeoutMs?: number;
  /** How often to read the erasure when its events cannot be followed (default 500 ms). */
  readonly pollMs?: number;
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);

export class Erasures {
  readonly #calls: RoleCalls;

  constructor(calls: RoleCalls) {
    this.#calls = calls;
  }

  /**
   * `POST /v1/erasures`: a subject's erasure (`{ subject, reason?, legalBasis?, … }`) or
   * forgetting some of its entries (`{ subject, entryIds, reason? }`). While a subject's
   * erasure is open, asking again answers it (`created: false`).
   */
  async request(request: ErasureRequest | RecordsErasureRequest): Promise<RequestedErasure> {
    const res = await this.#calls.request('eraser', 'POST', '/v1/erasures', { body: request });
    const accepted = (await res.json()) as ErasureAccepted;
    return { ...accepted, created: res.status === 202 };
  }

  /**
   * Erases many subjects at once: `POST /v1/erasures/batch` (1 to 1,000 distinct
   * subjects, one erasure and certificate each). A subject refused (never seen, …) is
   * answered in its own item and fails no other; follow each accepted one with `wait`.
   */
  requestMany(request: BulkErasureRequest): Promise<BulkRequestedErasures> {
    return this.#calls.json<BulkRequestedErasures>('eraser', 'POST', '/v1/erasures/batch', { body: request });
  }

  /**
   * Forgets one memory: `DELETE /v1/entries/{entryId}`, a records-scope erasure of the
   * entry (`created` false when it was being forgotten already: that erasure). From the
   * answer on the entry is gone: 410 entry_forgotten, absent from lists and search.
   */
  async forget(entryId: string): Promise<RequestedErasure> {
    const res = await this.#calls.request('eraser', 'DELETE', `/v1/entries/${seg(entryId)}`);
    const accepted = (await res.json()) as ErasureAccepted;
    return { ...accepted, created: res.status === 202 };
  }

  get(erasureId: string): Promise<Erasure> {
    return this.#calls.json<Erasure>('eraser', 'GET', `/v1/erasures/${seg(erasureId)}`);
  }

  /** One page of `GET /v1/erasures` (ordered by creation), optionally of one subject. */
  page(options: PageOptions & { readonly subject?: string } = {}): Promise<ErasurePage> {
    return this.#calls.json<ErasurePage>('eraser', 'GET', `/v1/erasures${query({ subject: options.subject, limit: options.limit, cursor: options.cursor })}`);
  }

  /** Every page, following `nextCursor`. */
  pages(options: Omit<PageOptions, 'cursor'> & { readonly subject?: string } = {}): AsyncGenerator<ErasurePage> {
    return followPages((cursor) => this.page({ ...options, ...(cursor !== undefined ? { cursor } : {}) }));
  }

  /** Every erasure (of the subject, when named), page after page: `for await (const e of lethe.erasures.list())`. */
  async *list(options: Omit<PageOptions, 'cursor'> & { readonly subject?: string } = {}): AsyncGenerator<Erasure> {
    for await (const page of this.pages(options)) yield* page.erasures;
  }

  /** The erasure's transitions as they happen, until it ends (`followErasure`). */
  events(erasureId: string, options: FollowOptions = {}): AsyncGenerator<ErasureTransition> {
    return followErasure(this.#calls.client('eraser'), erasureId, options);
  }

  /**
   * Follows the erasure until it is completed, incomplete or failed and answers its
   * view. Events are followed while the stream holds; if it cannot be followed the
   * erasure is read every `pollMs` instead.
   */
  async wait(erasureId: string, options: WaitOptions = {}): Promise<Erasure> {
    const signals = [...(options.signal ? [options.signal] : []), ...(options.timeoutMs !== undefined ? [AbortSignal.timeout(options.timeoutMs)] : [])];
    const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    const follow = { ...options, ...(signal ? { signal } : {}) };
    try {
      for await (const t of this.events(erasureId, follow)) options.onStep?.(t);
    } catch (e) {
      if (!(e instanceof ErasureProgressLostError)) throw e;
    }
    for (;;) {
      const view = await this.#calls.json<Erasure>('eraser', 'GET', `/v1/erasures/${seg(erasureId)}`, signal ? { signal } : {});
      if (TERMINAL.has(view.status)) return view;
      await sleep(options.pollMs ?? 500, signal);
    }
  }

  /** The erasure's signed certificate alone (409 conflict while it has none yet). */
  certificate(erasureId: string): Promise<CertificateView> {
    return this.#calls.json<CertificateView>('eraser', 'GET', `/v1/erasures/${seg(erasureId)}/certificate`);
  }

  /**
   * A shareable link to the report (`POST /v1/erasures/{id}/report-link`): it opens the
   * report alone, without a token, until it expires (default 7 days, at most 30).
   */
  reportLink(erasureId: string, options: { readonly expiresInSeconds?: number } = {}): Promise<ReportLink> {
    return this.#calls.json<ReportLink>('eraser', 'POST', `/v1/erasures/${seg(erasureId)}/report-link`, { body: { ...options } });
  }

  /** The self-contained HTML report. */
  async report(erasureId: string): Promise<string> {
    return (await this.#calls.request('eraser', 'GET', `/v1/erasures/${seg(erasureId)}/report`, { accept: 'text/html' })).text();
  }

  /**
   * Re-keys other subjects' logs without the named entries (content the probe found there), then probes again. Only
   * records the last probe named are taken (422 not_a_match); `override` (the admin role's token) takes others, with a reason.
   */
  redact(erasureId: string, ids: readonly string[], options: { readonly override?: { readonly reason: string } } = {}): Promise<ErasureAccepted> {
    const role = options.override ? 'admin' : 'eraser';
    return this.#calls.json<ErasureAccepted>(role, 'POST', `/v1/erasures/${seg(erasureId)}/redactions`, {
      body: { ids, ...(options.override ? { override: options.override } : {}) },
    });
  }

  /**
   * Proposes that named records do not carry the subject's content: a proposal changes nothing until a second principal
   * approves it (`approveDismissal`). A near copy cannot be dismissed (422 near_copy).
   */
  dismiss(erasureId: string, matches: ReadonlyArray<{ readonly id: string; readonly reason: string }>): Promise<DismissalAccepted> {
    return this.#calls.json<DismissalAccepted>('eraser', 'POST', `/v1/erasures/${seg(erasureId)}/dismissals`, { body: { matches } });
  }

  /** Approves a proposed dismissal with the approver role's token (never the proposer's, nor the requester's): the probe runs again. */
  approveDismissal(erasureId: string, dismissalId: string): Promise<DismissalAccepted> {
    return this.#calls.json<DismissalAccepted>('approver', 'POST', `/v1/erasures/${seg(erasureId)}/dismissals/${seg(dismissalId)}/approve`);
  }

  /** Rejects a proposed dismissal, or revokes an approved ruling (the probe runs again and counts its records). */
  revokeDismissal(erasureId: string, dismissalId: string, options: { readonly reason?: string } = {}): Promise<DismissalAccepted> {
    return this.#calls.json<DismissalAccepted>('approver', 'POST', `/v1/erasures/${seg(erasureId)}/dismissals/${seg(dismissalId)}/revoke`, {
      body: { ...options },
    });
  }

  /** Takes a failed erasure up again at the step that failed. */
  resume(erasureId: string): Promise<Erasure> {
    return this.#calls.json<Erasure>('eraser', 'POST', `/v1/erasures/${seg(erasureId)}/resume`);
  }
}
