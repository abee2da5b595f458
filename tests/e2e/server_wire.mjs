// server_wire.mjs — a small client of firth's native protocol and HTTP listener for the
// end-to-end tests of `firth server`, written from docs/PROTOCOL.md alone (frames and a
// hand-rolled protobuf encoder and decoder), so that it also checks the wire format from
// outside the C code.
//
// Usage:
//   node server_wire.mjs versions HOST:PORT           prints the limits, then one line per api
//   node server_wire.mjs sql HOST:PORT "SQL"           prints one line per statement
//   node server_wire.mjs park-fetch HOST:PORT DB TABLE BUCKET OFFSET WAIT_MS
//        sends a long-polling fetch, prints "sent", then "answered bytes=N next=M" and
//        "closed" when the server closes the connection
//   node server_wire.mjs raw HOST:PORT HEX             sends bytes, prints the first
//        response frame as "result=R id=I code=C message=..." and "closed" at the end
//   node server_wire.mjs lake-snapshot HOST:PORT DB TABLE
//        prints "snapshot_id=S committed_at_ms=T offsets=p-1/b0:120,p-1/b1:98" (offsets as
//        t$lake_snapshots formats them, in the order received), or the error
//   node server_wire.mjs http HOST:PORT PATH          prints status and body
// Exit status: 0 on success, 1 on an ERROR frame or anything unexpected.
import net from 'node:net';

// ---- protobuf, the few wire types the messages use -------------------------------------

function varint(v) {
  let n = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    let b = Number(n & 0x7fn);
    n >>= 7n;
    if (n > 0n) b |= 0x80;
    out.push(b);
  } while (n > 0n);
  return Buffer.from(out);
}
const key = (field, wire) => varint((field << 3) | wire);
const fInt = (field, v) => Buffer.concat([key(field, 0), varint(v)]);
const fBytes = (field, b) => Buffer.concat([key(field, 2), varint(b.length), b]);
const fStr = (field, s) => fBytes(field, Buffer.from(s, 'utf8'));
const fMsg = (field, parts) => fBytes(field, Buffer.concat(parts));

// Decodes a message into {field: [values]}: varints as BigInt, length-delimited as Buffer.
function decode(buf) {
  const fields = {};
  let pos = 0;
  const readVarint = () => {
    let v = 0n, shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const k = Number(readVarint());
    const field = k >> 3, wire = k & 7;
    let v;
    if (wire === 0) v = readVarint();
    else if (wire === 2) {
      const len = Number(readVarint());
      v = buf.subarray(pos, pos + len);
      pos += len;
    } else throw new Error(`wire type ${wire} not expected`);
    (fields[field] ||= []).push(v);
  }
  return fields;
}
const str = (f, n) => (f[n] ? f[n][0].toString('utf8') : '');
const num = (f, n) => (f[n] ? BigInt.asIntN(64, f[n][0]) : 0n);

// ---- frames ----------------------------------------------------------------------------

function request(api, id, body) {
  const h = Buffer.alloc(12);
  h.writeInt32BE(8 + body.length, 0);
  h.writeInt16BE(api, 4);
  h.writeInt16BE(0, 6);
  h.writeInt32BE(id, 8);
  return Buffer.concat([h, body]);
}

// A connection that yields response frames {result, id, body} and null at the end.
function connect(addr) {
  const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
  const sock = net.connect(port, host);
  let buf = Buffer.alloc(0), waiters = [], frames = [], ended = false;
  const pump = () => {
    while (buf.length >= 4) {
      const len = buf.readInt32BE(0);
      if (buf.length < 4 + len) break;
      frames.push({ result: buf.readInt8(4), id: buf.readInt32BE(5), body: buf.subarray(9, 4 + len) });
      buf = buf.subarray(4 + len);
    }
    while (waiters.length && (frames.length || ended)) waiters.shift()(frames.length ? frames.shift() : null);
  };
  sock.on('data', (d) => { buf = Buffer.concat([buf, d]); pump(); });
  sock.on('end', () => { ended = true; pump(); });
  sock.on('error', () => { ended = true; pump(); });
  return {
    send: (b) => new Promise((ok) => sock.write(b, ok)),
    next: () => new Promise((ok) => { waiters.push(ok); pump(); }),
    close: () => sock.destroy(),
    ready: new Promise((ok, no) => { sock.once('connect', ok); sock.once('error', no); }),
  };
}

