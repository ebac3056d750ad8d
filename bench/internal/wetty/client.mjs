// termbench's client of WeTTY: connects over socket.io as WeTTY's browser
// client does (events "input", "resize" and "commit" out; "data", "login"
// and "logout" in; a commit of 256 KiB each time that much has arrived, so
// WeTTY's flow control never pauses the shell for it), then runs one
// operation that the Go program asked for in argv[2] (JSON) and prints one
// JSON line with the result. The operations mirror bench/internal/termload:
// the same typed commands and markers, timed the same way.
//
// Protocol with the Go program: once connected and synced (the shell has
// answered a marker command), print {"ready":true}; wait for a line on
// stdin; run the operation; print the result; exit.
import { io } from 'socket.io-client';
import { createInterface } from 'node:readline';

const o = JSON.parse(process.argv[2]);
const ackBytes = 262144;
const now = () => process.hrtime.bigint();

const socket = io(o.url, {
  path: o.path,
  transports: ['websocket'],
  reconnection: false,
  forceNew: true,
  timeout: o.timeout_ms,
});

let acked = 0;
let waiter = null; // {marker, tail, bytes, resolve}
let flood = null; // {bytes}
let failed = null;

function fail(err) {
  if (failed) return;
  failed = err;
  process.stdout.write(JSON.stringify({ error: String(err) }) + '\n');
  socket.close();
  process.exit(1);
}

socket.on('connect_error', (e) => fail(`connect: ${e.message}`));
socket.on('logout', () => fail('the shell exited'));
socket.on('disconnect', (r) => { if (!done) fail(`disconnected: ${r}`); });
socket.on('data', (d) => {
  acked += d.length;
  if (acked >= ackBytes) {
    acked -= ackBytes;
    socket.emit('commit', ackBytes);
  }
  const n = Buffer.byteLength(d, 'utf8');
  if (flood) flood.bytes += n;
  if (!waiter) return;
  const w = waiter;
  // The marker may straddle two messages: look in the tail of the last
  // one joined to the head of this one, then in this one.
  const k = w.marker.length - 1;
  let end = -1;
  const j = (w.tail + d.slice(0, k)).indexOf(w.marker);
  if (j >= 0) end = j + w.marker.length - w.tail.length;
  else {
    const i = d.indexOf(w.marker);
    if (i >= 0) end = i + w.marker.length;
  }
  if (end >= 0) {
    w.bytes += Buffer.byteLength(d.slice(0, end), 'utf8');
    waiter = null;
    w.resolve(w.bytes);
    return;
  }
  w.bytes += n;
  w.tail = (w.tail + d).slice(-k);
});

let done = false;

function until(marker, ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => fail(`timed out waiting for ${JSON.stringify(marker)}`), ms);
    waiter = {
      marker, tail: '', bytes: 0,
      resolve: (n) => { clearTimeout(timer); resolve(n); },
    };
  });
}

function nonce() {
  return [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// As termload.MarkerCommand: the echoed command line cannot hold the marker.
function markerCommand(word) {
  const n = nonce();
  return [`printf '%s-%s\\n' ${word} ${n}`, `${word}-${n}`];
}

function quote(s) { return `'${s.replaceAll("'", "'\\''")}'`; }

async function sync() {
  const [cmd, mark] = markerCommand('READY');
  const p = until(mark, o.timeout_ms);
  socket.emit('input', cmd + '\r');
  await p;
}

async function settle(quietMs) {
  for (;;) {
    let got = false;
    flood = { bytes: 0 };
    await new Promise((r) => setTimeout(r, quietMs));
    got = flood.bytes > 0;
    flood = null;
    if (!got) return;
  }
}

async function cat() {
  const [cmd, mark] = markerCommand('END');
  const p = until(mark, o.timeout_ms);
  const t0 = now();
  socket.emit('input', `cat ${quote(o.file)}; ${cmd}\r`);
  const bytes = await p;
  return { bytes, ns: Number(now() - t0) };
}

async function echo() {
  const lat = [];
  for (let i = 0; i < o.count; i++) {
    const p = until('x', o.timeout_ms);
    const t0 = now();
    socket.emit('input', 'x');
    await p;
    lat.push(Number(now() - t0));
    const q = until('\b', o.timeout_ms);
    socket.emit('input', '\x7f');
    await q;
  }
  return { latencies_ns: lat };
}

async function interrupt() {
  const started = until('y\r\ny\r\ny\r\n', o.timeout_ms);
  socket.emit('input', 'yes\r');
  await started;
  flood = { bytes: 0 };
  await new Promise((r) => setTimeout(r, o.flood_ms));
  const floodBytes = flood.bytes;
  flood = null;
  const [cmd, mark] = markerCommand('STOP');
  const p = until(mark, o.timeout_ms);
  const t0 = now();
  socket.emit('input', '\x03');
  socket.emit('input', cmd + '\r');
  await p;
  return { ns: Number(now() - t0), flood_bytes: floodBytes };
}

const ops = { cat, echo, interrupt };

socket.on('login', async () => {
  try {
    socket.emit('resize', { cols: 80, rows: 24 });
    await sync();
    await settle(50);
    process.stdout.write(JSON.stringify({ ready: true }) + '\n');
    const rl = createInterface({ input: process.stdin });
    await new Promise((r) => rl.once('line', r));
    rl.close();
    const res = await ops[o.op]();
    done = true;
    process.stdout.write(JSON.stringify(res) + '\n');
    socket.close();
    process.exit(0);
  } catch (e) {
    fail(e);
  }
});
