/**
 * Runs the one long-lived child of `npm start` (the server) and of `npm test` (the
 * suite) in its own process group, forwarding SIGINT, SIGTERM and SIGHUP to it once
 * (Ctrl-C reaches this script both from the terminal and from npm: a repeat within 1 s
 * is dropped), and ends this process with the child's exit code (128 + the signal's
 * number when a signal ended it). Plain Node: it runs before node_modules exists.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/**
 * `what` names the child in the message when it cannot start; `onExit` runs before this
 * process exits with the child's code.
 */
export function runForwardingSignals(file, args, { cwd, what, onExit }) {
  const child = spawn(process.execPath, [file, ...args], { cwd, stdio: 'inherit', detached: true });
  const lastSent = new Map();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      const now = Date.now();
      if (now - (lastSent.get(signal) ?? 0) < 1000) return;
      lastSent.set(signal, now);
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  }
  child.on('error', (e) => {
    console.error(`lethe: ${what} could not be started: ${e.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    onExit?.(code, signal);
    process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
  });
  return child;
}
