// consume_arrow.test.mjs — `firth consume --format arrow` read by an independent Arrow
// implementation (apache-arrow for JavaScript, pinned in package.json).
//
// A table with every firth type is filled through `firth sql` (awkward values, extremes and
// NULLs, plus generated rows so that compression has something to do), then read back as an
// Arrow IPC stream: all columns and projected, uncompressed and with ZSTD and LZ4_FRAME
// buffer compression, with --where and with --with-offsets. Every value is compared with
// what was inserted, from the raw Arrow buffers (unscaled decimals, timestamps in their
// unit), and every field's Arrow type with the type firth documents for it.
//
// Environment: FIRTH (the binary) and FIRTH_TEST_TMP (a scratch directory).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC, compressionRegistry, CompressionType, Type, TimeUnit, DateUnit, Precision } from 'apache-arrow';
import * as fzstd from 'fzstd';
import lz4 from 'lz4js';

const FIRTH = process.env.FIRTH;
const TMP = process.env.FIRTH_TEST_TMP;
if (!FIRTH || !TMP) {
  console.error('set FIRTH (the firth binary) and FIRTH_TEST_TMP (a scratch directory)');
  process.exit(2);
}
mkdirSync(TMP, { recursive: true });
const dir = mkdtempSync(join(TMP, 'consume_arrow.'));
const data = join(dir, 'data');
let checks = 0;

function firth(args, input) {
  return execFileSync(FIRTH, args, { input, maxBuffer: 256 << 20, stdio: ['pipe', 'pipe', 'pipe'] });
}
function sql(text) {
  return firth(['sql', '--data-dir', data, '-e', text]).toString();
}
// The stream in memory of its own: a pooled Node Buffer may start at any byte, and Arrow's
// readers expect 8-byte alignment from the start of the stream.
function consumeArrow(extra) {
  return new Uint8Array(firth(['consume', '--data-dir', data, '--table', 'x.types', '--format', 'arrow', ...extra]));
}

// ---- the table and its rows ---------------------------------------------------------------

// Each column: its SQL type, the Arrow type expected, and how to read one raw value.
const US = 1000000n;
const columns = [
  ['k', 'INT NOT NULL', { id: Type.Int, bitWidth: 32 }],
  ['b', 'BOOLEAN', { id: Type.Bool }],
  ['ti', 'TINYINT', { id: Type.Int, bitWidth: 8 }],
  ['si', 'SMALLINT', { id: Type.Int, bitWidth: 16 }],
  ['i', 'INT', { id: Type.Int, bitWidth: 32 }],
  ['bi', 'BIGINT', { id: Type.Int, bitWidth: 64 }],
  ['f', 'FLOAT', { id: Type.Float, precision: Precision.SINGLE }],
  ['d', 'DOUBLE', { id: Type.Float, precision: Precision.DOUBLE }],
  ['dc', 'DECIMAL(38, 10)', { id: Type.Decimal, precision: 38, scale: 10, bitWidth: 128 }],
  ['dm', 'DECIMAL(5, 2)', { id: Type.Decimal, precision: 5, scale: 2, bitWidth: 128 }],
  ['c', 'CHAR(5)', { id: Type.Utf8 }],
  ['vc', 'VARCHAR(10)', { id: Type.Utf8 }],
  ['s', 'STRING', { id: Type.Utf8 }],
  ['y', 'BYTES', { id: Type.Binary }],
  ['dt', 'DATE', { id: Type.Date, unit: DateUnit.DAY }],
  ['t0', 'TIME(0)', { id: Type.Time, unit: TimeUnit.SECOND, bitWidth: 32 }],
  ['t3', 'TIME(3)', { id: Type.Time, unit: TimeUnit.MILLISECOND, bitWidth: 32 }],
  ['t6', 'TIME(6)', { id: Type.Time, unit: TimeUnit.MICROSECOND, bitWidth: 64 }],
  ['t9', 'TIME(9)', { id: Type.Time, unit: TimeUnit.NANOSECOND, bitWidth: 64 }],
  ['ts0', 'TIMESTAMP(0)', { id: Type.Timestamp, unit: TimeUnit.SECOND, timezone: null }],
  ['ts3', 'TIMESTAMP(3)', { id: Type.Timestamp, unit: TimeUnit.MILLISECOND, timezone: null }],
  ['ts6', 'TIMESTAMP(6)', { id: Type.Timestamp, unit: TimeUnit.MICROSECOND, timezone: null }],
  ['ts9', 'TIMESTAMP(9)', { id: Type.Timestamp, unit: TimeUnit.NANOSECOND, timezone: null }],
  ['ltz', 'TIMESTAMP_LTZ(3)', { id: Type.Timestamp, unit: TimeUnit.MILLISECOND, timezone: 'UTC' }],
];
const names = columns.map((c) => c[0]);

