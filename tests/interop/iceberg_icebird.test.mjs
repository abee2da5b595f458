// iceberg_icebird.test.mjs — Iceberg tables written by firth, read by the independent
// icebird reader (npm, pinned in package.json), must give exactly the rows firth's own scan
// returns: a log table with several appends, a table partitioned by a string column with
// rolled files, and a primary-key table with updates and deletes (equality deletes), also
// with its manifests merged (entries carried as EXISTING with their sequence numbers).
//
// iceberg_tool (FIRTH_ICEBERG_TOOL) writes the tables and prints fr_iceberg_scan's rows as
// JSON: BIGINT and TIMESTAMP_LTZ as strings (microseconds), INT and DOUBLE as numbers,
// DATE as "YYYY-MM-DD", NULL as null. icebird reads every file through globalThis.fetch,
// which this test answers from disk for file: URLs, with Range support.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readSync, readFileSync, closeSync, fstatSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { icebergRead } from 'icebird';

const tool = process.env.FIRTH_ICEBERG_TOOL;
if (!tool) throw new Error('FIRTH_ICEBERG_TOOL must name the iceberg_tool binary (set by CTest)');
const base = process.env.FIRTH_TEST_TMP || mkdtempSync(path.join(tmpdir(), 'firth-iceberg-'));
mkdirSync(base, { recursive: true });
const warehouse = mkdtempSync(path.join(base, 'wh-'));

// Serves file: URLs and absolute paths from disk; a Range header gets a 206 with the slice.
const served = { files: 0, ranges: 0 };
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = typeof input === 'string' ? input : input.url;
  if (!url.startsWith('file:') && !url.startsWith('/')) return realFetch(input, init);
  const file = url.startsWith('file:') ? fileURLToPath(url) : url;
  let fd;
  try {
    fd = openSync(file, 'r');
  } catch {
    return new Response('not found', { status: 404, statusText: 'Not Found' });
  }
  try {
    const size = fstatSync(fd).size;
    const headers = new Headers(init?.headers ?? (typeof input === 'string' ? {} : input.headers));
    const range = headers.get('range');
    let start = 0;
    let end = size; // exclusive
    let status = 200;
    if (range) {
      const m = /^bytes=(\d*)-(\d*)$/.exec(range);
      assert.ok(m, `bad Range header ${range}`);
      if (m[1] === '') {
        start = Math.max(0, size - Number(m[2]));
      } else {
        start = Number(m[1]);
        if (m[2] !== '') end = Math.min(size, Number(m[2]) + 1);
      }
      status = 206;
      served.ranges++;
    }
    const buf = Buffer.alloc(Math.max(0, end - start));
    if (buf.length) readSync(fd, buf, 0, buf.length, start);
    served.files++;
    return new Response(buf, {
      status,
      headers: { 'content-length': String(buf.length), 'content-range': `bytes ${start}-${end - 1}/${size}` },
    });
  } finally {
    closeSync(fd);
  }
};

const tables = JSON.parse(execFileSync(tool, ['write', warehouse], { encoding: 'utf8' })).tables;

function firthRows(dir) {
  return JSON.parse(execFileSync(tool, ['scan', dir], { encoding: 'utf8', maxBuffer: 1 << 28 }));
}

// icebird's values in the tool's encoding, by the Iceberg type of each column.
function normalize(row, types) {
  const out = {};
  for (const [name, type] of Object.entries(types)) {
    const v = row[name];
    if (v === null || v === undefined) { out[name] = null; continue; }
    switch (type) {
      case 'long':
        out[name] = BigInt(v).toString();
        break;
      case 'timestamptz':
      case 'timestamp':
        // hyparquet gives a Date (milliseconds) or a bigint of microseconds.
        out[name] = v instanceof Date ? (BigInt(v.getTime()) * 1000n).toString() : BigInt(v).toString();
        break;
      case 'date':
        out[name] = v instanceof Date ? v.toISOString().slice(0, 10) : String(v);
        break;
      case 'int':
      case 'double':
        out[name] = Number(v);
        break;
      default:
        out[name] = v;
    }
  }
  return out;
}

const key = (r) => JSON.stringify(r);
const sorted = (rows) => rows.map(key).sort();

for (const dir of tables) {
  test(`icebird reads ${path.basename(dir)} exactly as firth scans it`, async () => {
    const expected = firthRows(dir);
    assert.ok(expected.length > 0, 'the sample table has rows');
    const tableUrl = 'file://' + dir;
    const rows = await icebergRead({ tableUrl });
    const meta = JSON.parse(readFileSync(path.join(dir, 'metadata', 'v1.metadata.json'), 'utf8'));
    const types = Object.fromEntries(meta.schemas[0].fields.map((f) => [f.name, f.type]));
    const got = rows.map((r) => normalize(r, types));
    assert.equal(got.length, expected.length, 'row count');
    assert.deepEqual(sorted(got), sorted(expected));
  });
}

test('the merged PK table holds the rounds after the merges', () => {
  const rows = firthRows(tables[3]);
  const ids = new Set(rows.map((r) => r.id));
  for (const gone of ['2', '6', '12', '13', '31', '40', '41']) assert.ok(!ids.has(gone), `id ${gone} deleted`);
  for (const kept of ['0', '1', '5', '30', '42', '50', '53']) assert.ok(ids.has(kept), `id ${kept} present`);
  assert.equal(rows.find((r) => r.id === '0').name, 'name-0-v4');
  assert.equal(rows.length, 38 - 2 + 4);
});

test('the PK table really holds updates and deletes', () => {
  const rows = firthRows(tables[2]);
  const ids = new Set(rows.map((r) => r.id));
  for (const gone of ['6', '12', '13', '31', '40']) assert.ok(!ids.has(gone), `id ${gone} deleted`);
  for (const kept of ['5', '30', '41', '42']) assert.ok(ids.has(kept), `id ${kept} present`);
  assert.equal(rows.filter((r) => r.id === '5').length, 1, 'one row per key');
  assert.equal(rows.find((r) => r.id === '30').name, 'name-30-v3');
  assert.equal(rows.length, 38);
  assert.ok(served.ranges > 0, 'Parquet files were read by ranges');
});
