/**
 * SoftHSM2 tokens for the tests and the benchmarks: a real PKCS#11 token in a
 * temporary directory.
 *
 * SoftHSM reads its configuration file (SOFTHSM2_CONF) when the module is initialized
 * (C_Initialize), and a process initializes a module once: so a process has ONE
 * configuration and one token directory, made on first use and removed at exit, and
 * each `createSoftHsmToken` initializes one more token in it (`--free`: the next free
 * slot). This sets process.env.SOFTHSM2_CONF to that configuration.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const SOFTHSM_MODULE = process.env.LETHE_SOFTHSM_MODULE ?? '/usr/lib/softhsm/libsofthsm2.so';
const MISSING = 'SoftHSM2 is needed: apt-get install -y softhsm2 (or run infra/softhsm.sh)';

export interface SoftHsmToken {
  /** The PKCS#11 module to load. */
  readonly module: string;
  /** The SoftHSM configuration file (also in process.env.SOFTHSM2_CONF). */
  readonly conf: string;
  /** The token directory shared by this process's tokens. */
  readonly dir: string;
  readonly tokenLabel: string;
  /** The user PIN (a test PIN). */
  readonly pin: string;
  /**
   * Deletes this token (softhsm2-util --delete-token); the last one made also removes
   * the process's token directory, so close every store first.
   */
  cleanup(): Promise<void>;
}

let shared: { root: string; conf: string; dir: string } | undefined;
let counter = 0;
/** Tokens made and not yet cleaned up: the directory goes with the last one (or at exit). */
let live = 0;

function util(): string {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir, 'softhsm2-util');
    if (existsSync(candidate)) return candidate;
  }
  if (existsSync('/usr/bin/softhsm2-util')) return '/usr/bin/softhsm2-util';
  throw new Error(MISSING);
}

/** This process's SoftHSM configuration and token directory, made on first use. */
function processConf(): { root: string; conf: string; dir: string } {
  if (shared) return shared;
  if (!existsSync(SOFTHSM_MODULE)) throw new Error(MISSING);
  const root = mkdtempSync(path.join(tmpdir(), 'lethe-softhsm-'));
  const dir = path.join(root, 'tokens');
  execFileSync('mkdir', ['-m', '700', dir]);
  const conf = path.join(root, 'softhsm2.conf');
  writeFileSync(conf, `directories.tokendir = ${dir}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`, { mode: 0o600 });
  process.on('exit', () => rmSync(root, { recursive: true, force: true }));
  process.env.SOFTHSM2_CONF = conf;
  shared = { root, conf, dir };
  return shared;
}

/** Initializes a new token in this process's SoftHSM token directory. */
export async function createSoftHsmToken(opts: { label?: string; pin?: string } = {}): Promise<SoftHsmToken> {
  const bin = util();
  const { root, conf, dir } = processConf();
  const tokenLabel = opts.label ?? `lethe-test-${process.pid}-${++counter}`;
  const pin = opts.pin ?? `user-pin-${process.pid}-${counter}`;
  const env = { ...process.env, SOFTHSM2_CONF: conf };
  try {
    execFileSync(bin, ['--init-token', '--free', '--label', tokenLabel, '--pin', pin, '--so-pin', `so-${pin}`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: Buffer; stdout?: Buffer };
    throw new Error(`softhsm2-util could not initialize token ${tokenLabel}: ${String(err.stderr ?? '') || String(err.stdout ?? '')}`.trim());
  }
  live++;
  let deleted = false;
  return {
    module: SOFTHSM_MODULE,
    conf,
    dir,
    tokenLabel,
    pin,
    async cleanup() {
      if (deleted) return;
      deleted = true;
      try {
        execFileSync(bin, ['--delete-token', '--token', tokenLabel], { env, stdio: 'ignore' });
      } finally {
        // vitest's workers may end without an 'exit' event: the last cleanup removes the directory
        if (--live === 0 && shared?.root === root) {
          rmSync(root, { recursive: true, force: true });
          shared = undefined;
        }
      }
    },
  };
}
