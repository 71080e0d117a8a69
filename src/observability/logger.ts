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
