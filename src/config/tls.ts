/**
 * How `lethe serve` may listen: the TLS files read at start (each checked, a problem
 * naming its variable, never the file's contents), and the production rule that keeps
 * tokens and keys off plain HTTP on a reachable address.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { type Config, ConfigError } from './index.js';

/** What the HTTPS server is created with. `key` is the caller's to zero once the server holds it. */
export interface ServerTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Clients must present a certificate signed by this CA (requestCert + rejectUnauthorized). */
  readonly clientCa: Buffer | undefined;
}

/**
 * The cipher suites the HTTPS server offers. TLS 1.3's (all AEAD with ephemeral key
 * exchange) and, for TLS 1.2, only ECDHE with AES-GCM or ChaCha20-Poly1305: forward
 * secret (a stolen server key does not open recorded sessions) and authenticated
 * encryption. Node's default list also negotiates RSA key exchange and CBC suites
 * (`AES128-SHA`). The TLS 1.3 names are listed too: a list without them turns TLS 1.3 off.
 */
export const SERVER_CIPHERS = [
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_GCM_SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
].join(':');

/** The protocol and cipher options every lethe HTTPS server is created with (TLS 1.2 at least, `SERVER_CIPHERS`, the server's order). */
export const SERVER_TLS_OPTIONS = { minVersion: 'TLSv1.2', ciphers: SERVER_CIPHERS, honorCipherOrder: true } as const;

/** 127.0.0.0/8, ::1 (also IPv4-mapped loopback) and `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  if (isIPv4(v4)) return v4.startsWith('127.');
  // the URL parser writes an IPv6 address in its shortest form (0:0:0:0:0:0:0:1 → ::1)
  return isIPv6(h) && new URL(`http://[${h}]`).hostname === '[::1]';
}

/**
 * Refuses (ConfigError naming HOST) a production service that would answer plain HTTP
 * on an address other hosts reach, unless LETHE_BEHIND_TLS_PROXY says a proxy terminates
 * TLS in front of it.
 */
export function checkPlainHttp(config: Pick<Config, 'production' | 'tls' | 'host' | 'behindTlsProxy'>): void {
  if (!config.production || config.tls || config.behindTlsProxy || isLoopbackHost(config.host)) return;
  throw new ConfigError([
    {
      variable: 'HOST',
      message:
        `NODE_ENV is production and HOST ${config.host} is not a loopback address: lethe would hand out keys and take tokens over plain HTTP. ` +
        'Refusing to start. Either set LETHE_TLS_CERT and LETHE_TLS_KEY to serve HTTPS, ' +
        'or set LETHE_BEHIND_TLS_PROXY=true when a TLS-terminating proxy sits in front of lethe',
    },
  ]);
}

function readPem(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([{ variable, message: `cannot read ${file} (${code})` }]);
  }
}

function certificate(variable: string, file: string, pem: Buffer): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    throw new ConfigError([{ variable, message: `${file} does not hold a PEM certificate` }]);
  }
}

/**
 * Reads and checks the TLS files: the certificate parses, the key is an unencrypted PEM
 * private key matching it, the client CA (when set) parses. Undefined when TLS is off.
 */
export function readServerTls(config: Pick<Config, 'tls'>): ServerTls | undefined {
  if (!config.tls) return undefined;
  const { certFile, keyFile, clientCaFile } = config.tls;
  const cert = readPem('LETHE_TLS_CERT', certFile);
  const x509 = certificate('LETHE_TLS_CERT', certFile, cert);
  const key = readPem('LETHE_TLS_KEY', keyFile);
  let matches: boolean;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(key));
  } catch {
    key.fill(0);
    throw new ConfigError([{ variable: 'LETHE_TLS_KEY', message: `${keyFile} does not hold an unencrypted PEM private key` }]);
  }
  if (!matches) {
    key.fill(0);
    throw new ConfigError([{ variable: 'LETHE_TLS_KEY', message: `${keyFile} is not the private key of the certificate in LETHE_TLS_CERT (${certFile})` }]);
  }
  let clientCa: Buffer | undefined;
  if (clientCaFile !== undefined) {
    try {
      clientCa = readPem('LETHE_TLS_CLIENT_CA', clientCaFile);
      certificate('LETHE_TLS_CLIENT_CA', clientCaFile, clientCa);
    } catch (e) {
      key.fill(0);
      throw e;
    }
  }
  return { cert, key, clientCa };
}
