/** Following an erasure to its end from the command line: each transition as a line (or JSON), then the outcome. */
import { ErasureProgressLostError, followErasure, transitionLine } from '../client/erasures.js';
import { type ServiceClient, UnreachableError } from '../client/http.js';
import type { ErasureTransition, ErasureView } from '../erasure/view.js';
import { ERASE_EXIT } from './erasure-args.js';
import { ExitError, serviceCall, serviceExit, unreachable } from './shared.js';

/**
 * Follows GET /v1/erasures/{id}/events until its `end` event, calling `onStep` per
 * transition (the client's `followErasure`: a broken connection is resumed with
 * Last-Event-ID a few times).
 */
async function followErasureEvents(client: ServiceClient, erasureId: string, onStep: (t: ErasureTransition) => void): Promise<void> {
  try {
    for await (const t of followErasure(client, erasureId)) onStep(t);
  } catch (e) {
    if (e instanceof ErasureProgressLostError) {
      const reason = e.cause instanceof UnreachableError ? unreachable(e.cause) : e.reason;
      throw new ExitError(`lost the erasure's progress (${reason}); it goes on in the service: lethe erasure watch ${erasureId}`, ERASE_EXIT.lost);
    }
    throw serviceExit(e, ERASE_EXIT.input);
  }
}

/** Follows an erasure to its end, prints the summary, and ends with its exit code. */
export async function watchErasure(client: ServiceClient, erasureId: string, json: boolean): Promise<void> {
  await followErasureEvents(client, erasureId, (t) => {
    process.stdout.write(json ? `${JSON.stringify({ step: t })}\n` : `${transitionLine(t)}\n`);
  });
  const view = await serviceCall(client.json<ErasureView>('GET', `/v1/erasures/${erasureId}`), ERASE_EXIT.input);
  if (json) process.stdout.write(`${JSON.stringify(view)}\n`);
  else {
    const p = view.probe;
    const lines = [
      `erasure ${view.erasureId}: ${view.status}${view.class ? ` (class ${view.class})` : ''}`,
      `probe: recovered ${p.recovered} (threshold ${p.threshold}), ${p.matches.length} match(es)`,
      ...p.matches.map((m) => `  match: ${m.id} in ${m.tier} (score ${m.score})`),
      `residuals: ${view.residuals.length}`,
      ...view.residuals.map((r) => `  ${r.tier} ${r.kind}: bound ${r.bound}`),
      ...(view.certificateState ? [`certificate: ${view.certificateState}`] : []),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (view.status === 'completed') return;
  if (view.status === 'incomplete') {
    const kinds = [...new Set(view.residuals.map((r) => r.kind).filter((k) => k === 'cross-subject' || k === 'parametric'))];
    throw new ExitError(`erasure ${erasureId} is incomplete${kinds.length ? ` (${kinds.join(', ')} residual)` : ''}`, ERASE_EXIT.incomplete);
  }
  if (view.status === 'failed') {
    const step = view.steps.find((s) => s.status === 'failed');
    const left = view.left
      ? `; left: key ${view.left.keyDestroyed ? 'destroyed' : view.left.keyFenced ? 'fenced, not destroyed' : 'not fenced'}, data ${view.left.dataReadable ? 'still readable' : 'unreadable'}`
      : '';
    throw new ExitError(
      `erasure ${erasureId} failed${step ? ` at ${step.name}: ${step.detail ?? 'no detail'}` : ''}${left} (once the cause is fixed: lethe erasure resume ${erasureId})`,
      ERASE_EXIT.failed,
    );
  }
  throw new ExitError(`erasure ${erasureId} is still ${view.status} after its events ended`, ERASE_EXIT.lost);
}
