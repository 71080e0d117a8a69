/**
 * A PKCS#11 module loaded once per process, its token found by label and logged in to
 * once, and what its return codes mean.
 *
 * Sessions: the module is loaded and C_Initialize'd once per process (shared by every
 * store on it, finalized when the last one closes). Login is per application and
 * token, so the first store on a token logs in and the last to close logs out; a later
 * store on the same token must present the same PIN (compared as an HMAC under a
 * per-process random key). Each store holds a few sessions; operations on one session
 * run one at a time. Key object handles are cached per epoch and checked (label and
 * id) right before each use, in the same synchronous step as the C_EncryptInit /
 * C_DecryptInit that uses them, so a stale or reused handle is never used for a wrap.
 */
import { realpathSync } from 'node:fs';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import pkcs11js from 'pkcs11js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { constantTimeEqual, randomBytes, zeroize } from '../crypto/index.js';
import { LetheError, isLetheError } from '../errors.js';

export type Handle = Buffer;

export type PKCS11 = InstanceType<typeof pkcs11js.PKCS11>;

export interface TokenLogin {
  refs: number;
  /** HMAC-SHA256 of the PIN under PIN_DIGEST_KEY: a later store must present the same PIN. */
  readonly pinDigest: Uint8Array;
}

export interface LoadedModule {
  readonly lib: PKCS11;
  refs: number;
  /** Whether C_Initialize was ours (only then do we C_Finalize). */
  readonly initializedHere: boolean;
  readonly logins: Map<string, TokenLogin>;
}

/** Modules loaded in this process, by real path. */
export const MODULES = new Map<string, LoadedModule>();

const PIN_DIGEST_KEY = randomBytes(32);

export function code(e: unknown): number | undefined {
  return e instanceof pkcs11js.Pkcs11Error ? e.code : undefined;
}

export function ckr(e: unknown): string {
  return e instanceof Error ? e.message.split('\n')[0]! : 'unknown error';
}

export function acquireModule(modulePath: string): { key: string; entry: LoadedModule } {
  let key: string;
  try {
    key = realpathSync(modulePath);
  } catch (e) {
    throw new LetheError('validation_failed', `the PKCS#11 module ${modulePath} cannot be loaded: ${(e as NodeJS.ErrnoException).code ?? 'not found'}`);
  }
  const known = MODULES.get(key);
  if (known) {
    known.refs++;
    return { key, entry: known };
  }
  const lib = new pkcs11js.PKCS11();
  try {
    lib.load(key);
  } catch (e) {
    throw new LetheError('validation_failed', `the PKCS#11 module ${modulePath} cannot be loaded: ${ckr(e)}`);
  }
  let initializedHere = true;
  try {
    // OS locking: pkcs11js runs the *Async calls on libuv worker threads
    lib.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
  } catch (e) {
    if (code(e) !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      try {
        lib.close();
      } catch {
        // nothing more to release
      }
      throw new LetheError('unavailable', `the PKCS#11 module ${modulePath} failed to initialize: ${ckr(e)}`, { retryable: false });
    }
    initializedHere = false; // initialized by someone else in this process: theirs to finalize
  }
  const entry: LoadedModule = { lib, refs: 1, initializedHere, logins: new Map() };
  MODULES.set(key, entry);
  return { key, entry };
}

export function releaseModule(key: string): void {
  const entry = MODULES.get(key);
  if (!entry || --entry.refs > 0) return;
  MODULES.delete(key);
  try {
    if (entry.initializedHere) entry.lib.C_Finalize();
    entry.lib.close();
  } catch {
    // the process keeps going; the module is unusable either way
  }
}

export const HANDLE_GONE = new Set<number>([pkcs11js.CKR_OBJECT_HANDLE_INVALID, pkcs11js.CKR_KEY_HANDLE_INVALID]);

export const SESSION_LOST = new Set<number>([
  pkcs11js.CKR_SESSION_HANDLE_INVALID,
  pkcs11js.CKR_SESSION_CLOSED,
  pkcs11js.CKR_USER_NOT_LOGGED_IN,
  pkcs11js.CKR_DEVICE_REMOVED,
  pkcs11js.CKR_TOKEN_NOT_PRESENT,
  pkcs11js.CKR_DEVICE_ERROR,
]);

/**
 * What a token answers when a GCM tag does not verify. The standard says
 * CKR_ENCRYPTED_DATA_INVALID; SoftHSM 2.6 answers CKR_GENERAL_ERROR.
 */
export const AUTH_FAILED = new Set<number>([pkcs11js.CKR_ENCRYPTED_DATA_INVALID, pkcs11js.CKR_ENCRYPTED_DATA_LEN_RANGE, pkcs11js.CKR_GENERAL_ERROR]);

/** A token failure no better code describes; never carries secrets (PKCS#11 errors are return-code names). */
export function tokenFailure(what: string, e: unknown): LetheError {
  if (isLetheError(e)) return e;
  const c = code(e);
  if (c !== undefined && SESSION_LOST.has(c)) {
    return new LetheError('unavailable', `the PKCS#11 token could not ${what}: ${ckr(e)} (session lost or token removed)`, { cause: e });
  }
  return new LetheError('unavailable', `the PKCS#11 token could not ${what}: ${ckr(e)}`, { cause: e, retryable: false });
}

