// lake_icebird.test.mjs — the Iceberg tables firth tiers, read by independent readers:
// icebird (an Iceberg reader for JavaScript, over hyparquet) reads each table's directory
// under the warehouse and must return exactly the rows of `SELECT * FROM db.t$lake`; DuckDB
// reads every Parquet data file of the current snapshot (row counts and values: a log
// table's files together hold exactly its lake rows, a primary-key table's hold every lake
// row); avsc reads every manifest list and manifest (Avro object container files) and
// their entries agree with the metadata. The tables: a log table with most types, a
// partitioned log table, and a primary-key table with updates, a partial update and
// deletes, each tiered in several rounds with `CALL sys.tier` through the real `firth`
// command (embedded, --data-dir).
//
// icebird fetches through globalThis.fetch; the test answers local paths and file: URLs
// from disk (with Range requests) so that nothing goes over a network.
//
// Environment: FIRTH (the binary) and FIRTH_TEST_TMP (a scratch directory).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import avro from 'avsc';
import { DuckDBInstance } from '@duckdb/node-api';
import { icebergRead } from 'icebird';

const FIRTH = process.env.FIRTH;
const TMP = process.env.FIRTH_TEST_TMP;
if (!FIRTH || !TMP) {
  console.error('set FIRTH (the firth binary) and FIRTH_TEST_TMP (a scratch directory)');
  process.exit(2);
}
mkdirSync(TMP, { recursive: true });
const dir = mkdtempSync(join(TMP, 'lake_icebird.'));
const data = join(dir, 'data');
const warehouse = join(data, 'lake');
let checks = 0;

// ---- local files through fetch -------------------------------------------------------------

const realFetch = globalThis.fetch;
function localPath(url) {
  if (url.startsWith('file:')) return fileURLToPath(url);
  if (url.startsWith('/')) return url;
  return null;
}
globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const path = localPath(url);
  if (path === null) return realFetch(input, init);
  if (!existsSync(path)) return new Response(`no file ${path}`, { status: 404, statusText: 'Not Found' });
  const bytes = readFileSync(path);
  const headers = new Headers(init.headers || (typeof input === 'object' && input.headers) || {});
  if ((init.method || 'GET') === 'HEAD') {
    return new Response(null, { status: 200, headers: { 'Content-Length': String(bytes.length) } });
  }
  const range = headers.get('Range');
  if (range) {
    const m = /^bytes=(\d+)-(\d*)$/.exec(range);
    assert.ok(m, `a Range header firth's test understands: ${range}`);
    const start = Number(m[1]);
    const end = m[2] === '' ? bytes.length - 1 : Math.min(Number(m[2]), bytes.length - 1);
    return new Response(bytes.subarray(start, end + 1), {
      status: 206,
      headers: { 'Content-Range': `bytes ${start}-${end}/${bytes.length}` },
    });
  }
  return new Response(bytes, { status: 200 });
};

// ---- firth --------------------------------------------------------------------------------

function firth(args) {
  return execFileSync(FIRTH, args, { maxBuffer: 256 << 20, stdio: ['pipe', 'pipe', 'pipe'] });
}
function sql(text) {
  return firth(['sql', '--data-dir', data, '-e', text]).toString();
}
function sqlJson(text) {
  const out = firth(['sql', '--data-dir', data, '--format', 'json', '-e', text]).toString();
  return out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}
function tier(table) {
  const rows = sqlJson(`CALL sys.tier('${table}')`);
  assert.equal(rows.length, 1, 'CALL sys.tier returns one row');
  checks++;
  return rows[0].snapshot_id;
}

// ---- values in one canonical text form ----------------------------------------------------

