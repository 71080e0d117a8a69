/**
 * Structured JSON logs (pino). Never log key material, tokens or record plaintext:
 * the redact list is a second line of defence, not the first.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'lethe' },
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', 'dek', 'key', 'rootKey', '*.dek', '*.token'],
        censor: '[redacted]',
      },
    },
    destination ?? pino.destination({ dest: 2, sync: false }),
  );
}

/**
 * A loggable summary of an error. Drizzle's query errors carry the query's
 * parameters in their message (wrapped keys, subject hashes): log the driver's cause
 * instead, never the parameters.
 */
export function describeError(err: unknown): { name: string; code?: string; message: string } {
  if (!(err instanceof Error)) return { name: 'unknown', message: String(err) };
  const cause = (err as { cause?: unknown }).cause;
  const code = (err as { code?: unknown }).code ?? (cause as { code?: unknown } | undefined)?.code;
  const message = err.message.startsWith('Failed query:') ? `query failed: ${cause instanceof Error ? cause.message : 'unknown cause'}` : err.message;
  return { name: err.name, ...(typeof code === 'string' ? { code } : {}), message };
}
