/**
 * Every relative link in the repository's Markdown resolves: the file or folder it names
 * exists, and an #anchor into a Markdown file (or within the same file) names one of its
 * headings by GitHub's slug. The README moved most of its text into docs/, and links
 * between those pages are what breaks silently when a page or heading moves again.
 * Also: the README stays a page (issue 33: about 200 lines).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Tracked Markdown files and new ones not ignored yet (a page written but not committed is checked too). */
function markdownFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', '*.md'], { cwd: root, encoding: 'utf8' });
  const files = out.split('\0').filter((f) => f !== '' && !f.startsWith('node_modules/') && existsSync(path.join(root, f)));
  return [...new Set(files)].sort();
}

/**
 * The text with code blocks and inline code blanked (same length, newlines kept), so a
 * link shown as code is not taken for a link and line numbers still count true.
 */
function blankCode(text: string): string {
  const lines = text.split('\n');
  let fence: string | undefined;
  const kept = lines.map((line) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      // a closing fence: the same character, at least as many, nothing after it
      const closing = /^\s{0,3}(`{3,}|~{3,})\s*$/.exec(line)?.[1];
      if (closing !== undefined && closing[0] === fence[0] && closing.length >= fence.length) fence = undefined;
      return ' '.repeat(line.length);
    }
    if (marker !== undefined) {
      fence = marker;
      return ' '.repeat(line.length);
    }
    return line;
  });
  // inline code: a run of backticks up to a run of the same length (CommonMark), across a
  // line break but not a blank line (a stray backtick must not hide a paragraph's links)
  return kept.join('\n').replace(/(?<!`)(`+)(?!`)((?:[^\n]|\n(?![ \t]*\n))*?[^`])\1(?!`)/g, (m) => m.replace(/[^\n]/g, ' '));
}

/** GitHub's heading anchor (github-slugger): lower case, punctuation but hyphens dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '')
    .replace(/\*\*|__|\*/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/**
 * The anchors a Markdown file offers: its headings' slugs (repeats get -1, -2…) and explicit
 * HTML ids. A heading is slugged from its own text, inline code included: blankCode must not hide it.
 */
function anchorsOf(text: string): Set<string> {
  const blanked = blankCode(text).split('\n');
  const lines = text.split('\n');
  // keep a heading line's original text when the line is not inside a fence (its blanked form is not all spaces)
  const merged = lines.map((line, i) => (/^\s{0,3}#{1,6}\s/.test(blanked[i] ?? '') ? line : (blanked[i] ?? ''))).join('\n');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of merged.split('\n')) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  }
  return out;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

/** Inline links and images `[text](target "title")`, `<target>` forms, and reference definitions `[x]: target`. */
function links(file: string, text: string): Link[] {
  const blanked = blankCode(text);
  const found: Link[] = [];
  const lineOf = (index: number) => blanked.slice(0, index).split('\n').length;
  for (const m of blanked.matchAll(/\]\(\s*(<[^>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)) {
    found.push({ file, line: lineOf(m.index), target: m[1]!.replace(/^<|>$/g, '') });
  }
  for (const m of blanked.matchAll(/^\s{0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)/gm)) {
    found.push({ file, line: lineOf(m.index), target: m[1]!.replace(/^<|>$/g, '') });
  }
  return found;
}

/** Why a link does not resolve, or undefined when it does (external links are not checked). */
function broken(link: Link, anchorCache: Map<string, Set<string>>): string | undefined {
  const { target } = link;
  if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return undefined;
  const hash = target.indexOf('#');
  const pathPart = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const rel = decodeURIComponent(pathPart.split('?')[0]!);
  const resolved = rel === '' ? path.join(root, link.file) : rel.startsWith('/') ? path.join(root, rel) : path.resolve(root, path.dirname(link.file), rel);
  if (!resolved.startsWith(root)) return `${rel} leaves the repository`;
  if (!existsSync(resolved)) return `${rel} does not exist`;
  if (anchor === undefined || anchor === '' || !resolved.endsWith('.md') || !statSync(resolved).isFile()) return undefined;
  let known = anchorCache.get(resolved);
  if (known === undefined) {
    known = anchorsOf(readFileSync(resolved, 'utf8'));
    anchorCache.set(resolved, known);
  }
  return known.has(anchor) ? undefined : `no heading of ${path.relative(root, resolved)} has the anchor #${anchor}`;
}

describe('Markdown links', () => {
  it('slugs headings as GitHub does', () => {
    expect(slug('The two commands')).toBe('the-two-commands');
    expect(slug('LangGraph.js store: `@lethe/client/langgraph`')).toBe('langgraphjs-store-letheclientlanggraph');
    expect(slug('Faults: what a client sees, what retries')).toBe('faults-what-a-client-sees-what-retries');
    expect(slug('What does an erasure do — and what not?')).toBe('what-does-an-erasure-do--and-what-not');
    expect([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n## A\n')]).toEqual(['a', 'a-1', 'a-2']);
  });

  it('finds links outside code only, with their lines', () => {
    const text = 'see [a](a.md)\n`[b](b.md)`\n```\n[c](c.md)\n```\n[d](<d e.md#x> "t")\n[e]: e.md\n';
    expect(links('x.md', text)).toEqual([
      { file: 'x.md', line: 1, target: 'a.md' },
      { file: 'x.md', line: 6, target: 'd e.md#x' },
      { file: 'x.md', line: 7, target: 'e.md' },
    ]);
  });

  it('every relative link and anchor in every Markdown file resolves', () => {
    const files = markdownFiles();
    expect(files).toContain('README.md');
    const cache = new Map<string, Set<string>>();
    const problems: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const link of links(file, readFileSync(path.join(root, file), 'utf8'))) {
        checked++;
        const why = broken(link, cache);
        if (why !== undefined) problems.push(`${link.file}:${link.line}: (${link.target}) ${why}`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(problems).toEqual([]);
  });

  it('README.md fits on a page (at most 250 lines)', () => {
    const lines = readFileSync(path.join(root, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(250);
  });
});
