// produce_arrow.test.mjs — `firth produce --format arrow` fed by an independent Arrow writer
// (apache-arrow for JavaScript, pinned in package.json).
//
// apache-arrow builds a table of the Arrow types firth maps to, with NULLs, writes it as an
// IPC stream, firth produce appends it to tables whose types match exactly (columns in
// another order) or differ (converted by cast), and firth consume --format json must print
// exactly the values written. A compressed stream from this apache-arrow version carries
// wrong length prefixes (see below): firth must refuse it.
//
// Environment: FIRTH (the binary) and FIRTH_TEST_TMP (a scratch directory).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  tableToIPC, compressionRegistry, CompressionType, Table, vectorFromArray, makeVector,
  Bool, Int8, Int32, Int64, Float64, Utf8, Binary, DateDay, TimestampMillisecond,
  TimestampMicrosecond, TimeMillisecond,
} from 'apache-arrow';
import lz4 from 'lz4js';

const FIRTH = process.env.FIRTH;
const TMP = process.env.FIRTH_TEST_TMP;
if (!FIRTH || !TMP) {
  console.error('set FIRTH (the firth binary) and FIRTH_TEST_TMP (a scratch directory)');
  process.exit(2);
}
mkdirSync(TMP, { recursive: true });
const dir = mkdtempSync(join(TMP, 'produce_arrow.'));
const data = join(dir, 'data');
let checks = 0;

