/**
 * A small client of Toxiproxy's HTTP API (the server is started once for the suite by
 * test/support/global-setup.ts, or by a benchmark through infra/toxiproxy-server.ts). A proxy listens
 * on a free loopback port and forwards to an upstream; toxics degrade it (latency,
 * stalls, resets, bandwidth, a byte limit); disabling it closes every connection and
 * refuses new ones until it is enabled again. No vitest import: the tests and the benchmarks share it.
 *
 *   const proxy = await new Toxiproxy(inject('toxiproxy').apiUrl).create('pg', '127.0.0.1:5432');
 *   await proxy.add({ type: 'latency', attributes: { latency: 5 } });
 *   await proxy.down(); … await proxy.up();
 *   await proxy.delete();
 */
import { randomBytes } from 'node:crypto';

export type Toxic =
  /** Every chunk delayed by `latency` ms (± `jitter`). */
  | { type: 'latency'; attributes: { latency: number; jitter?: number } }
  /** Data stops flowing; the connection is closed after `timeout` ms, never when 0 (a stall until the toxic is removed). */
  | { type: 'timeout'; attributes: { timeout: number } }
  /** The connection is reset (TCP RST) after `timeout` ms; at once when 0. */
  | { type: 'reset_peer'; attributes: { timeout: number } }
  /** At most `rate` KB/s. */
  | { type: 'bandwidth'; attributes: { rate: number } }
  /** The connection is closed once `bytes` bytes went through. */
  | { type: 'limit_data'; attributes: { bytes: number } };

export interface ToxicOptions {
  /** A name of the toxic's own (default: its type and a random suffix). */
  readonly name?: string;
  /** Which direction it acts on: `downstream` (upstream → client, default) or `upstream` (client → upstream). */
  readonly stream?: 'upstream' | 'downstream';
  /** The share of connections it applies to (default 1). */
  readonly toxicity?: number;
}

export class ToxiproxyError extends Error {}

async function call<T>(api: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${api}${path}`, {
    method,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new ToxiproxyError(`toxiproxy ${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

export class TcpProxy {
  readonly #api: string;
  readonly name: string;
  /** host:port the proxy listens on (a free loopback port, kept across down/up). */
  readonly listen: string;
  readonly upstream: string;

  constructor(api: string, name: string, listen: string, upstream: string) {
    this.#api = api;
    this.name = name;
    this.listen = listen;
    this.upstream = upstream;
  }

  get port(): number {
    return Number(this.listen.slice(this.listen.lastIndexOf(':') + 1));
  }

  get host(): string {
    return this.listen.slice(0, this.listen.lastIndexOf(':'));
  }

  /** Adds a toxic; answers its name (for remove). */
  async add(toxic: Toxic, options: ToxicOptions = {}): Promise<string> {
    const name = options.name ?? `${toxic.type}_${randomBytes(3).toString('hex')}`;
    await call(this.#api, 'POST', `/proxies/${this.name}/toxics`, {
      name,
      type: toxic.type,
      stream: options.stream ?? 'downstream',
      toxicity: options.toxicity ?? 1,
      attributes: toxic.attributes,
    });
    return name;
  }

  /** Adds the toxic in both directions; answers both names. */
  async addBoth(toxic: Toxic): Promise<string[]> {
    return [await this.add(toxic, { stream: 'downstream' }), await this.add(toxic, { stream: 'upstream' })];
  }

  async remove(toxicName: string): Promise<void> {
    await call(this.#api, 'DELETE', `/proxies/${this.name}/toxics/${toxicName}`);
  }

  /** Removes every toxic of this proxy. */
  async clear(): Promise<void> {
    const toxics = await call<Array<{ name: string }>>(this.#api, 'GET', `/proxies/${this.name}/toxics`);
    for (const t of toxics) await this.remove(t.name);
  }

  /** Disables the proxy: open connections are closed, new ones refused. */
  async down(): Promise<void> {
    await call(this.#api, 'POST', `/proxies/${this.name}`, { enabled: false });
  }

  /** Enables it again, on the same port. */
  async up(): Promise<void> {
    await call(this.#api, 'POST', `/proxies/${this.name}`, { enabled: true });
  }

  async delete(): Promise<void> {
    await call(this.#api, 'DELETE', `/proxies/${this.name}`);
  }
}

export class Toxiproxy {
  readonly apiUrl: string;

  constructor(apiUrl: string) {
    this.apiUrl = apiUrl.replace(/\/$/, '');
  }

  /** A proxy to `upstream` (host:port) on a free loopback port; the name gets a random suffix (test files share one server). */
  async create(name: string, upstream: string): Promise<TcpProxy> {
    const unique = `${name}_${randomBytes(4).toString('hex')}`;
    const p = await call<{ name: string; listen: string; upstream: string }>(this.apiUrl, 'POST', '/proxies', {
      name: unique,
      listen: '127.0.0.1:0',
      upstream,
      enabled: true,
    });
    return new TcpProxy(this.apiUrl, p.name, p.listen, p.upstream);
  }
}
