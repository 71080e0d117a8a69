/**
 * Runs the one long-lived child of `npm start` (the server) and of `npm test` (the
 * suite) in its own process group, forwarding SIGINT, SIGTERM and SIGHUP to it once
 * (Ctrl-C reaches this script both from the terminal and from npm: a repeat within 1 s
 * is dropped), and ends this process with the child's exit code (128 + the signal's
 * number when a signal ended it). Plain Node: it runs before node_modules exists.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';

/**
 * `what` names the child in the message when it cannot start; `onExit` runs before this
 * process exits with the child's code; `ipc` opens a channel whose end the child takes as
 * this process's death (`lethe serve` then shuts down).
 */
export function runForwardingSignals(file, args, { cwd, what, onExit, ipc = false }) {
  // ipc: a channel the child sees close when this process ends, however it ends (SIGKILL too)
  const stdio = ipc ? ['inherit', 'inherit', 'inherit', 'ipc'] : 'inherit';
  const child = spawn(process.execPath, [file, ...args], { cwd, stdio, detached: true });
  if (ipc) child.channel?.unref();
  const lastSent = new Map();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      const now = Date.now();
      if (now - (lastSent.get(signal) ?? 0) < 1000) return;
      lastSent.set(signal, now);
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  }
  if (ipc) onAncestorDeath(() => child.exitCode === null && child.signalCode === null && child.kill('SIGTERM'));
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

/** Whether a process is npm (it names itself `npm …`, or runs npm-cli.js), from /proc. */
function isNpm(pid) {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return /^npm\b/.test(cmdline[0] ?? '') || cmdline.some((arg) => /npm-cli\.js$/.test(arg));
  } catch {
    return false;
  }
}

/** A process's parent pid from /proc (Linux); undefined where there is none to read. */
function parentOf(pid) {
  try {
    // the command's name, in parentheses, may hold spaces: the fields after its last ')' are fixed
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * Calls `then` once this process's parent is gone, or, run by npm (npm → sh → this), npm
 * is: a SIGKILL reaches only the process it names, and the others would run on.
 */
function onAncestorDeath(then) {
  const parent = process.ppid;
  // npm's shell may exec this script (dash does): then the grandparent is the user's shell, not npm
  const grandparent = process.env.npm_lifecycle_event ? parentOf(parent) : undefined;
  const npm = grandparent !== undefined && isNpm(grandparent) ? grandparent : undefined;
  const alive = (pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return e.code === 'EPERM';
    }
  };
  const timer = setInterval(() => {
    if (process.ppid !== parent || (npm !== undefined && npm > 1 && !alive(npm))) {
      clearInterval(timer);
      then();
    }
  }, 500);
  timer.unref();
}