// kinds: int, str, dec:<scale>, ts (TIMESTAMP or TIMESTAMP_LTZ: epoch milliseconds), date,
// bool, dbl
function canon(kind, v) {
  if (v === null || v === undefined) return 'NULL';
  if (kind === 'int') return BigInt(typeof v === 'string' ? v : v).toString();
  if (kind === 'str') return String(v);
  if (kind === 'bool') return String(v);
  if (kind === 'dbl') return String(Number(v));
  if (kind.startsWith('dec:')) return Number(v).toFixed(Number(kind.slice(4)));
  if (kind === 'ts') {
    if (v instanceof Date) return String(v.getTime());
    if (typeof v === 'bigint') return String(v / 1000n); // microseconds
    if (typeof v === 'number') return String(v);
    // firth's text: "2026-01-01 10:00:00.123000" or with a trailing Z (LTZ)
    const s = String(v).replace(' ', 'T');
    return String(Date.parse(s.endsWith('Z') ? s : `${s}Z`));
  }
  if (kind === 'date') {
    if (v instanceof Date) return v.toISOString().slice(0, 10);
    if (typeof v === 'number') return new Date(v * 86400000).toISOString().slice(0, 10);
    return String(v);
  }
  throw new Error(`unknown kind ${kind}`);
}
function canonRows(rows, cols) {
  return rows.map((r) => cols.map(([name, kind]) => canon(kind, r[name])).join('|')).sort();
}

// ---- the tables ---------------------------------------------------------------------------

const LAKE_COLS = [['__bucket', 'int'], ['__offset', 'int'], ['__timestamp', 'ts']];
const tables = [
  {
    name: 'lk.events',
    cols: [['id', 'int'], ['name', 'str'], ['amount', 'dec:2'], ['at', 'ts'], ['day', 'date'],
           ['ok', 'bool'], ['score', 'dbl'], ['small', 'int'], ['label', 'str']],
    pk: false,
  },
  { name: 'lk.parted', cols: [['dt', 'str'], ['id', 'int'], ['v', 'str'], ['at', 'ts']], pk: false },
  { name: 'lk.users', cols: [['id', 'int'], ['name', 'str'], ['n', 'int'], ['amt', 'dec:3']], pk: true },
];

sql(`CREATE DATABASE lk;
     CREATE TABLE lk.events (id BIGINT NOT NULL, name STRING, amount DECIMAL(10, 2),
       at TIMESTAMP(3), day DATE, ok BOOLEAN, score DOUBLE, small INT, label VARCHAR(12))
       WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '3', 'bucket.key' = 'id');
     CREATE TABLE lk.parted (dt STRING NOT NULL, id INT, v VARCHAR(5), at TIMESTAMP_LTZ(3))
       PARTITIONED BY (dt) WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2');
     CREATE TABLE lk.users (id INT, name STRING, n BIGINT, amt DECIMAL(8, 3),
       PRIMARY KEY (id) NOT ENFORCED)
       WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2')`);

function eventsValues(from, to) {
  const v = [];
  for (let i = from; i < to; i++) {
    const name = i % 7 === 3 ? 'NULL' : `'name ${i}'`;
    const at = i % 5 === 4 ? 'NULL'
      : `TIMESTAMP '2026-11-${String(1 + (i % 28)).padStart(2, '0')} ${String(i % 24).padStart(2, '0')}:00:0${i % 10}.${String(i % 1000).padStart(3, '0')}'`;
    const day = i % 9 === 0 ? 'NULL' : `DATE '2026-${String(1 + (i % 12)).padStart(2, '0')}-15'`;
    v.push(`(${i * 1000003}, ${name}, ${(i * 37 % 100000) / 100 - 300}, ${at}, ${day}, ` +
           `${i % 3 === 0 ? 'NULL' : i % 2 === 0 ? 'true' : 'false'}, ${i / 8}, ${i % 11 - 5}, ` +
           `'${['a', 'bb', 'a', 'ccc'][i % 4]}')`);
  }
  return v.join(', ');
}
sql(`INSERT INTO lk.events VALUES ${eventsValues(0, 150)}`);
tier('lk.events');
sql(`INSERT INTO lk.events VALUES ${eventsValues(150, 230)}`);
sql(`INSERT INTO lk.events VALUES ${eventsValues(230, 260)}`);
tier('lk.events');

