/**
 * A real local-kms server (an AWS KMS-compatible API, github.com/nsmithuk/local-kms) for
 * the AWS KMS epoch-store tests and the benchmarks: installed from source by
 * infra/local-kms.sh (cached after the first build), started with a temporary data
 * directory, stopped afterwards.
 *
 * local-kms binds every interface (":PORT"; it has no option for the address). It is
 * started with PORT=0, so the kernel picks a free port (no race with another process
 * taking a port chosen beforehand), and the port is read from its "Local KMS started on
 * 0.0.0.0:N" line; clients use the loopback address. It checks no credentials or
 * signatures: any access key is accepted.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { installedBinary, stopChild } from './local-server.js';

export interface LocalKmsServer {
  /** e.g. http://127.0.0.1:41234 */
  readonly endpoint: string;
  readonly region: string;
  readonly accountId: string;
  readonly dataDir: string;
  /** Stops the server and removes its data directory. */
  stop(): Promise<void>;
}

/** The local-kms binary, building it from source the first time. Throws a plain message when it cannot. */
export function localKmsBinary(): string {
  return installedBinary('local-kms.sh', 'local-kms (an AWS KMS-compatible server) is needed by the AWS KMS tests');
}

const STARTED = /Local KMS started on [^\s:]*:(\d+)/;
// logrus colours its level names even when not on a terminal
const ANSI = /\u001b\[[0-9;]*m/g;

/** Starts local-kms on a kernel-chosen port with a fresh data directory and waits until it answers a KMS call. */
export async function startLocalKms(binary: string, options: { region?: string; accountId?: string } = {}): Promise<LocalKmsServer> {
  const region = options.region ?? 'eu-west-2';
  const accountId = options.accountId ?? '111122223333';
  const dataDir = mkdtempSync(path.join(tmpdir(), 'lethe-local-kms-'));
  const child: ChildProcess = spawn(binary, [], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: '0',
      KMS_REGION: region,
      KMS_ACCOUNT_ID: accountId,
      KMS_DATA_PATH: dataDir,
      // no seed file: start empty (the default path is /init/seed.yaml)
      KMS_SEED_PATH: path.join(dataDir, 'no-seed.yaml'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Its log lines name operations and key ARNs, never plaintext; only the tail is kept, for a failure message.
  let output = '';
  let port: number | undefined;
  const onData = (d: Buffer): void => {
    output = (output + d.toString().replace(ANSI, '')).slice(-8192);
    const m = STARTED.exec(output);
    if (m && port === undefined) port = Number(m[1]);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);

  const stop = async (): Promise<void> => {
    await stopChild(child);
    rmSync(dataDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(`local-kms exited with ${child.exitCode}: ${output}`);
    }
    if (port !== undefined) {
      try {
        // any well-formed KMS call proves it serves requests
        const res = await fetch(`http://127.0.0.1:${port}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'TrentService.ListKeys' },
          body: '{}',
        });
        if (res.ok) break;
      } catch {
        // not answering yet
      }
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`local-kms did not answer in 30 s: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { endpoint: `http://127.0.0.1:${port}`, region, accountId, dataDir, stop };
}
