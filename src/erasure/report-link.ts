/**
 * Shareable report links: `POST /v1/erasures/{id}/report-link` (eraser or admin) answers
 * `GET /v1/erasures/{id}/report?exp=<unix seconds>&sig=<base64url>`, which a browser
 * opens without a bearer token until `exp`. The signature is HMAC-SHA256 (@noble/hashes,
 * through `KeyedHasher`) under the `report-link` system subkey — a key used for nothing
 * else — over a domain label, the erasure id and the expiry, so a link names one
 * erasure's report and one expiry: another erasure, a later expiry or any other route
 * does not verify. It is checked in constant time. Every issuance is audited
 * (`erasure.report.link`: who, which erasure, until when — never the signature, which is
 * the credential). A link cannot be revoked before it expires: keep expiries short.
 */
import { constantTimeEqual, fromBase64Url, KeyedHasher, toBase64Url, utf8 } from '../crypto/index.js';
import type { Database } from '../db/client.js';
import { LetheError } from '../errors.js';
import type { AuditLog } from '../vault/audit.js';

/** How long a link lasts when the request does not say (7 days). */
export const DEFAULT_LINK_SECONDS = 7 * 24 * 3600;
/** The longest a link may last (30 days). */
export const MAX_LINK_SECONDS = 30 * 24 * 3600;
/** The shortest a link may last (a minute). */
export const MIN_LINK_SECONDS = 60;

/** What is MACed: the purpose, the erasure and the expiry, separated by NUL (neither may contain one). */
const DOMAIN = 'lethe/v1/report-link';
/** A signature is the whole 32-byte HMAC, base64url. */
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;
/** An expiry is Unix seconds, at most 12 digits. */
const EXPIRY = /^[0-9]{1,12}$/;

export interface ReportLink {
  /** The report's path with its query: `/v1/erasures/{id}/report?exp=…&sig=…`. */
  readonly path: string;
  readonly expiresAt: Date;
}

export interface ReportLinkDeps {
  readonly db: Database;
  readonly audit: AuditLog;
  /** not_found for no such erasure (the engine's `status`). */
  readonly exists: (erasureId: string) => Promise<unknown>;
}

export class ReportLinks {
  readonly #mac: KeyedHasher;
  readonly #d: ReportLinkDeps;

  /** `key`: the `report-link` system subkey; the caller zeroes it after (the hasher keeps its own keyed state). */
  constructor(key: Uint8Array, deps: ReportLinkDeps) {
    this.#mac = new KeyedHasher(key);
    this.#d = deps;
  }

  /** A link to the erasure's report valid for `seconds` (default 7 days, 60 s to 30 days), audited. */
  async issue(erasureId: string, seconds: number | undefined, actor: string, now = new Date()): Promise<ReportLink> {
    const lifetime = seconds ?? DEFAULT_LINK_SECONDS;
    if (!Number.isInteger(lifetime) || lifetime < MIN_LINK_SECONDS || lifetime > MAX_LINK_SECONDS) {
      throw new LetheError('validation_failed', `body.expiresInSeconds: an integer from ${MIN_LINK_SECONDS} to ${MAX_LINK_SECONDS} (30 days)`);
    }
    await this.#d.exists(erasureId);
    const exp = Math.floor(now.getTime() / 1000) + lifetime;
    const expiresAt = new Date(exp * 1000);
    await this.#d.db.transaction((tx) =>
      this.#d.audit.append(tx, [{ actor, action: 'erasure.report.link', detail: { erasureId, expiresAt: expiresAt.toISOString() } }]),
    );
    const query = new URLSearchParams({ exp: String(exp), sig: toBase64Url(this.#signature(erasureId, exp)) });
    return { path: `/v1/erasures/${erasureId}/report?${query.toString()}`, expiresAt };
  }

  /**
   * Throws forbidden unless `sig` is this vault's signature of (erasureId, exp) and `exp`
   * has not passed. The detail says expired only for a genuine link.
   */
  verify(erasureId: string, exp: string | undefined, sig: string | undefined, now = new Date()): void {
    if (exp === undefined || sig === undefined || !EXPIRY.test(exp) || !SIGNATURE.test(sig)) {
      throw new LetheError('forbidden', 'a report link needs both exp (Unix seconds) and sig (base64url) as issued by POST /v1/erasures/{id}/report-link');
    }
    const given = fromBase64Url(sig);
    const expected = this.#signature(erasureId, Number(exp));
    if (!given || !constantTimeEqual(given, expected)) throw new LetheError('forbidden', 'the report link is not valid for this report');
    if (Number(exp) * 1000 <= now.getTime()) throw new LetheError('forbidden', 'the report link has expired: ask for a new one');
  }

  /** Wipes the keyed state. */
  close(): void {
    this.#mac.destroy();
  }

  #signature(erasureId: string, exp: number): Uint8Array {
    return this.#mac.hash(utf8.encode(`${DOMAIN}\0${erasureId}\0${exp}`));
  }
}