function firth(args, input) {
  try {
    return execFileSync(FIRTH, args, { input, maxBuffer: 64 << 20, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
  } catch (e) {
    throw new Error(`firth ${args[0]} failed: ${e.stderr}`);
  }
}
function produce(table, stream) {
  // Errors surface with firth's message: execFileSync throws with stderr attached.
  try {
    return execFileSync(FIRTH, ['produce', '--data-dir', data, '--table', table, '--format', 'arrow', '--verbose'],
      { input: stream, stdio: ['pipe', 'pipe', 'pipe'] }).toString() || 'ok';
  } catch (e) {
    throw new Error(`firth produce failed: ${e.stderr}`);
  }
}
function consume(table) {
  return firth(['consume', '--data-dir', data, '--table', table]).trim().split('\n').filter((l) => l)
    .map((l) => JSON.parse(l));
}

// ---- what apache-arrow writes -----------------------------------------------------------------

const n = 7;
const nth = (f) => Array.from({ length: n }, (_, i) => (i % 3 === 2 ? null : f(i)));
const ms = (y, m, d, hh, mi, ss, mss) => Date.UTC(y, m - 1, d, hh, mi, ss, mss);
const cols = {
  k: vectorFromArray(Array.from({ length: n }, (_, i) => i + 1), new Int32()),
  flag: vectorFromArray(nth((i) => i % 2 === 0), new Bool()),
  small: vectorFromArray(nth((i) => (i % 2 ? -128 : 127)), new Int8()),
  big: vectorFromArray(nth((i) => (i % 2 ? -(2n ** 63n) : 2n ** 63n - 1n)), new Int64()),
  x: vectorFromArray(nth((i) => i / 4 - 0.3), new Float64()),
  name: vectorFromArray(nth((i) => ['tea', 'naïve ☃', '', 'a,"b"\nc'][i % 4]), new Utf8()),
  raw: vectorFromArray(nth((i) => Uint8Array.from([i, 255, 0])), new Binary()),
  day: vectorFromArray(nth((i) => new Date(ms(1969 + i * 10, 12, 31, 0, 0, 0, 0))), new DateDay()),
  at: vectorFromArray(nth((i) => ms(2026, 1, 31, 10, i, 0, 125)), new TimestampMillisecond()),
  clock: vectorFromArray(nth((i) => (i * 3600 + 61) * 1000 + 5), new TimeMillisecond()),
};
const arrowTable = new Table(cols);

const pad = (v, w = 2) => String(v).padStart(w, '0');
function tsText(t, digits) {
  const d = new Date(t);
  const base = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  const frac = String(d.getUTCMilliseconds()).padStart(3, '0').padEnd(digits, '0');
  return digits ? `${base}.${frac}` : base;
}
// The JSON firth prints for row i, for the exactly typed table.
function expectedRow(i) {
  const v = (c) => cols[c].get(i);
  const or = (x, f) => (x === null ? null : f(x));
  return {
    k: i + 1,
    flag: v('flag'),
    small: v('small'),
    big: or(v('big'), (b) => (b < 0n ? -9223372036854775808 : 9223372036854775807)),
    x: v('x'),
    name: v('name'),
    raw: or(v('raw'), (b) => Buffer.from(b).toString('base64')),
    day: or(v('day'), (t) => new Date(t).toISOString().slice(0, 10)),
    at: or(v('at'), (t) => tsText(t, 3)),
    clock: or(v('clock'), (t) => tsText(t, 3).slice(11)),
  };
}

// ---- exact types, columns in another order ---------------------------------------------------

firth(['sql', '--data-dir', data, '-e', `CREATE DATABASE x;
  CREATE TABLE x.exact (clock TIME(3), at TIMESTAMP(3), day DATE, raw BYTES, name STRING,
    x DOUBLE, big BIGINT, small TINYINT, flag BOOLEAN, k INT NOT NULL);
  CREATE TABLE x.lz4 (k INT NOT NULL, flag BOOLEAN, small TINYINT, big BIGINT, x DOUBLE,
    name STRING, raw BYTES, day DATE, at TIMESTAMP(3), clock TIME(3));
  CREATE TABLE x.conv (K BIGINT NOT NULL, FLAG BOOLEAN, SMALL INT, BIG DECIMAL(19, 0),
    X DOUBLE, NAME VARCHAR(8), RAW BYTES, DAY TIMESTAMP(0), AT TIMESTAMP(6), CLOCK TIME(0))`]);

produce('x.exact', tableToIPC(arrowTable, 'stream'));
const exact = consume('x.exact');
assert.equal(exact.length, n, 'rows in x.exact');
for (let i = 0; i < n; i++) {
  const want = expectedRow(i);
  for (const key of Object.keys(want)) {
    // Doubles come back as the shortest text that reads back the same: compare as numbers.
    assert.deepEqual(exact[i][key], want[key], `x.exact row ${i} column ${key}`);
    checks++;
  }
}

// ---- LZ4_FRAME-compressed buffers from this apache-arrow: a writer bug firth must catch -------
//
// The pinned apache-arrow writes the *compressed* length into the 8-byte prefix of each
// compressed buffer, where the format wants the uncompressed length (fixed upstream in
// apache/arrow-js pull request 470). Such a stream is invalid; firth must reject it with a
// clear message and write nothing, rather than trust the prefix.
compressionRegistry.set(CompressionType.LZ4_FRAME, {
  encode: (b) => Uint8Array.from(lz4.compress(b)),
  decode: (b) => Uint8Array.from(lz4.decompress(b)),
});
assert.throws(() => produce('x.lz4', tableToIPC(arrowTable, 'stream', CompressionType.LZ4_FRAME)),
  /stdin record 1: .*LZ4 buffer[\s\S]*nothing was written to x.lz4/);
assert.deepEqual(consume('x.lz4'), [], 'nothing of an invalid stream is written');
checks += 2;

// ---- different types: converted by cast --------------------------------------------------------

produce('x.conv', tableToIPC(arrowTable, 'stream'));
const conv = consume('x.conv');
for (let i = 0; i < n; i++) {
  const want = expectedRow(i);
  const got = conv[i];
  assert.equal(got.K, want.k, `x.conv row ${i} K`);
  assert.equal(got.SMALL, want.small, `x.conv row ${i} SMALL (TINYINT into INT)`);
  const big = cols.big.get(i);
  assert.equal(got.BIG, big === null ? null : big.toString(), `x.conv row ${i} BIG (BIGINT into DECIMAL)`);
  assert.equal(got.NAME, want.name, `x.conv row ${i} NAME (Utf8 into VARCHAR(8))`);
  assert.equal(got.DAY, want.day === null ? null : `${want.day} 00:00:00`, `x.conv row ${i} DAY (DATE into TIMESTAMP)`);
  assert.equal(got.AT, want.at === null ? null : `${want.at}000`, `x.conv row ${i} AT (ms into us)`);
  checks += 6;
}

// A value that does not fit stops produce, names the record, and writes nothing.
const tooLong = new Table({ k: vectorFromArray([1, 2], new Int32()), name: vectorFromArray(['ok', 'much too long'], new Utf8()) });
firth(['sql', '--data-dir', data, '-e', 'CREATE TABLE x.short (k INT, name VARCHAR(5))']);
assert.throws(() => produce('x.short', tableToIPC(tooLong, 'stream')),
  /stdin record 2: column name: value 'much too long' is longer than VARCHAR\(5\)[\s\S]*nothing was written to x.short/);
assert.deepEqual(consume('x.short'), [], 'nothing of the bad batch');
checks += 2;

rmSync(dir, { recursive: true, force: true });
console.log(`produce_arrow: ok (${checks} checks)`);
