/**
 * The report's appendix: the signed certificate as JSON (the whole document
 * `{ payload, signature, publicKey, algorithm }`, as GET /v1/erasures/{id}/certificate
 * answers it) and how anyone verifies it offline — `lethe certificate verify` against
 * the vault's public signing keys (GET /v1/certificates/keys or /public-key, no token).
 * Printed from a new page.
 */
import type { CertificateView } from '../view.js';
import { escapeHtml } from './html.js';

export function appendix(erasureId: string, cert: CertificateView | undefined, state: 'provisional' | 'final' | undefined): string {
  const id = escapeHtml(erasureId);
  const verify = `<h3>How to verify it</h3>
<ol id="verify-steps">
<li>Save the certificate: copy the JSON below into <code>certificate.json</code>, or fetch it with <code>lethe erasure certificate ${id} -o certificate.json</code> (GET /v1/erasures/${id}/certificate, eraser role).</li>
<li>Check the signature against the vault's public signing keys: <code>lethe certificate verify certificate.json --url &lt;vault base URL&gt;</code>. The keys are public (GET /v1/certificates/keys lists the current and retired ones, GET /v1/certificates/public-key the current one; no token needed); <code>--public-key &lt;key&gt;</code> trusts one key given by hand instead.</li>
<li>It is valid only if the key named in the payload (<code>signingKeyId</code>) is one of those keys and the Ed25519 signature holds over the payload's canonical JSON. The public key the certificate carries proves nothing by itself.</li>
</ol>`;
  if (!cert) {
    return `<section id="appendix">
<h2>Appendix: the certificate</h2>
<p class="muted" id="no-certificate">No certificate has been signed for this erasure yet${state ? ` (state: ${escapeHtml(state)})` : ''}: it is signed when the erasure finishes.</p>
${verify}
</section>`;
  }
  const document = { payload: cert.payload, signature: cert.signature, publicKey: cert.publicKey, algorithm: cert.algorithm };
  return `<section id="appendix">
<h2>Appendix: the certificate</h2>
<p>The certificate is ${state ? `<strong data-state="${escapeHtml(state)}">${escapeHtml(state)}</strong>` : 'signed'}: an Ed25519 signature over the canonical JSON of its payload, which states what this report shows.</p>
${verify}
<h3>The certificate (JSON)</h3>
<pre id="certificate-json">${escapeHtml(prettyJson(document))}</pre>
</section>`;
}

function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) ?? 'null';
  } catch {
    return '(the certificate could not be written as JSON)';
  }
}