const days = (y, m, d) => Date.UTC(y, m - 1, d) / 86400000;
const secs = (y, m, d, hh, mm, ss) => BigInt(Date.UTC(y, m - 1, d, hh, mm, ss) / 1000);

// Each cell: [SQL literal, expected value] in the normalized form of `raw` below; null = NULL.
const N = ['NULL', null];
const special = [
  {
    k: ['1', 1], b: ['true', true], ti: ['-128', -128], si: ['-32768', -32768],
    i: ['-2147483648', -2147483648], bi: ['-9223372036854775808', -9223372036854775808n],
    f: ['1.5', 1.5], d: ['0.1', 0.1],
    dc: ['1234567890123456789012345678.0123456789', 12345678901234567890123456780123456789n],
    dm: ['-999.99', -99999n], c: ["'ab'", 'ab'], vc: ["'hello'", 'hello'],
    s: ["'ünï ☃ \"q\", x'", 'ünï ☃ "q", x'], y: ["X'00ff10'", '00ff10'],
    dt: ["DATE '1969-12-31'", -1], t0: ["TIME '00:00:00'", 0],
    t3: ["TIME '23:59:59.999'", 86399999], t6: ["TIME '12:34:56.123456'", 45296123456n],
    t9: ["TIME '12:34:56.123456789'", 45296123456789n],
    ts0: ["TIMESTAMP '1900-01-01 00:00:00'", secs(1900, 1, 1, 0, 0, 0)],
    ts3: ["TIMESTAMP '2026-01-31 10:00:00.123'", secs(2026, 1, 31, 10, 0, 0) * 1000n + 123n],
    ts6: ["TIMESTAMP '2026-01-31 10:00:00.123456'", secs(2026, 1, 31, 10, 0, 0) * US + 123456n],
    ts9: ["TIMESTAMP '2262-04-11 23:47:16.854775807'", 9223372036854775807n],
    ltz: ["TIMESTAMP_LTZ '2026-01-31 10:00:00.5Z'", secs(2026, 1, 31, 10, 0, 0) * 1000n + 500n],
  },
  {
    k: ['2', 2], b: ['false', false], ti: ['127', 127], si: ['32767', 32767],
    i: ['2147483647', 2147483647], bi: ['9223372036854775807', 9223372036854775807n],
    f: ['-3.4028235e38', Math.fround(-3.4028235e38)], d: ['1e308', 1e308],
    dc: ['-0.0000000001', -1n], dm: ['0', 0n], c: ["'abcde'", 'abcde'], vc: ["''", ''],
    s: ["'two\nlines'", 'two\nlines'], y: ["X''", ''], dt: ["DATE '9999-12-31'", days(9999, 12, 31)],
    t0: ["TIME '23:59:59'", 86399], t3: N, t6: N, t9: N,
    ts0: ["TIMESTAMP '1970-01-01 00:00:00'", 0n], ts3: N, ts6: N, ts9: N,
    ltz: ["TIMESTAMP_LTZ '1969-12-31 23:59:59.999Z'", -1n],
  },
  Object.fromEntries(names.map((n) => [n, n === 'k' ? ['3', 3] : N])),
];
// Generated rows: repetitive values that compress, with NULLs every third row.
const generated = [];
for (let r = 0; r < 500; r++) {
  const row = Object.fromEntries(names.map((n) => [n, N]));
  row.k = [String(100 + r), 100 + r];
  row.i = r % 3 ? [String(r * 7), r * 7] : N;
  row.s = [`'row ${r % 10} of the generated rows'`, `row ${r % 10} of the generated rows`];
  row.dm = [`${r % 1000}.${String(r % 100).padStart(2, '0')}`, BigInt((r % 1000) * 100 + (r % 100))];
  row.ts3 = r % 3 ? [`TIMESTAMP '2026-02-01 00:00:${String(r % 60).padStart(2, '0')}.250'`,
    secs(2026, 2, 1, 0, 0, r % 60) * 1000n + 250n] : N;
  generated.push(row);
}
const rows = [...special, ...generated];

