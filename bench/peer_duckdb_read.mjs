// peer_duckdb_read.mjs — DuckDB reading Parquet files, the peer of bench_lake_read.
//
// Usage: node bench/peer_duckdb_read.mjs --input GLOB --columns a,b,... --out FILE.json
//                                        [--reps N]
//
// Single-threaded (SET threads=1), times `SELECT a, b, ... FROM read_parquet(GLOB)` N times,
// streaming the result chunk by chunk: DuckDB reads and decodes every chunk, and the chunks
// are counted without converting their values to JavaScript (firth's side builds every
// batch and frees it). Writes the median rows/s and the details to FILE.json.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { ident, median, peerArgs, quote, singleThreaded } from './peer_duckdb_kit.mjs';

const a = peerArgs({});
const cols = a.columns.split(',').map(ident).join(', ');
const conn = await singleThreaded();
const sql = `SELECT ${cols} FROM read_parquet(${quote(a.input)})`;
const runs = [];
for (let r = 0; r < a.reps; r++) {
    const t0 = performance.now();
    const result = await conn.stream(sql);
    let rows = 0;
    for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        rows += chunk.rowCount;
    }
    const seconds = (performance.now() - t0) / 1000;
    runs.push({ seconds, rows, rows_per_s: rows / seconds });
}
const result = {
    peer: 'duckdb',
    version: (await conn.runAndReadAll('SELECT version()')).getRows()[0][0],
    what: `${sql}, streamed chunk by chunk, SET threads=1`,
    rows: runs[0].rows,
    reps: runs.length,
    runs,
    median: { rows_per_s: median(runs.map((x) => x.rows_per_s)), seconds: median(runs.map((x) => x.seconds)) },
};
writeFileSync(a.out, JSON.stringify(result, null, 2) + '\n');
console.log(`  duckdb: ${result.rows} rows, columns ${a.columns}, 1 thread: median ${result.median.rows_per_s.toFixed(0)} rows/s`);
conn.closeSync?.();
