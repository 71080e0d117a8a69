/**
 * Text helpers the report's parts share: HTML escaping, short ids, and the way numbers,
 * percentages and times are written on the page. Every string taken from the view goes
 * through `escapeHtml` before it reaches markup; `time` escapes what it is given.
 */

/** Escapes text for HTML element content and quoted attribute values (and SVG, which parses the same way here). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: { readonly [c: string]: string } = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `entry_Ab12…`: the type prefix and four characters; the full id goes in a title. */
export function shortId(id: string): string {
  if (id.length <= 12) return id;
  const cut = id.indexOf('_');
  if (cut > 0 && cut <= 10) return `${id.slice(0, cut + 5)}…`;
  return `${id.slice(0, 10)}…`;
}

export function num(n: number): string {
  return Number.isFinite(n) ? String(Math.round(n * 10) / 10) : '0';
}

export function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return String(Number(n.toPrecision(6)));
}

export function percent(fraction: number): string {
  if (!Number.isFinite(fraction)) return String(fraction);
  return `${(fraction * 100).toFixed(1)}%`;
}

export function barWidth(fraction: number): string {
  if (!Number.isFinite(fraction)) return '0';
  return String(Math.round(Math.min(1, Math.max(0, fraction)) * 1000) / 10);
}

/** An ISO time as `2026-11-30 12:00:01 UTC` in a <time>, or the raw text when it does not parse. */
export function time(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return escapeHtml(iso);
  const shown = `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  return `<time datetime="${escapeHtml(iso)}">${shown}</time>`;
}