sql(`CREATE DATABASE x; CREATE TABLE x.types (${columns.map((c) => `${c[0]} ${c[1]}`).join(', ')})`);
const values = rows.map((row) => `(${names.map((n) => row[n][0]).join(', ')})`).join(',\n');
assert.equal(sql(`INSERT INTO x.types VALUES ${values}`).trim(), `${rows.length} rows inserted`);

// ---- reading Arrow values in a normalized form --------------------------------------------

function* cells(vector) {
  let base = 0;
  for (const d of vector.data) {
    for (let i = 0; i < d.length; i++) {
      const j = d.offset + i;
      const valid = d.nullCount === 0 || !d.nullBitmap || d.nullBitmap.length === 0 ||
        ((d.nullBitmap[j >> 3] >> (j & 7)) & 1) === 1;
      yield { d, j, index: base + i, valid };
    }
    base += d.length;
  }
}

function raw(vector, { d, j, index, valid }) {
  if (!valid) return null;
  const t = vector.type;
  switch (t.typeId) {
    case Type.Bool: return ((d.values[j >> 3] >> (j & 7)) & 1) === 1;
    case Type.Decimal: {
      let v = 0n;
      for (let w = 3; w >= 0; w--) v = (v << 32n) | BigInt(d.values[j * 4 + w]);
      return BigInt.asIntN(128, v);
    }
    case Type.Utf8: return vector.get(index);
    case Type.Binary: return Buffer.from(vector.get(index)).toString('hex');
    default: return d.values[j]; // ints, floats, dates, times, timestamps: the stored number
  }
}

function checkType(field, want, what) {
  const t = field.type;
  assert.equal(Type[t.typeId], Type[want.id], `${what}: the Arrow type of ${field.name}`);
  for (const key of ['bitWidth', 'precision', 'scale', 'unit', 'timezone']) {
    if (key in want) assert.equal(t[key] ?? null, want[key], `${what}: ${key} of ${field.name}`);
  }
  if (t.typeId === Type.Int) assert.equal(t.isSigned, true, `${what}: ${field.name} is signed`);
  checks++;
}

// Compares a table with the expected rows, for the given columns, in order.
function compare(table, expectRows, cols, what) {
  assert.deepEqual(table.schema.fields.map((f) => f.name), cols, `${what}: the columns`);
  assert.equal(table.numRows, expectRows.length, `${what}: the number of rows`);
  for (const name of cols) {
    const spec = columns.find((c) => c[0] === name);
    const field = table.schema.fields.find((f) => f.name === name);
    checkType(field, spec[2], what);
    assert.equal(field.nullable, name !== 'k', `${what}: nullability of ${name}`);
    const vector = table.getChild(name);
    let r = 0;
    for (const cell of cells(vector)) {
      const want = expectRows[r][name][1];
      const got = raw(vector, cell);
      assert.deepEqual(got, want, `${what}: row ${r} (k = ${expectRows[r].k[1]}) column ${name}`);
      r++;
      checks++;
    }
    assert.equal(r, expectRows.length, `${what}: cells of ${name}`);
  }
}

