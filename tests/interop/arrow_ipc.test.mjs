// arrow_ipc.test.mjs — Arrow IPC interop between firth and the independent apache-arrow
// implementation (npm, pinned in package.json).
//
// (a) arrow_tool writes streams of a table covering every firth type with nulls, uncompressed,
//     ZSTD and LZ4_FRAME, and projected by fr_ipc_project; apache-arrow reads them and every
//     field type and value must equal what the tool says it wrote (expected.json).
// (b) apache-arrow writes a stream of every Arrow type firth maps to; arrow_tool decodes it
//     with firth and prints JSON, which must equal what this test wrote.
//
// Value encoding shared with arrow_tool: booleans; TINYINT..INT, FLOAT, DOUBLE, DATE (days)
// as numbers; BIGINT, TIME, TIMESTAMP (integers in their unit) and DECIMAL as strings;
// BYTES as lowercase hex; null as null.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  tableFromIPC, tableToIPC, compressionRegistry, CompressionType, Type, TimeUnit, Precision,
  Field, Schema, Struct, RecordBatch, Table, makeData,
  Bool, Int8, Int16, Int32, Int64, Float32, Float64, Decimal, Utf8, Binary, DateDay,
  TimeSecond, TimeMillisecond, TimeMicrosecond, TimeNanosecond,
  TimestampSecond, TimestampMillisecond, TimestampMicrosecond, TimestampNanosecond,
} from 'apache-arrow';
import * as lz4 from 'lz4js';
import { decompress as zstdDecompress } from 'fzstd';

const tool = process.env.FIRTH_ARROW_TOOL;
if (!tool) throw new Error('FIRTH_ARROW_TOOL must name the arrow_tool binary (set by CTest)');
const base = process.env.FIRTH_TEST_TMP || mkdtempSync(path.join(tmpdir(), 'firth-arrow-'));
mkdirSync(base, { recursive: true });
const dir = mkdtempSync(path.join(base, 'run-'));

// Independent decoders for the compressed buffers; the counters prove they were used. The
// output is copied because apache-arrow views it as 64-bit arrays, which must start on an
// 8-byte boundary, and fzstd returns a view at an arbitrary offset of its work buffer.
const decoded = { lz4: 0, zstd: 0 };
compressionRegistry.set(CompressionType.LZ4_FRAME, {
  decode(bytes) { decoded.lz4++; return new Uint8Array(lz4.decompress(bytes)); },
});
compressionRegistry.set(CompressionType.ZSTD, {
  decode(bytes) { decoded.zstd++; return new Uint8Array(zstdDecompress(bytes)); },
});

const unitPrecision = { [TimeUnit.SECOND]: 0, [TimeUnit.MILLISECOND]: 3, [TimeUnit.MICROSECOND]: 6, [TimeUnit.NANOSECOND]: 9 };

// The firth type text that an Arrow field stands for, as arrow_tool prints it.
function firthType(field) {
  const t = field.type;
  let text;
  switch (t.typeId) {
    case Type.Bool: text = 'BOOLEAN'; break;
    case Type.Int:
      assert.ok(t.isSigned, `${field.name}: unsigned`);
      text = { 8: 'TINYINT', 16: 'SMALLINT', 32: 'INT', 64: 'BIGINT' }[t.bitWidth];
      break;
    case Type.Float: text = t.precision === Precision.SINGLE ? 'FLOAT' : t.precision === Precision.DOUBLE ? 'DOUBLE' : 'HALF'; break;
    case Type.Decimal:
      assert.equal(t.bitWidth, 128, `${field.name}: decimal width`);
      text = `DECIMAL(${t.precision}, ${t.scale})`;
      break;
    case Type.Utf8: text = field.metadata.get('firth.type') ?? 'STRING'; break;
    case Type.Binary: text = 'BYTES'; break;
    case Type.Date: assert.equal(t.unit, 0, `${field.name}: date unit`); text = 'DATE'; break;
    case Type.Time:
      assert.equal(t.bitWidth, t.unit <= TimeUnit.MILLISECOND ? 32 : 64, `${field.name}: time width`);
      text = `TIME(${unitPrecision[t.unit]})`;
      break;
    case Type.Timestamp:
      text = `${t.timezone ? 'TIMESTAMP_LTZ' : 'TIMESTAMP'}(${unitPrecision[t.unit]})`;
      break;
    default: throw new Error(`${field.name}: unexpected Arrow type ${t}`);
  }
  return field.nullable ? text : `${text} NOT NULL`;
}