function partedValues(from, to) {
  const v = [];
  for (let i = from; i < to; i++) {
    v.push(`('${['2026-11-29', '2026-11-30', '2026-12-01'][i % 3]}', ${i}, ` +
           `${i % 4 === 0 ? 'NULL' : `'v${i % 100}'`}, TIMESTAMP_LTZ '2026-11-30 08:00:00.${String(i % 1000).padStart(3, '0')}Z')`);
  }
  return v.join(', ');
}
sql(`INSERT INTO lk.parted VALUES ${partedValues(0, 90)}`);
tier('lk.parted');
sql(`INSERT INTO lk.parted VALUES ${partedValues(90, 140)}`);
tier('lk.parted');

const users = [];
for (let i = 0; i < 60; i++) users.push(`(${i}, 'user ${i}', ${i * 10}, ${i * 1.5})`);
sql(`INSERT INTO lk.users VALUES ${users.join(', ')}`);
tier('lk.users');
sql(`UPDATE lk.users SET n = n + 1, name = 'updated' WHERE id < 10;
     DELETE FROM lk.users WHERE id >= 50;
     INSERT INTO lk.users (id, n) VALUES (20, 2020), (70, 7070)`);
tier('lk.users');
sql(`DELETE FROM lk.users WHERE id IN (1, 2, 70);
     INSERT INTO lk.users VALUES (2, 'back', 2, 0.002)`);
tier('lk.users');

// ---- Avro: manifest lists and manifests ---------------------------------------------------

// Iceberg's longs (snapshot ids) pass 2^53: read them as BigInt.
const LongType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});

function readAvro(path) {
  return new Promise((resolve, reject) => {
    const records = [];
    avro.createFileDecoder(path, {
      parseHook: (schema) => avro.Type.forSchema(schema, { registry: { long: LongType } }),
    })
      .on('metadata', (type, codec) => { records.codec = codec; records.type = type; })
      .on('data', (r) => records.push(r))
      .on('error', reject)
      .on('end', () => resolve(records));
  });
}

function tableDir(name) {
  const [db, t] = name.split('.');
  return join(warehouse, db, t);
}

function currentMetadata(tdir) {
  const hint = readFileSync(join(tdir, 'metadata', 'version-hint.text'), 'utf8').trim();
  const meta = JSON.parse(readFileSync(join(tdir, 'metadata', `v${hint}.metadata.json`), 'utf8'));
  assert.equal(meta['format-version'], 2, 'an Iceberg v2 table');
  checks++;
  return meta;
}

// The data and delete files of the current snapshot, as its manifests list them.
async function currentFiles(tdir) {
  const meta = currentMetadata(tdir);
  const snap = meta.snapshots.find((s) => String(s['snapshot-id']) === String(meta['current-snapshot-id']));
  assert.ok(snap, 'the current snapshot is in the metadata');
  const listPath = localPath(snap['manifest-list']) ?? join(tdir, snap['manifest-list']);
  const list = await readAvro(listPath);
  assert.ok(list.length >= 1, 'the manifest list names manifests');
  const files = [];
  for (const m of list) {
    for (const f of ['manifest_path', 'manifest_length', 'partition_spec_id', 'content',
                     'sequence_number', 'added_snapshot_id']) {
      assert.ok(f in m, `manifest list entries have ${f}`);
    }
    const entries = await readAvro(localPath(m.manifest_path) ?? join(tdir, m.manifest_path));
    assert.equal(statSync(localPath(m.manifest_path) ?? join(tdir, m.manifest_path)).size,
                 Number(m.manifest_length), 'manifest_length is the manifest file\'s size');
    for (const e of entries) {
      assert.ok('status' in e && 'data_file' in e, 'manifest entries have status and data_file');
      if (e.status === 2) continue; // deleted
      files.push({ ...e.data_file, manifestContent: m.content });
    }
    checks += 3;
  }
  return { meta, files };
}

// ---- the checks ---------------------------------------------------------------------------

const instance = await DuckDBInstance.create(':memory:');
const duck = await instance.connect();
await duck.run('SET threads = 1');