// ---- the streams ----------------------------------------------------------------------------

// A compressed stream needs a codec: without one registered the reader must refuse it,
// which shows that the buffers really are compressed.
const zstdStream = consumeArrow(['--arrow-compression', 'zstd']);
const lz4Stream = consumeArrow(['--arrow-compression', 'lz4_frame']);
assert.throws(() => tableFromIPC(zstdStream), /codec/i, 'a ZSTD stream read without a codec');
assert.throws(() => tableFromIPC(lz4Stream), /codec/i, 'an LZ4 stream read without a codec');
compressionRegistry.set(CompressionType.ZSTD, { decode: (b) => new Uint8Array(fzstd.decompress(b)) });
compressionRegistry.set(CompressionType.LZ4_FRAME, { decode: (b) => Uint8Array.from(lz4.decompress(b)) });

const plain = consumeArrow([]);
compare(tableFromIPC(plain), rows, names, 'uncompressed');
compare(tableFromIPC(zstdStream), rows, names, 'zstd');
compare(tableFromIPC(lz4Stream), rows, names, 'lz4_frame');
assert.ok(zstdStream.length < plain.length, `zstd (${zstdStream.length} bytes) is smaller than none (${plain.length})`);
assert.ok(lz4Stream.length < plain.length, `lz4 (${lz4Stream.length} bytes) is smaller than none (${plain.length})`);

const projected = ['ltz', 'k', 'dc', 'y', 's', 't9'];
for (const codec of ['none', 'zstd']) {
  const t = tableFromIPC(consumeArrow(['--columns', projected.join(','), '--arrow-compression', codec]));
  compare(t, rows, projected, `projected, ${codec}`);
}

const filtered = tableFromIPC(consumeArrow(['--where', 'k <= 3 OR i > 3400', '--columns', 'k,i,s']));
compare(filtered, rows.filter((r) => r.k[1] <= 3 || (r.i[1] !== null && r.i[1] > 3400)),
  ['k', 'i', 's'], '--where');

const limited = tableFromIPC(consumeArrow(['--max-records', '2', '--columns', 'k']));
compare(limited, rows.slice(0, 2), ['k'], '--max-records');

const empty = tableFromIPC(consumeArrow(['--where', 'k < 0', '--columns', 'dt,k']));
compare(empty, [], ['dt', 'k'], 'no rows: the schema alone');

// --with-offsets: _bucket (INT) and _offset (BIGINT) in front; one bucket, offsets 0..n-1.
const withOffsets = tableFromIPC(consumeArrow(['--with-offsets', '--columns', 'k', '--arrow-compression', 'lz4_frame']));
assert.deepEqual(withOffsets.schema.fields.map((f) => f.name), ['_bucket', '_offset', 'k']);
checkType(withOffsets.schema.fields[0], { id: Type.Int, bitWidth: 32 }, '--with-offsets');
checkType(withOffsets.schema.fields[1], { id: Type.Int, bitWidth: 64 }, '--with-offsets');
const offsets = [...cells(withOffsets.getChild('_offset'))].map((c) => raw(withOffsets.getChild('_offset'), c));
assert.deepEqual(offsets, rows.map((_, i) => BigInt(i)), '--with-offsets: dense offsets');
const buckets = [...cells(withOffsets.getChild('_bucket'))].map((c) => raw(withOffsets.getChild('_bucket'), c));
assert.ok(buckets.every((b) => b === 0), '--with-offsets: bucket 0');
checks += 2;

rmSync(dir, { recursive: true, force: true });
console.log(`consume_arrow: ok (${checks} checks)`);