/** The slot of the one present token labelled `tokenLabel`; errors name the labels present. */
export function findSlot(lib: PKCS11, modulePath: string, tokenLabel: string): Handle {
  const slots = lib.C_GetSlotList(true);
  if (slots.length === 0) {
    throw new LetheError('unavailable', `no token is present in any slot of the PKCS#11 module ${modulePath}`);
  }
  const labelled = slots.flatMap((slot) => {
    const info = lib.C_GetTokenInfo(slot);
    // a slot with an uninitialized token (SoftHSM always offers one) has no label to name
    return info.flags & pkcs11js.CKF_TOKEN_INITIALIZED ? [{ slot, label: info.label.replace(/[ \0]+$/, '') }] : [];
  });
  const matching = labelled.filter((t) => t.label === tokenLabel);
  if (matching.length === 1) return matching[0]!.slot;
  const names = labelled.map((t) => JSON.stringify(t.label)).join(', ') || 'none initialized';
  if (matching.length > 1) {
    throw new LetheError(
      'validation_failed',
      `${matching.length} tokens of the PKCS#11 module ${modulePath} are labelled ${JSON.stringify(tokenLabel)}; give each a distinct label`,
    );
  }
  throw new LetheError('validation_failed', `no token labelled ${JSON.stringify(tokenLabel)} in the PKCS#11 module ${modulePath}; tokens present: ${names}`);
}

/** Logs the application in to the token once; a later store on the same token must present the same PIN. */
export function login(lib: PKCS11, entry: LoadedModule, loginKey: string, session: Handle, pin: Uint8Array, tokenLabel: string): void {
  const digest = hmac(sha256, PIN_DIGEST_KEY, pin);
  const refused = new LetheError('validation_failed', `the PKCS#11 token ${JSON.stringify(tokenLabel)} refused the PIN (CKR_PIN_INCORRECT)`);
  const known = entry.logins.get(loginKey);
  if (known) {
    if (!constantTimeEqual(known.pinDigest, digest)) throw refused;
    known.refs++;
    return;
  }
  try {
    // pkcs11js passes the PIN as a JavaScript string, which cannot be zeroed
    lib.C_Login(session, pkcs11js.CKU_USER, new TextDecoder().decode(pin));
  } catch (e) {
    const c = code(e);
    if (c === pkcs11js.CKR_PIN_INCORRECT || c === pkcs11js.CKR_PIN_INVALID || c === pkcs11js.CKR_PIN_LEN_RANGE) throw refused;
    if (c === pkcs11js.CKR_PIN_LOCKED) {
      throw new LetheError('unavailable', `the PKCS#11 token ${JSON.stringify(tokenLabel)} has locked its user PIN (CKR_PIN_LOCKED)`, { retryable: false });
    }
    // logged in by other code of this process that does not use this registry: its PIN is not ours to check
    if (c !== pkcs11js.CKR_USER_ALREADY_LOGGED_IN)
      throw new LetheError('unavailable', `the PKCS#11 token ${JSON.stringify(tokenLabel)} refused the login: ${ckr(e)}`, { retryable: false });
  }
  entry.logins.set(loginKey, { refs: 1, pinDigest: digest });
}

export interface Pkcs11Options {
  /** Path of the PKCS#11 module (shared library). */
  readonly module: string;
  /** Label of the token to use (exactly one present token must carry it). */
  readonly tokenLabel: string;
  /** The user PIN (UTF-8). Copied at once: the caller may zero its buffer when open returns. */
  readonly pin: Uint8Array | string;
  /** Prefix of every object label lethe makes in the token (several deployments may share one token). */
  readonly prefix: string;
  /** Sessions this store opens (default 4). */
  readonly sessions?: number;
}

export interface KeyRef {
  readonly handle: Handle;
  readonly kid: Buffer;
}

export interface Session {
  readonly handle: Handle;
  /** Operations on a session run one at a time: each waits for the one before. */
  tail: Promise<unknown>;
  pending: number;
}

/** Opens `count` sessions on the token labelled `opts.tokenLabel` and logs in (once per token); the caller's PIN is copied and zeroed. */
export function openSessions(opts: Pkcs11Options, count: number): { lib: PKCS11; moduleKey: string; loginKey: string; sessions: Session[] } {
  // our own copy of the PIN, zeroed before returning; the PIN never enters a message
  const pin = typeof opts.pin === 'string' ? new TextEncoder().encode(opts.pin) : opts.pin.slice();
  const { key: moduleKey, entry } = acquireModule(opts.module);
  const lib = entry.lib;
  const opened: Handle[] = [];
  let loginKey: string | undefined;
  try {
    const slot = findSlot(lib, opts.module, opts.tokenLabel);
    for (let i = 0; i < count; i++) opened.push(lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION));
    loginKey = `${bytesToHex(slot)}`;
    login(lib, entry, loginKey, opened[0]!, pin, opts.tokenLabel);
  } catch (e) {
    for (const s of opened) {
      try {
        lib.C_CloseSession(s);
      } catch {
        // already gone
      }
    }
    releaseModule(moduleKey);
    throw isLetheError(e) ? e : tokenFailure(`open token ${opts.tokenLabel}`, e);
  } finally {
    zeroize(pin);
  }
  return { lib, moduleKey, loginKey: loginKey!, sessions: opened.map((handle) => ({ handle, tail: Promise.resolve(), pending: 0 })) };
}