function duckExpr(name, kind) {
  const q = `"${name}"`;
  if (kind === 'ts') return `CAST(epoch_ms(${q}) AS VARCHAR)`;
  if (kind === 'str') return q;
  return `CAST(${q} AS VARCHAR)`;
}

for (const t of tables) {
  const cols = [...t.cols, ...LAKE_COLS];
  const want = canonRows(sqlJson(`SELECT * FROM ${t.name}$lake`), cols);
  assert.ok(want.length > 0, `${t.name}$lake has rows`);

  // icebird reads the table directory and must return exactly the lake's rows.
  const tdir = tableDir(t.name);
  const got = await icebergRead({ tableUrl: pathToFileURL(tdir).href });
  assert.deepStrictEqual(canonRows(got, cols), want, `icebird reads ${t.name} as ${t.name}$lake`);
  checks++;

  // Avro: every manifest of the current snapshot reads; its files exist with their sizes.
  const { files } = await currentFiles(tdir);
  const dataFiles = files.filter((f) => f.content === 0);
  const deleteFiles = files.filter((f) => f.content === 2);
  if (!t.pk) assert.equal(deleteFiles.length, 0, `${t.name}: a log table has no delete files`);
  else assert.ok(deleteFiles.length >= 1, `${t.name}: updates and deletes made delete files`);
  checks++;

  // DuckDB reads every data file: its row count and values.
  const duckRows = [];
  for (const f of files) {
    const path = localPath(f.file_path) ?? join(tdir, f.file_path);
    assert.equal(statSync(path).size, Number(f.file_size_in_bytes), `${path}: its size`);
    const count = await duck.runAndReadAll(`SELECT count(*) FROM read_parquet('${path}')`);
    assert.equal(Number(count.getRows()[0][0]), Number(f.record_count),
                 `DuckDB counts ${f.record_count} rows in ${path}`);
    checks += 2;
    if (f.content !== 0) continue;
    const r = await duck.runAndReadAll(
      `SELECT ${cols.map(([n, k]) => duckExpr(n, k)).join(', ')} FROM read_parquet('${path}')`);
    for (const row of r.getRows()) {
      duckRows.push(cols.map(([, kind], i) => canon(kind === 'ts' ? 'int' : kind, row[i])).join('|'));
    }
  }
  duckRows.sort();
  if (!t.pk) {
    // A log table's data files hold exactly its lake rows.
    assert.deepStrictEqual(duckRows, want, `DuckDB reads ${t.name}'s data files as its lake rows`);
  } else {
    // A primary-key table's data files hold every lake row (and older rows that equality
    // deletes hide).
    const have = new Set(duckRows);
    for (const row of want) assert.ok(have.has(row), `DuckDB finds lake row ${row} of ${t.name}`);
    const keyCols = deleteFiles.length ? await duck.runAndReadAll(
      `SELECT name FROM parquet_schema('${localPath(deleteFiles[0].file_path) ?? join(tdir, deleteFiles[0].file_path)}') WHERE num_children IS NULL`) : null;
    assert.deepStrictEqual(keyCols.getRows().map((r) => String(r[0])), ['id', '__bucket'],
                           'equality-delete files hold the key and __bucket');
  }
  checks++;
  console.log(`${t.name}: ${want.length} lake rows, ${dataFiles.length} data files, ` +
              `${deleteFiles.length} delete files`);
}

// The union reads are the tables' rows (the log alone agrees).
const usersNow = sqlJson('SELECT id, name, n FROM lk.users').map((r) => `${r.id}|${r.name}|${r.n}`).sort();
assert.ok(!usersNow.some((r) => r.startsWith('1|') || r.startsWith('70|')), 'deleted keys are gone');
assert.ok(usersNow.includes('2|back|2'), 'a key deleted then inserted again is back');
assert.ok(usersNow.includes('20|user 20|2020'), 'a partial update keeps the other columns');
checks += 3;

globalThis.fetch = realFetch;
rmSync(dir, { recursive: true, force: true });
console.log(`lake_icebird: ${checks} checks passed`);