// A file in memory of its own: a pooled Node Buffer may start at any byte, and apache-arrow
// views buffers as typed arrays that must be aligned from the start of the stream.
const readStream = (file) => new Uint8Array(readFileSync(file));

const hex = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

// A signed 128-bit integer from four little-endian 32-bit words.
function wordsToBigInt(words) {
  let v = 0n;
  for (let i = 3; i >= 0; i--) v = (v << 32n) | BigInt(words[i] >>> 0);
  return BigInt.asIntN(128, v);
}

function decimalText(unscaled, scale) {
  const neg = unscaled < 0n;
  let digits = (neg ? -unscaled : unscaled).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  }
  return neg ? `-${digits}` : digits;
}

// Every value of a column in the shared JSON encoding, read from the raw Arrow buffers where a
// conversion could hide a difference (decimals, dates, times, timestamps).
function columnJson(vector) {
  const out = [];
  const type = vector.type;
  for (const data of vector.data) {
    for (let i = 0; i < data.length; i++) {
      if (!data.getValid(i)) { out.push(null); continue; }
      const at = data.offset + i;
      switch (type.typeId) {
        case Type.Bool: out.push(data.values[at >> 3] >> (at & 7) & 1 ? true : false); break;
        case Type.Int: out.push(type.bitWidth === 64 ? data.values[at].toString() : data.values[at]); break;
        case Type.Float: out.push(data.values[at]); break;
        case Type.Decimal: out.push(decimalText(wordsToBigInt(data.values.subarray(4 * at, 4 * at + 4)), type.scale)); break;
        case Type.Utf8: {
          const bytes = data.values.subarray(data.valueOffsets[at], data.valueOffsets[at + 1]);
          out.push(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
          break;
        }
        case Type.Binary: out.push(hex(data.values.subarray(data.valueOffsets[at], data.valueOffsets[at + 1]))); break;
        case Type.Date: out.push(data.values[at]); break;
        case Type.Time:
        case Type.Timestamp: out.push(data.values[at].toString()); break;
        default: throw new Error(`unexpected type ${type}`);
      }
    }
  }
  return out;
}

function checkTable(table, expected, names, what) {
  assert.deepEqual(table.schema.fields.map((f) => f.name), names, `${what}: field names`);
  const types = Object.fromEntries(expected.fields.map((f) => [f.name, f.type]));
  for (const field of table.schema.fields) {
    assert.equal(firthType(field), types[field.name], `${what}: type of ${field.name}`);
  }
  assert.deepEqual(table.batches.map((b) => b.numRows).filter((n) => n > 0),
    expected.batch_rows.filter((n) => n > 0), `${what}: batch sizes`);
  for (const name of names) {
    assert.deepEqual(columnJson(table.getChild(name)), expected.columns[name], `${what}: values of ${name}`);
  }
}

test('apache-arrow reads what firth writes, for every type and codec', () => {
  execFileSync(tool, ['write', dir]);
  const expected = JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8'));
  const all = expected.fields.map((f) => f.name);
  assert.ok(all.length >= 25 && expected.columns.s.length === 300);
  for (const [file, codec] of [['none', null], ['zstd', 'zstd'], ['lz4', 'lz4']]) {
    const before = { ...decoded };
    const table = tableFromIPC(readStream(path.join(dir, `${file}.arrow`)));
    checkTable(table, expected, all, file);
    if (codec) assert.ok(decoded[codec] > before[codec], `${file}: the ${codec} decoder was not used`);
    else assert.deepEqual(decoded, before, 'the uncompressed stream must not need a decoder');
  }
  for (const file of ['projected_none', 'projected_zstd']) {
    const table = tableFromIPC(readStream(path.join(dir, `${file}.arrow`)));
    checkTable(table, expected, expected.projection, file);
  }
});

// ---- (b) apache-arrow writes, firth reads -------------------------------------------------

let seed = 0x2545f491;
function rand() { // xorshift32
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed;
}
const randBig = (bits) => {
  let v = 0n;
  for (let i = 0; i < bits; i += 32) v = (v << 32n) | BigInt(rand());
  return BigInt.asIntN(bits, v);
};

// Column specs: the Arrow type, the firth type arrow_tool must report, and a value maker
// returning [raw value for the Arrow buffer, JSON value].
const dayUnits = { 0: 1n, 3: 1000n, 6: 1000000n, 9: 1000000000n };
function timeSpec(Ctor, p, wide) {
  return {
    type: () => new Ctor(), firth: `TIME(${p})`,
    make: () => {
      const v = BigInt(rand()) * BigInt(rand()) % (86400n * dayUnits[p]);
      return [wide ? v : Number(v), v.toString()];
    },
  };
}
function tsSpec(Ctor, p, tz) {
  return {
    type: () => new Ctor(tz), firth: `${tz ? 'TIMESTAMP_LTZ' : 'TIMESTAMP'}(${p})`,
    make: () => { const v = randBig(64) / 4n; return [v, v.toString()]; },
  };
}
function decSpec(precision, scale) {
  const limit = 10n ** BigInt(precision);
  return {
    type: () => new Decimal(scale, precision, 128), firth: `DECIMAL(${precision}, ${scale})`,
    make: () => { const v = randBig(128) % limit; return [v, decimalText(v, scale)]; },
  };
}
const words = ['', 'x', 'arrow', 'Grüße', '数据湖', '🙂🙂', 'line\nbreak'];
const specs = {
  bool: { type: () => new Bool(), firth: 'BOOLEAN', make: () => { const v = (rand() & 1) === 1; return [v, v]; } },
  i8: { type: () => new Int8(), firth: 'TINYINT', make: () => { const v = (rand() << 24) >> 24; return [v, v]; } },
  i16: { type: () => new Int16(), firth: 'SMALLINT', make: () => { const v = (rand() << 16) >> 16; return [v, v]; } },
  i32: { type: () => new Int32(), firth: 'INT', make: () => { const v = rand() | 0; return [v, v]; } },
  i64: { type: () => new Int64(), firth: 'BIGINT', make: () => { const v = randBig(64); return [v, v.toString()]; } },
  f32: { type: () => new Float32(), firth: 'FLOAT', make: () => { const v = Math.fround((rand() | 0) / 1024); return [v, v]; } },
  f64: { type: () => new Float64(), firth: 'DOUBLE', make: () => { const v = (rand() | 0) * 1e-3 + rand() / 7; return [v, v]; } },
  dec: decSpec(12, 3),
  dec38: decSpec(38, 0),
  dec_s38: decSpec(38, 38),
  s: { type: () => new Utf8(), firth: 'STRING', make: () => { const v = words[rand() % words.length]; return [v, v]; } },
  by: {
    type: () => new Binary(), firth: 'BYTES',
    make: () => { const v = Uint8Array.from({ length: rand() % 9 }, () => rand() & 255); return [v, hex(v)]; },
  },
  d: { type: () => new DateDay(), firth: 'DATE', make: () => { const v = (rand() % 200000) - 100000; return [v, v]; } },
  t_s: timeSpec(TimeSecond, 0, false),
  t_ms: timeSpec(TimeMillisecond, 3, false),
  t_us: timeSpec(TimeMicrosecond, 6, true),
  t_ns: timeSpec(TimeNanosecond, 9, true),
  ts_s: tsSpec(TimestampSecond, 0, null),
  ts_ms: tsSpec(TimestampMillisecond, 3, null),
  ts_us: tsSpec(TimestampMicrosecond, 6, null),
  ts_ns: tsSpec(TimestampNanosecond, 9, null),
  tz_s: tsSpec(TimestampSecond, 0, 'UTC'),
  tz_ms: tsSpec(TimestampMillisecond, 3, 'UTC'),
  tz_us: tsSpec(TimestampMicrosecond, 6, 'Europe/Paris'),
  tz_ns: tsSpec(TimestampNanosecond, 9, 'UTC'),
};
const notNull = new Set(['i32', 's', 'ts_us']);

// Arrow Data of one column for rows' raw values (null = NULL).
function columnData(type, raws) {
  const n = raws.length;
  const nullBitmap = new Uint8Array(Math.ceil(n / 8) + 1);
  let nullCount = 0;
  raws.forEach((v, i) => { if (v === null) nullCount++; else nullBitmap[i >> 3] |= 1 << (i & 7); });
  const props = { type, length: n, nullCount, nullBitmap: nullCount ? nullBitmap : null };
  switch (type.typeId) {
    case Type.Bool: {
      const data = new Uint8Array(Math.ceil(n / 8) + 1);
      raws.forEach((v, i) => { if (v) data[i >> 3] |= 1 << (i & 7); });
      return makeData({ ...props, data });
    }
    case Type.Utf8:
    case Type.Binary: {
      const parts = raws.map((v) => (v === null ? new Uint8Array(0) : typeof v === 'string' ? new TextEncoder().encode(v) : v));
      const valueOffsets = new Int32Array(n + 1);
      parts.forEach((p, i) => { valueOffsets[i + 1] = valueOffsets[i] + p.length; });
      const data = new Uint8Array(valueOffsets[n]);
      parts.forEach((p, i) => data.set(p, valueOffsets[i]));
      return makeData({ ...props, valueOffsets, data });
    }
    case Type.Decimal: {
      const data = new Uint32Array(4 * n);
      raws.forEach((v, i) => {
        let u = BigInt.asUintN(128, v ?? 0n);
        for (let w = 0; w < 4; w++) { data[4 * i + w] = Number(u & 0xffffffffn); u >>= 32n; }
      });
      return makeData({ ...props, data });
    }
    default: {
      const data = new type.ArrayType(n);
      raws.forEach((v, i) => { if (v !== null) data[i] = v; });
      return makeData({ ...props, data });
    }
  }
}

test('firth reads what apache-arrow writes, for every type firth maps', () => {
  const names = Object.keys(specs);
  const fields = names.map((name) => new Field(name, specs[name].type(), !notNull.has(name)));
  const schema = new Schema(fields);
  const expected = {
    batch_rows: [],
    fields: names.map((name) => ({ name, type: notNull.has(name) ? `${specs[name].firth} NOT NULL` : specs[name].firth })),
    columns: Object.fromEntries(names.map((n) => [n, []])),
  };
  const batches = [];
  for (const rows of [70, 1, 45]) {
    const children = names.map((name, c) => {
      const raws = [];
      for (let r = 0; r < rows; r++) {
        if (!notNull.has(name) && (r * 3 + c) % 4 === 0) {
          raws.push(null);
          expected.columns[name].push(null);
        } else {
          const [raw, json] = specs[name].make();
          raws.push(raw);
          expected.columns[name].push(json);
        }
      }
      return columnData(fields[c].type, raws);
    });
    expected.batch_rows.push(rows);
    batches.push(new RecordBatch(schema, makeData({ type: new Struct(fields), length: rows, nullCount: 0, children })));
  }
  const table = new Table(batches);
  const file = path.join(dir, 'from_arrow_js.arrow');
  writeFileSync(file, tableToIPC(table, 'stream'));
  // The writer is independent; check it wrote what we meant before blaming firth.
  const reread = tableFromIPC(readStream(file));
  for (const name of names) assert.deepEqual(columnJson(reread.getChild(name)), expected.columns[name], `apache-arrow round trip of ${name}`);

  const got = JSON.parse(execFileSync(tool, ['read', file], { maxBuffer: 64 << 20 }).toString('utf8'));
  assert.deepEqual(got.fields, expected.fields, 'field types as firth decodes them');
  assert.deepEqual(got.batch_rows, expected.batch_rows, 'batch sizes');
  for (const name of names) assert.deepEqual(got.columns[name], expected.columns[name], `values of ${name}`);
});
