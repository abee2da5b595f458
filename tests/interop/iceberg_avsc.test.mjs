// iceberg_avsc.test.mjs — every manifest list and manifest of the Iceberg tables firth
// writes is read by the independent avsc reader (npm, pinned in package.json): the Avro
// container, the deflate blocks and every record must decode; the header must carry the
// metadata keys the Iceberg v2 spec requires; the schema must carry the spec's field ids
// (field-id, element-id, logicalType "map" with key/value ids); and the records must agree
// with the files on disk (lengths, sizes, sequence numbers, content kinds).
//
// iceberg_tool (FIRTH_ICEBERG_TOOL) writes the sample tables (iceberg_icebird.test.mjs
// describes them).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';

const tool = process.env.FIRTH_ICEBERG_TOOL;
if (!tool) throw new Error('FIRTH_ICEBERG_TOOL must name the iceberg_tool binary (set by CTest)');
const base = process.env.FIRTH_TEST_TMP || mkdtempSync(path.join(tmpdir(), 'firth-avsc-'));
mkdirSync(base, { recursive: true });
const warehouse = mkdtempSync(path.join(base, 'wh-'));
const tables = JSON.parse(execFileSync(tool, ['write', warehouse], { encoding: 'utf8' })).tables;

// Avro longs as BigInt: snapshot ids use all 63 bits.
const LongType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});

function readAvro(file) {
  return new Promise((resolve, reject) => {
    const records = [];
    let header;
    let codec;
    avro.createFileDecoder(file, {
      parseHook: (schema) => avro.Type.forSchema(schema, { registry: { long: LongType } }),
    })
      .on('metadata', (type, c, h) => { header = h; codec = c; })
      .on('data', (r) => records.push(r))
      .on('error', reject)
      .on('end', () => {
        const meta = {};
        for (const [k, v] of Object.entries(header.meta)) meta[k] = v.toString('utf8');
        resolve({ records, meta, codec, schema: JSON.parse(meta['avro.schema']) });
      });
  });
}

