/**
 * Headless Chromium for the browser tests: Debian's (`apt-get install -y chromium`, done
 * by .ci/run), or the binary named by LETHE_CHROMIUM. A missing or broken browser is an
 * Error naming the fix: the tests fail with it, they never skip.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = process.env.LETHE_CHROMIUM || '/usr/bin/chromium';

/** Starts Chromium, or throws why it could not (`what` names the test that needs it). */
export async function launchChromium(what: string): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${what} needs Chromium at ${CHROMIUM}, and there is none. ` +
        "Install Debian's: apt-get install -y chromium (.ci/run does this), or set LETHE_CHROMIUM to a Chromium binary.",
    );
  }
  try {
    return await chromium.launch({
      executablePath: CHROMIUM,
      // Playwright already turns off background networking, sync and component updates; this machine has no network to spare.
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic'],
      timeout: 30_000,
    });
  } catch (e) {
    throw new Error(`Chromium at ${CHROMIUM} did not start: ${(e as Error).message}`);
  }
}
