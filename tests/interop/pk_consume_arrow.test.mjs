// pk_consume_arrow.test.mjs — `firth consume --format arrow` of a primary-key table read by
// an independent Arrow implementation (apache-arrow for JavaScript): the changelog's
// _change_type is a Utf8 column in front (before _bucket and _offset when asked), every
// record of the changelog comes once with the right type and row, and a log table's stream
// has no such column.
//
// Environment: FIRTH (the binary) and FIRTH_TEST_TMP (a scratch directory).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC, Type } from 'apache-arrow';

const FIRTH = process.env.FIRTH;
const TMP = process.env.FIRTH_TEST_TMP;
if (!FIRTH || !TMP) {
  console.error('set FIRTH (the firth binary) and FIRTH_TEST_TMP (a scratch directory)');
  process.exit(2);
}
mkdirSync(TMP, { recursive: true });
const dir = mkdtempSync(join(TMP, 'pk_consume_arrow.'));
const data = join(dir, 'data');
let checks = 0;

function firth(args, input) {
  return execFileSync(FIRTH, args, { input, maxBuffer: 64 << 20, stdio: ['pipe', 'pipe', 'pipe'] });
}
function sql(text) {
  return firth(['sql', '--data-dir', data, '-e', text]).toString();
}
function consume(table, extra) {
  const args = ['consume', '--data-dir', data, '--table', table, '--format', 'arrow'];
  const out = firth([...args, ...extra]);
  return tableFromIPC(new Uint8Array(out));
}
function eq(actual, expected, what) {
  assert.deepStrictEqual(actual, expected, what);
  checks++;
}

sql(`CREATE TABLE users (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
       WITH ('bucket.num' = '3');
     CREATE TABLE clicks (id INT, url STRING)`);
// A model of the changelog: per key, its records in order.
const want = new Map();
const add = (id, type, name) => {
  if (!want.has(id)) want.set(id, []);
  want.get(id).push(`${type} ${name}`);
};
const rows = new Map();
for (let round = 0; round < 3; round++) {
  const values = [];
  for (let id = 0; id < 40; id++) {
    if ((id + round) % 3 === 0) continue;
    const name = `n${id}r${round}`;
    values.push(`(${id}, '${name}')`);
    if (rows.has(id)) {
      add(id, '-U', rows.get(id));
      add(id, '+U', name);
    } else {
      add(id, '+I', name);
    }
    rows.set(id, name);
  }
  sql(`INSERT INTO users VALUES ${values.join(', ')}`);
}
sql('DELETE FROM users WHERE id < 5');
for (let id = 0; id < 5; id++) {
  if (rows.has(id)) add(id, '-D', rows.get(id));
  rows.delete(id);
}

const t = consume('users', ['--with-offsets']);
eq(t.schema.fields.map((f) => f.name), ['_change_type', '_bucket', '_offset', 'id', 'name'],
   'the change type first, then the offsets, then the columns');
eq(t.schema.fields[0].type.typeId, Type.Utf8, '_change_type is Utf8');
eq(t.schema.fields[0].nullable, false, '_change_type is not nullable');
eq(t.schema.fields[1].type.typeId, Type.Int, '_bucket is an Int');
const got = new Map();
const offsetsOf = new Map();
for (let r = 0; r < t.numRows; r++) {
  const row = t.get(r);
  const id = row.id;
  if (!got.has(id)) got.set(id, []);
  got.get(id).push(`${row._change_type} ${row.name}`);
  const key = row._bucket;
  if (!offsetsOf.has(key)) offsetsOf.set(key, []);
  offsetsOf.get(key).push(Number(row._offset));
}
eq(new Map([...got.entries()].sort((a, b) => a[0] - b[0])),
   new Map([...want.entries()].sort((a, b) => a[0] - b[0])), 'every key\'s changelog');
for (const [bucket, offs] of offsetsOf)
  eq(offs, offs.map((_, i) => i), `bucket ${bucket}: offsets 0, 1, 2, ... in order`);

const p = consume('users', ['--columns', 'name', '--where', 'id = 7']);
eq(p.schema.fields.map((f) => f.name), ['_change_type', 'name'], 'projected');
eq(p.toArray().map((r) => `${r._change_type} ${r.name}`), want.get(7), 'one key, projected');

sql(`INSERT INTO clicks VALUES (1, 'a'), (2, 'b')`);
const l = consume('clicks', []);
eq(l.schema.fields.map((f) => f.name), ['id', 'url'], 'a log table has no change type');
eq(l.numRows, 2, 'a log table\'s rows');

rmSync(dir, { recursive: true, force: true });
console.log(`pk_consume_arrow: ok (${checks} checks)`);
