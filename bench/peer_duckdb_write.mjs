// peer_duckdb_write.mjs — DuckDB writing Parquet with ZSTD, the peer of bench_lake_tier.
//
// Usage: node bench/peer_duckdb_write.mjs --input GLOB --columns a,b,... --out FILE.json
//                                         [--reps N] [--dir SCRATCH_DIR]
//
// Loads the rows of the Parquet files GLOB (the benchmark table's columns, as firth tiered
// them) into an in-memory DuckDB table (untimed), then, single-threaded (SET threads=1),
// times `COPY t TO 'out.parquet' (FORMAT parquet, COMPRESSION zstd)` N times, each into a
// new file in SCRATCH_DIR, and writes the median rows/s and the details to FILE.json.
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { ident, median, peerArgs, quote, singleThreaded } from './peer_duckdb_kit.mjs';

const a = peerArgs({ dir: '.' });
const cols = a.columns.split(',').map(ident).join(', ');
const conn = await singleThreaded();
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
