// peer_duckdb_kit.mjs — what the DuckDB peers of the lake benchmarks share: their options,
// SQL quoting, the median, and a single-threaded DuckDB connection.
// @duckdb/node-api comes from the interop tests' pinned install (tests/interop).
import { createRequire } from 'node:module';

const require = createRequire(new URL('../tests/interop/package.json', import.meta.url));
const { DuckDBInstance } = require('@duckdb/node-api');

// The --key value options after the script's name, over defaults; --reps is a number.
// --input, --columns and --out are required.
export function peerArgs(defaults) {
    const a = { reps: 3, ...defaults };
    for (let i = 2; i < process.argv.length; i += 2) {
        const k = process.argv[i].replace(/^--/, '');
        const v = process.argv[i + 1];
        if (v === undefined) throw new Error(`--${k} needs a value`);
        a[k] = k === 'reps' ? Number(v) : v;
    }
    if (!a.input || !a.columns || !a.out) throw new Error('--input, --columns and --out are required');
    return a;
}

export function median(v) {
    const s = [...v].sort((x, y) => x - y);
    return s[Math.floor(s.length / 2)];
}

export const quote = (s) => `'${s.replaceAll("'", "''")}'`;
export const ident = (s) => `"${s.replaceAll('"', '""')}"`;

// An in-memory DuckDB connection limited to one thread (SET threads=1), as firth's side is.
export async function singleThreaded() {
    const instance = await DuckDBInstance.create(':memory:');
    const conn = await instance.connect();
    await conn.run('SET threads=1');
    return conn;
}
