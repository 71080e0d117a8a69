/** The steps, one file each, by name: the worker runs `STEPS[row.step]`. */
import type { StepName } from '../machine.js';
import { cascade } from './cascade.js';
import { certify } from './certify.js';
import { classify } from './classify.js';
import { destroy } from './destroy.js';
import { drainLeases } from './drain-leases.js';
import { fence } from './fence.js';
import { fingerprint } from './fingerprint.js';
import { probe } from './probe.js';
import { propagate } from './propagate.js';
import { redact } from './redact.js';
import type { Step } from './step.js';

export const STEPS: Readonly<Record<StepName, Step>> = {
  classify,
  fingerprint,
  fence,
  destroy,
  drain_leases: drainLeases,
  cascade,
  propagate,
  probe,
  certify,
  redact,
};