function errorText(body) {
  const e = decode(body);
  return `code=${num(e, 1)} message=${str(e, 2)} line=${num(e, 3)} column=${num(e, 4)} statement=${num(e, 5)}`;
}

// ---- commands --------------------------------------------------------------------------

async function versions(addr) {
  const c = connect(addr);
  await c.ready;
  await c.send(request(0, 1, fStr(1, 'server_wire.mjs')));
  const f = await c.next();
  if (!f || f.result !== 0) throw new Error('api_versions failed');
  const m = decode(f.body);
  console.log(`server=${str(m, 2)} apis=${(m[1] || []).length} frame_bytes_max=${num(m, 3)} in_flight_max=${num(m, 4)}`);
  for (const a of (m[1] || []).map(decode))
    console.log(`api key=${num(a, 1)} name=${str(a, 4)} versions=${num(a, 2)}..${num(a, 3)}`);
  c.close();
}

async function sql(addr, text) {
  const c = connect(addr);
  await c.ready;
  await c.send(request(15, 1, fStr(1, text)));
  for (;;) {
    const f = await c.next();
    if (!f) throw new Error('connection closed');
    if (f.result === 1) {
      console.log(`error ${errorText(f.body)}`);
      process.exitCode = 1;
      break;
    }
    const m = decode(f.body);
    if (m[3] && m[3][0] === 1n) console.log(`statement ${num(m, 1)} done rows=${num(m, 5)} message=${str(m, 4)}`);
    else if (num(m, 5) > 0n) console.log(`statement ${num(m, 1)} part rows=${num(m, 5)}`);
    if (f.result === 0) {
      console.log(`database=${str(m, 6)}`);
      break;
    }
  }
  c.close();
}

async function parkFetch(addr, db, table, bucket, offset, waitMs) {
  const c = connect(addr);
  await c.ready;
  const fb = [fInt(1, -1), fInt(2, Number(bucket)), fInt(3, Number(offset))];
  const ft = [fMsg(1, [fStr(1, db), fStr(2, table)]), fMsg(5, fb)];
  await c.send(request(11, 7, Buffer.concat([fMsg(1, ft), fInt(2, Number(waitMs)), fInt(3, 1)])));
  console.log('sent');
  const f = await c.next();
  if (!f) throw new Error('closed before an answer');
  if (f.result !== 0) throw new Error(`fetch failed: ${errorText(f.body)}`);
  const t = decode(decode(f.body)[1][0]);
  const b = decode(t[3][0]);
  console.log(`answered bytes=${b[6] ? b[6][0].length : 0} next=${num(b, 7)}`);
  const end = await c.next();
  if (end === null) console.log('closed');
}

async function raw(addr, hex) {
  const c = connect(addr);
  await c.ready;
  await c.send(Buffer.from(hex, 'hex'));
  const f = await c.next();
  if (f) console.log(`result=${f.result} id=${f.id} ${f.result === 1 ? errorText(f.body) : ''}`);
  c.close();
}

async function lakeSnapshot(addr, db, table) {
  const c = connect(addr);
  await c.ready;
  await c.send(request(17, 3, fMsg(1, [fStr(1, db), fStr(2, table)])));
  const f = await c.next();
  if (!f) throw new Error('closed before an answer');
  if (f.result === 1) {
    console.log(`error ${errorText(f.body)}`);
    process.exitCode = 1;
  } else {
    const m = decode(f.body);
    const offsets = (m[3] || []).map(decode).map((o) => `p${num(o, 1)}/b${num(o, 2)}:${num(o, 3)}`);
    console.log(`snapshot_id=${num(m, 1)} committed_at_ms=${num(m, 2)} offsets=${offsets.join(',')}`);
  }
  c.close();
}

async function http(addr, path) {
  const r = await fetch(`http://${addr}${path}`);
  console.log(`status=${r.status}`);
  console.log(await r.text());
}

const [cmd, ...args] = process.argv.slice(2);
const commands = { versions, sql, 'park-fetch': parkFetch, raw, 'lake-snapshot': lakeSnapshot, http };
if (!commands[cmd]) {
  console.error('usage: node server_wire.mjs versions|sql|park-fetch|raw|lake-snapshot|http ...');
  process.exit(2);
}
commands[cmd](...args).catch((e) => {
  console.error(`server_wire: ${e.message}`);
  process.exit(1);
});