// JSON with integers beyond 2^53 (snapshot ids) kept exact, as strings.
const parseJsonBig = (text) => JSON.parse(text.replace(/([:\[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));
const localPath = (uri) => (uri.startsWith('file:') ? fileURLToPath(uri) : uri);
const fieldIds = (record) => Object.fromEntries(record.fields.map((f) => [f.name, f['field-id']]));
const unionOf = (field) => (Array.isArray(field.type) ? field.type.find((t) => t !== 'null') : field.type);

function checkManifestListSchema(schema) {
  assert.equal(schema.name, 'manifest_file');
  assert.deepEqual(fieldIds(schema), {
    manifest_path: 500, manifest_length: 501, partition_spec_id: 502, content: 517,
    sequence_number: 515, min_sequence_number: 516, added_snapshot_id: 503,
    added_files_count: 504, existing_files_count: 505, deleted_files_count: 506,
    added_rows_count: 512, existing_rows_count: 513, deleted_rows_count: 514,
    partitions: 507, key_metadata: 519,
  });
  const parts = unionOf(schema.fields.find((f) => f.name === 'partitions'));
  assert.equal(parts.type, 'array');
  assert.equal(parts['element-id'], 508);
  assert.equal(parts.items.name, 'r508');
  assert.deepEqual(fieldIds(parts.items), { contains_null: 509, contains_nan: 518, lower_bound: 510, upper_bound: 511 });
}

function checkMap(field, keyId, valueId) {
  const arr = unionOf(field);
  assert.equal(arr.type, 'array', `${field.name} is an array`);
  assert.equal(arr.logicalType, 'map', `${field.name} has logicalType map`);
  assert.deepEqual(fieldIds(arr.items), { key: keyId, value: valueId });
  assert.equal(arr.items.fields[0].type, 'int');
}

function checkManifestSchema(schema, partitionSpec) {
  assert.equal(schema.name, 'manifest_entry');
  assert.deepEqual(fieldIds(schema), { status: 0, snapshot_id: 1, sequence_number: 3, file_sequence_number: 4, data_file: 2 });
  const df = schema.fields.find((f) => f.name === 'data_file').type;
  assert.equal(df.name, 'r2');
  assert.deepEqual(fieldIds(df), {
    content: 134, file_path: 100, file_format: 101, partition: 102, record_count: 103,
    file_size_in_bytes: 104, column_sizes: 108, value_counts: 109, null_value_counts: 110,
    lower_bounds: 125, upper_bounds: 128, key_metadata: 131, split_offsets: 132,
    equality_ids: 135, sort_order_id: 140,
  });
  const f = (name) => df.fields.find((x) => x.name === name);
  checkMap(f('column_sizes'), 117, 118);
  checkMap(f('value_counts'), 119, 120);
  checkMap(f('null_value_counts'), 121, 122);
  checkMap(f('lower_bounds'), 126, 127);
  checkMap(f('upper_bounds'), 129, 130);
  assert.equal(unionOf(f('split_offsets'))['element-id'], 133);
  assert.equal(unionOf(f('equality_ids'))['element-id'], 136);
  const part = f('partition').type;
  assert.equal(part.name, 'r102');
  assert.deepEqual(part.fields.map((x) => [x.name, x['field-id']]),
    partitionSpec.map((p) => [p.name, p['field-id']]));
}

for (const dir of tables) {
  test(`avsc reads every manifest list and manifest of ${path.basename(dir)}`, async () => {
    const metaDir = path.join(dir, 'metadata');
    const hint = readFileSync(path.join(metaDir, 'version-hint.text'), 'utf8').trim();
    const meta = parseJsonBig(readFileSync(path.join(metaDir, `v${hint}.metadata.json`), 'utf8'));
    assert.equal(meta['format-version'], 2);
    const spec = meta['partition-specs'].find((s) => s['spec-id'] === meta['default-spec-id']).fields;
    const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
    const keyIds = schema['identifier-field-ids'] ?? [];
    const files = readdirSync(metaDir).filter((f) => f.endsWith('.avro'));
    const lists = files.filter((f) => f.startsWith('snap-'));
    assert.equal(lists.length, meta.snapshots.length, 'one manifest list per snapshot');
    const manifestsSeen = new Set();
    let existing = 0;
    for (const snap of meta.snapshots) {
      const list = await readAvro(localPath(snap['manifest-list']));
      assert.equal(list.codec, 'deflate');
      checkManifestListSchema(list.schema);
      assert.equal(list.meta['format-version'], '2');
      assert.equal(list.meta['snapshot-id'], String(snap['snapshot-id']));
      assert.equal(list.meta['sequence-number'], String(snap['sequence-number']));
      assert.equal(list.meta['parent-snapshot-id'], snap['parent-snapshot-id'] === undefined ? 'null' : String(snap['parent-snapshot-id']));
      let dataFiles = 0;
      let records = 0;
      for (const m of list.records) {
        const mpath = localPath(m.manifest_path);
        assert.equal(BigInt(statSync(mpath).size), m.manifest_length, 'manifest_length');
        assert.ok(m.sequence_number <= BigInt(snap['sequence-number']));
        manifestsSeen.add(path.basename(mpath));
        const man = await readAvro(mpath);
        assert.equal(man.codec, 'deflate');
        checkManifestSchema(man.schema, spec);
        assert.equal(man.meta['format-version'], '2');
        assert.equal(man.meta['content'], m.content === 0 ? 'data' : 'deletes');
        assert.equal(man.meta['partition-spec-id'], String(m.partition_spec_id));
        assert.equal(man.meta['schema-id'], String(meta['current-schema-id']));
        assert.deepEqual(JSON.parse(man.meta['partition-spec']), spec);
        assert.equal(JSON.parse(man.meta['schema'])['schema-id'], meta['current-schema-id']);
        assert.equal(man.records.length, m.added_files_count + m.existing_files_count + m.deleted_files_count);
        // Partition summaries: one per partition field, bounds around every file's value.
        assert.ok(Array.isArray(m.partitions), 'partitions written');
        assert.equal(m.partitions.length, spec.length);
        spec.forEach((pf, i) => {
          const sum = m.partitions[i];
          const type = schema.fields.find((x) => x.id === pf['source-id']).type;
          const dec = (b) => (type === 'string' ? b.toString('utf8') : b.readInt32LE());
          for (const e of man.records) {
            const v = e.data_file.partition[Object.keys(e.data_file.partition)[i]];
            if (v === null) { assert.ok(sum.contains_null); continue; }
            assert.ok(dec(sum.lower_bound) <= v && v <= dec(sum.upper_bound), `partition ${pf.name} bounds`);
          }
        });
        assert.equal(man.records.filter((e) => e.status === 1).length, m.added_files_count);
        assert.equal(man.records.filter((e) => e.status === 0).length, m.existing_files_count);
        existing += m.existing_files_count;
        for (const e of man.records) {
          assert.ok(e.status === 0 || e.status === 1, 'added or existing');
          if (e.status === 1) {
            assert.equal(e.sequence_number, m.sequence_number);
            assert.equal(e.file_sequence_number, m.sequence_number);
            assert.equal(e.snapshot_id, m.added_snapshot_id);
          } else {
            // Entries carried into a merged manifest keep their own numbers.
            assert.ok(e.sequence_number >= m.min_sequence_number && e.sequence_number < m.sequence_number);
            assert.ok(e.snapshot_id !== null && e.file_sequence_number !== null);
          }
          const d = e.data_file;
          assert.equal(d.file_format, 'PARQUET');
          assert.equal(BigInt(statSync(localPath(d.file_path)).size), d.file_size_in_bytes);
          assert.ok(d.record_count > 0n);
          assert.equal(Object.keys(d.partition).length, spec.length);
          if (m.content === 0) {
            assert.equal(d.content, 0);
            assert.equal(d.equality_ids, null);
            dataFiles++;
            records += Number(d.record_count);
            // Every column has counts; bounds are 4 or 8 bytes for fixed-width types.
            assert.equal(d.value_counts.length, schema.fields.length);
            for (const { key, value } of d.value_counts) assert.equal(value, d.record_count, `value count of ${key}`);
            const idField = schema.fields.find((x) => x.name === 'id');
            const lo = d.lower_bounds.find((b) => b.key === idField.id);
            const hi = d.upper_bounds.find((b) => b.key === idField.id);
            assert.equal(lo.value.length, 8);
            assert.ok(lo.value.readBigInt64LE() <= hi.value.readBigInt64LE());
          } else {
            assert.equal(d.content, 2, 'equality deletes');
            assert.deepEqual(d.equality_ids, keyIds);
          }
          assert.ok(Array.isArray(d.split_offsets) && d.split_offsets.length >= 1);
          assert.equal(d.split_offsets[0], 4n, 'the first row group starts after the magic');
        }
      }
      assert.equal(dataFiles, Number(snap.summary['total-data-files']));
      assert.equal(records, Number(snap.summary['total-records']));
    }
    if (path.basename(dir) === 'merged') assert.ok(existing > 0, 'manifests were merged');
    // Every manifest written is in some snapshot's list (merged ones in the older lists).
    const manifests = files.filter((f) => !f.startsWith('snap-'));
    assert.deepEqual([...manifestsSeen].sort(), manifests.sort());
    assert.ok(existsSync(path.join(metaDir, `v${hint}.metadata.json`)));
  });
}
