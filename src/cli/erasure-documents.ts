/**
 * `lethe erasure certificate | report`: an erasure's signed certificate (what `lethe
 * certificate verify` checks) and its report for a data-protection officer, to stdout or
 * a file (written 0600).
 */
import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { describeError } from '../observability/logger.js';
import { checkErasureId, ERASE_EXIT } from './erasure-args.js';
import { ExitError, out, serviceCall, serviceClient } from './shared.js';

/** Adds `certificate` and `report` to `lethe erasure`. */
export function addErasureDocuments(erasure: Command): void {
  erasure
    .command('certificate')
    .description("The erasure's signed certificate, to stdout or a file.")
    .argument('<erasureId>', 'the erasure (ers_…)')
    .option('-o, --output <file>', 'write the certificate to this file (and print {erasureId, certificate, bytes})')
    .action(async (erasureId: string, opts: { output?: string }) => {
      const path = `/v1/erasures/${checkErasureId(erasureId)}/certificate`;
      const document = await serviceCall(serviceClient('eraser').text('GET', path), ERASE_EXIT.input);
      const text = `${JSON.stringify(JSON.parse(document) as unknown, null, 2)}\n`;
      if (!opts.output) {
        process.stdout.write(text);
        return;
      }
      try {
        await writeFile(opts.output, text, { mode: 0o600 });
      } catch (e) {
        throw new ExitError(`cannot write ${opts.output}: ${describeError(e).message}`, ERASE_EXIT.input);
      }
      out({ erasureId, certificate: opts.output, bytes: Buffer.byteLength(text) });
    });
  erasure
    .command('report')
    .description("The erasure's HTML report, to stdout or a file.")
    .argument('<erasureId>', 'the erasure (ers_…)')
    .option('-o, --output <file>', 'write the HTML to this file (and print {erasureId, report, bytes})')
    .action(async (erasureId: string, opts: { output?: string }) => {
      const path = `/v1/erasures/${checkErasureId(erasureId)}/report`;
      const html = await serviceCall(serviceClient('eraser').text('GET', path, { accept: 'text/html' }), ERASE_EXIT.input);
      if (!opts.output) {
        process.stdout.write(html);
        return;
      }
      try {
        await writeFile(opts.output, html, { mode: 0o600 });
      } catch (e) {
        throw new ExitError(`cannot write ${opts.output}: ${describeError(e).message}`, ERASE_EXIT.input);
      }
      out({ erasureId, report: opts.output, bytes: Buffer.byteLength(html) });
    });
}
