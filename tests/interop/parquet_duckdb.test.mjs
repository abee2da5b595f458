// parquet_duckdb.test.mjs — Parquet interop between firth and DuckDB (@duckdb/node-api,
// pinned in package.json).
//
// (a) parquet_tool writes files of a table covering every firth type with nulls, a NOT NULL
//     column and a repetitive (dictionary) column, with each codec and with many row groups
//     and pages; DuckDB's read_parquet must return exactly the values the tool says it wrote,
//     the row count, the row groups and the field ids.
// (b) DuckDB writes files with COPY ... (FORMAT parquet) with its defaults, with each codec,
//     with small row groups and with PARQUET_VERSION v2 (DELTA_BINARY_PACKED,
//     DELTA_LENGTH_BYTE_ARRAY, BYTE_STREAM_SPLIT, RLE_DICTIONARY; DuckDB keeps v1 data pages);
//     parquet_tool reads them with firth and must print exactly DuckDB's values.
// (c) Files with types firth does not map (unsigned, nested) fail naming the column.
//
// Value encoding shared with parquet_tool: booleans; TINYINT..INT, FLOAT, DOUBLE, DATE (days)
// as numbers; BIGINT, TIME, TIMESTAMP (integers in their unit) and DECIMAL as strings; BYTES
// as lowercase hex; null as null.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const tool = process.env.FIRTH_PARQUET_TOOL;
if (!tool) throw new Error('FIRTH_PARQUET_TOOL must name the parquet_tool binary (set by CTest)');
const base = process.env.FIRTH_TEST_TMP || mkdtempSync(path.join(tmpdir(), 'firth-parquet-'));
mkdirSync(base, { recursive: true });
const dir = mkdtempSync(path.join(base, 'run-'));

const instance = await DuckDBInstance.create(':memory:');
const duck = await instance.connect();
await duck.run('SET threads = 1');

async function rows(sql) {
  const r = await duck.runAndReadAll(sql);
  return r.getRowsJson();
}

const q = (name) => `"${name.replaceAll('"', '""')}"`;

// A DuckDB expression giving a column's value in the shared encoding, for a firth type.
function duckExpr(name, type) {
  const c = q(name);
  const t = type.replace(' NOT NULL', '');
  const prec = Number((t.match(/\((\d+)\)/) || [0, 6])[1]);
  if (t === 'BOOLEAN') return c;
  if (['TINYINT', 'SMALLINT', 'INT'].includes(t)) return `${c}::INTEGER`;
  if (t === 'BIGINT') return `${c}::VARCHAR`;
  if (t === 'FLOAT') return `${c}::DOUBLE`;
  if (t === 'DOUBLE') return c;
  if (t.startsWith('DECIMAL')) return `${c}::VARCHAR`;
  if (t === 'STRING' || t.startsWith('VARCHAR') || t.startsWith('CHAR')) return c;
  if (t === 'BYTES') return `lower(hex(${c}))`;
  if (t === 'DATE') return `date_diff('day', DATE '1970-01-01', ${c})::INTEGER`;
  if (t.startsWith('TIME(')) return prec > 6 ? `epoch_ns(${c})::VARCHAR` : `epoch_us(${c})::VARCHAR`;
  if (t.startsWith('TIMESTAMP_LTZ')) return `epoch_us(${c})::VARCHAR`;
  if (t.startsWith('TIMESTAMP')) return prec > 6 ? `epoch_ns(${c})::VARCHAR` : `epoch_us(${c})::VARCHAR`;
  throw new Error(`no DuckDB expression for ${t}`);
}

// A value firth wrote, as DuckDB's expression above shows it: times and timestamps in
// microseconds (DuckDB keeps TIMESTAMP WITH TIME ZONE in microseconds and truncates
// nanoseconds toward zero), nanoseconds kept for TIME(9) and TIMESTAMP(9).
function asDuck(v, type) {
  if (v === null) return null;
  const t = type.replace(' NOT NULL', '');
  const m = t.match(/^(TIME|TIMESTAMP|TIMESTAMP_LTZ)\((\d)\)$/);
  if (!m) return v;
  const p = Number(m[2]);
  const big = BigInt(v);
  if (p > 6 && m[1] !== 'TIMESTAMP_LTZ') return String(big);
  if (p > 6) return String(big / 1000n);
  return String(big * 10n ** BigInt(6 - (p === 0 ? 0 : p <= 3 ? 3 : 6)));
}

function tool_(args) {
  return JSON.parse(execFileSync(tool, args, { maxBuffer: 1 << 30 }).toString());
}

