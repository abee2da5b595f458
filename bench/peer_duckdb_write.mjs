// peer_duckdb_write.mjs — DuckDB writing Parquet with ZSTD, the peer of bench_lake_tier.
//
// Usage: node bench/peer_duckdb_write.mjs --input GLOB --columns a,b,... --out FILE.json
//                                         [--reps N] [--dir SCRATCH_DIR]
//
// Loads the rows of the Parquet files GLOB (the benchmark table's columns, as firth tiered
// them) into an in-memory DuckDB table (untimed), then, single-threaded (SET threads=1),
// times `COPY t TO 'out.parquet' (FORMAT parquet, COMPRESSION zstd)` N times, each into a
// new file in SCRATCH_DIR, and writes the median rows/s and the details to FILE.json.
// @duckdb/node-api comes from the interop tests' pinned install (tests/interop).
import { createRequire } from 'node:module';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const require = createRequire(new URL('../tests/interop/package.json', import.meta.url));
const { DuckDBInstance } = require('@duckdb/node-api');

function args() {
    const a = { reps: 3, dir: '.' };
    for (let i = 2; i < process.argv.length; i += 2) {
        const k = process.argv[i].replace(/^--/, '');
        const v = process.argv[i + 1];
        if (v === undefined) throw new Error(`--${k} needs a value`);
        a[k] = k === 'reps' ? Number(v) : v;
    }
    if (!a.input || !a.columns || !a.out) throw new Error('--input, --columns and --out are required');
    return a;
}

function median(v) {
    const s = [...v].sort((x, y) => x - y);
    return s[Math.floor(s.length / 2)];
}

const quote = (s) => `'${s.replaceAll("'", "''")}'`;
const ident = (s) => `"${s.replaceAll('"', '""')}"`;

const a = args();
const cols = a.columns.split(',').map(ident).join(', ');
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run('SET threads=1');
await conn.run(`CREATE TABLE t AS SELECT ${cols} FROM read_parquet(${quote(a.input)})`);
const rows = Number((await conn.runAndReadAll('SELECT count(*) FROM t')).getRows()[0][0]);
mkdirSync(a.dir, { recursive: true });
const runs = [];
for (let r = 0; r < a.reps; r++) {
    const file = join(a.dir, `duckdb-${r}.parquet`);
    rmSync(file, { force: true });
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await conn.run(`COPY t TO ${quote(file)} (FORMAT parquet, COMPRESSION zstd)`);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(c0);
    const cpu_seconds = (cpu.user + cpu.system) / 1e6;
    runs.push({ seconds, cpu_seconds, rows_per_s: rows / seconds, rows_per_cpu_s: rows / cpu_seconds,
                file_bytes: statSync(file).size });
    rmSync(file, { force: true });
}
const result = {
    peer: 'duckdb',
    version: (await conn.runAndReadAll('SELECT version()')).getRows()[0][0],
    what: 'COPY t TO FILE (FORMAT parquet, COMPRESSION zstd) from an in-memory table, SET threads=1',
    rows,
    reps: runs.length,
    runs,
    median: {
        rows_per_s: median(runs.map((x) => x.rows_per_s)),
        rows_per_cpu_s: median(runs.map((x) => x.rows_per_cpu_s)),
        seconds: median(runs.map((x) => x.seconds)),
    },
};
writeFileSync(a.out, JSON.stringify(result, null, 2) + '\n');
console.log(`  DuckDB: ${rows} rows to Parquet (ZSTD), 1 thread: median ${result.median.rows_per_s.toFixed(0)} rows/s ` +
    `(${result.median.rows_per_cpu_s.toFixed(0)} rows per CPU-second)`);
conn.closeSync?.();
