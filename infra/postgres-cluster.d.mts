/** Types of infra/postgres-cluster.mjs (plain JavaScript: scripts/test.mjs imports it before anything is compiled). */
type Env = Record<string, string | undefined>;

export declare const DEFAULT_ADMIN_URL: string;
export declare function adminUrlFrom(env?: Env): string;
export declare function endpointOf(url: string): { host: string; port: number; socket: string | undefined; shown: string };
export declare function probe(url: string, timeoutMs?: number): Promise<{ answers: boolean; why?: string; other?: boolean }>;
export declare function serverBinDir(env?: Env): string;

export declare function cacheRootFrom(env?: Env): string;
export declare function running(pid: number): boolean;
export declare function postmasterPid(dataDir: string): number | undefined;

export interface PrivateCluster {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly pid: number | undefined;
  readonly initialized: boolean;
  readonly initSeconds: number;
  readonly startSeconds: number;
  /** The cache root the cluster's user could not reach (the cluster is under /var/cache/lethe instead). */
  readonly movedFrom: string | undefined;
  /** The user the server runs as (when this process is root). */
  readonly user: string | undefined;
  /** Stops the server (pg_ctl stop -m fast) and releases the folder; synchronous and idempotent. */
  stop(): void;
}

export declare function startPrivateCluster(options: { binDir: string; cacheRoot: string; env?: Env; owner?: number }): Promise<PrivateCluster>;
export declare function ensurePostgres(options?: {
  env?: Env;
  say?: (line: string) => void;
  owner?: number;
}): Promise<{ url: string; provisioned: false } | { url: string; provisioned: true; cluster: PrivateCluster }>;