const writes = [
  { name: 'zstd', codec: 'zstd', rows: 3000 },
  { name: 'snappy', codec: 'snappy', rows: 3000 },
  { name: 'uncompressed', codec: 'uncompressed', rows: 3000 },
  { name: 'many_groups', codec: 'zstd', rows: 20000, rg: 200000, page: 8000 },
  { name: 'one_row', codec: 'snappy', rows: 1 },
  // Dictionaries that outgrow 600 bytes: dictionary pages, RLE_DICTIONARY pages, then PLAIN.
  { name: 'dict_fallback', codec: 'zstd', rows: 5000, rg: 400000, page: 1500, dict: 600 },
];

for (const w of writes) {
  test(`DuckDB reads what firth writes: ${w.name}`, async () => {
    const file = path.join(dir, `firth_${w.name}.parquet`);
    const args = ['write', file, w.codec, String(w.rows)];
    if (w.rg) args.push(String(w.rg), String(w.page));
    if (w.dict) args.push(String(w.dict));
    const expected = tool_(args);
    const f = `'${file}'`;
    const [[count]] = await rows(`SELECT count(*)::INTEGER FROM read_parquet(${f})`);
    assert.equal(count, w.rows);
    const [[groups]] = await rows(`SELECT count(DISTINCT row_group_id)::INTEGER FROM parquet_metadata(${f})`);
    assert.equal(groups, expected.row_groups);
    if (w.rg) assert.ok(groups > 1, 'several row groups');
    if (w.dict) {
      const enc = await rows(`SELECT encodings FROM parquet_metadata(${f}) WHERE path_in_schema = 'mid'`);
      assert.ok(enc.some(([e]) => /PLAIN/.test(e) && /RLE_DICTIONARY/.test(e)), JSON.stringify(enc));
    }
    const [[codec]] = await rows(`SELECT DISTINCT compression FROM parquet_metadata(${f})`);
    assert.equal(codec, w.codec.toUpperCase());
    const ids = await rows(`SELECT name, field_id FROM parquet_schema(${f}) WHERE field_id IS NOT NULL`);
    assert.deepEqual(ids.map(([n, id]) => [n, Number(id)]), expected.fields.map((fl, i) => [fl.name, 100 + i]));
    // DuckDB's own types: wall-clock and UTC-adjusted timestamps kept apart.
    const types = Object.fromEntries(await rows(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(${f}))`));
    assert.equal(types.ts6, 'TIMESTAMP');
    assert.equal(types.ts3, 'TIMESTAMP');
    assert.equal(types.tz6, 'TIMESTAMP WITH TIME ZONE');
    assert.equal(types.t6, 'TIME');
    assert.equal(types.dec38, 'DECIMAL(38,6)');
    assert.equal(types.i8, 'TINYINT');
    assert.equal(types.s, 'VARCHAR');
    assert.equal(types.bin, 'BLOB');
    const exprs = expected.fields.map((fl) => duckExpr(fl.name, fl.type)).join(', ');
    const got = await rows(`SELECT ${exprs} FROM read_parquet(${f}) ORDER BY nn`);
    assert.equal(got.length, expected.rows.length);
    for (let r = 0; r < got.length; r++) {
      const want = expected.rows[r].map((v, i) => asDuck(v, expected.fields[i].type));
      assert.deepEqual(got[r], want, `row ${r}`);
    }
  });
}

test('firth writes dictionary pages for repetitive columns and statistics DuckDB reads', async () => {
  const file = path.join(dir, 'firth_zstd.parquet');
  const meta = await rows(`SELECT path_in_schema, encodings, stats_null_count::INTEGER, stats_min_value, stats_max_value FROM parquet_metadata('${file}')`);
  const rep = meta.find((m) => m[0] === 'rep');
  assert.match(rep[1], /RLE_DICTIONARY/);
  const nn = meta.find((m) => m[0] === 'nn');
  assert.deepEqual([nn[2], nn[3], nn[4]], [0, '0', '2999']);
  const i8 = meta.find((m) => m[0] === 'i8');
  assert.deepEqual([i8[3], i8[4]], ['-128', '127']);
  const [[nulls]] = await rows(`SELECT count(*)::INTEGER FROM read_parquet('${file}') WHERE i32 IS NULL`);
  const i32 = meta.find((m) => m[0] === 'i32');
  assert.equal(i32[2], nulls);
});

// ---- DuckDB writes, firth reads ------------------------------------------------------------

const duckTable = `
  CREATE TABLE src AS SELECT
    i::INTEGER AS id,
    CASE WHEN i % 7 = 1 THEN NULL ELSE (i * 37 - 5000)::INTEGER END AS i32,
    CASE WHEN i % 5 = 2 THEN NULL ELSE i * 1000003 - 77 END::BIGINT AS i64,
    CASE WHEN i % 6 = 3 THEN NULL ELSE i / 7.0 END::DOUBLE AS f64,
    (i / 3.0)::FLOAT AS f32,
    (i % 100 - 50)::TINYINT AS i8,
    (i * 13 % 30000)::SMALLINT AS i16,
    (i * 1.25 - 99)::DECIMAL(9, 2) AS dec9,
    (i * 12345.6789 - 1)::DECIMAL(18, 4) AS dec18,
    (i::DECIMAL(38, 0) * 98765432109876543210 - 5)::DECIMAL(38, 3) AS dec38,
    CASE WHEN i % 4 = 0 THEN NULL ELSE 'text-' || (i % 50) END AS s,
    'unique-' || i || repeat('x', i % 13) AS u,
    DATE '1969-12-01' + (i * 3)::INTEGER AS d,
    TIMESTAMP '1999-12-31 23:59:59' + to_microseconds(i * 1234567) AS ts,
    TIMESTAMPTZ '2020-01-01 00:00:00+00' + to_microseconds(i * 7654321) AS tz,
    CASE WHEN i % 9 = 4 THEN NULL ELSE i % 3 = 0 END AS b,
    CASE WHEN i % 8 = 5 THEN NULL ELSE ('blob' || i)::BLOB END AS bl,
    TIME '00:00:00' + to_microseconds(i * 3333333 % 86400000000) AS t
  FROM range(6000) r(i)`;
const duckTypes = {
  id: 'INT', i32: 'INT', i64: 'BIGINT', f64: 'DOUBLE', f32: 'FLOAT', i8: 'TINYINT',
  i16: 'SMALLINT', dec9: 'DECIMAL(9, 2)', dec18: 'DECIMAL(18, 4)', dec38: 'DECIMAL(38, 3)',
  s: 'STRING', u: 'STRING', d: 'DATE', ts: 'TIMESTAMP(6)', tz: 'TIMESTAMP_LTZ(6)', b: 'BOOLEAN',
  bl: 'BYTES', t: 'TIME(6)',
};

const copies = [
  { name: 'defaults', options: '' },
  { name: 'zstd', options: ', COMPRESSION zstd' },
  { name: 'snappy', options: ', COMPRESSION snappy' },
  { name: 'uncompressed', options: ', COMPRESSION uncompressed' },
  { name: 'lz4_raw', options: ', COMPRESSION lz4_raw' },
  { name: 'small_row_groups', options: ', ROW_GROUP_SIZE 1000' },
  { name: 'v2', options: ', PARQUET_VERSION v2' },
  { name: 'v2_zstd', options: ', PARQUET_VERSION v2, COMPRESSION zstd, ROW_GROUP_SIZE 2500' },
];

test('firth reads what DuckDB writes', async (t) => {
  await duck.run(duckTable);
  const names = Object.keys(duckTypes);
  const want = await rows(`SELECT ${names.map((n) => duckExpr(n, duckTypes[n])).join(', ')} FROM src ORDER BY id`);
  for (const c of copies) {
    await t.test(c.name, () => {
      const file = path.join(dir, `duck_${c.name}.parquet`);
      return duck.run(`COPY (SELECT * FROM src ORDER BY id) TO '${file}' (FORMAT parquet${c.options})`).then(() => {
        const got = tool_(['read', file]);
        assert.deepEqual(got.fields.map((f) => [f.name, f.type]), names.map((n) => [n, duckTypes[n]]));
        assert.equal(got.rows.length, want.length);
        for (let r = 0; r < want.length; r++) {
          const row = got.rows[r].map((v, i) => asDuck(v, duckTypes[names[i]]));
          assert.deepEqual(row, want[r], `${c.name}: row ${r}`);
        }
        if (c.name === 'small_row_groups') assert.ok(got.row_groups >= 2, `${got.row_groups} row groups`);
        // Column pruning: two columns alone give the same values.
        const two = tool_(['read', file, 'u', 'i64']);
        assert.deepEqual(two.rows.map((rw) => [rw[0], rw[1]]), want.map((rw) => [rw[names.indexOf('u')], rw[names.indexOf('i64')]]));
      });
    });
  }
});

test('firth refuses types it does not map, naming the column', async () => {
  for (const [name, sql] of [
    ['unsigned', 'SELECT 1::INTEGER AS a, 7::UTINYINT AS small_unsigned'],
    ['nested', 'SELECT 1::INTEGER AS a, [1, 2] AS nested_list'],
  ]) {
    const file = path.join(dir, `duck_${name}.parquet`);
    await duck.run(`COPY (${sql}) TO '${file}' (FORMAT parquet)`);
    const r = spawnSync(tool, ['read', file]);
    assert.notEqual(r.status, 0, name);
    assert.match(r.stderr.toString(), name === 'unsigned' ? /small_unsigned.*unsigned/ : /nested_list/);
  }
});
