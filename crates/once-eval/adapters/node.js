// The Node.js side of a `once` evaluator. `once` runs this with `node -e` and talks to it over
// file descriptor 3 (a socket pair): one JSON request per line in, one JSON reply per line out.
// Where a descriptor cannot be inherited (Windows), ONCE_EVAL_CHANNEL names a loopback port and a
// token instead: the adapter connects, proves itself with the token, and removes the variable.
// Evaluated code runs in one persistent `vm` context; `process.stdout.write` and
// `process.stderr.write` are swapped for per-evaluation buffers while it runs, so nothing it
// prints can corrupt the protocol. Before each reply a marker goes to file descriptor 1, so
// `once` can cut output written straight to the descriptors (by subprocesses) at the end of the
// evaluation that produced it. SIGINT stops synchronous code (`breakOnSigint`) and rejects a
// pending promise; between evaluations it changes nothing. While code runs, what it prints is
// also sent as {"id", "output"} lines (the latest few KB, at most every 100 ms; during
// synchronous code only as it prints, since no timer runs then), so `once` can show progress.
'use strict';
const fs = require('fs');
const net = require('net');
const util = require('util');
const vm = require('vm');
const { createRequire } = require('module');
const path = require('path');

const MARKER = '\x1eonce-eval-end\x1e';
// Most characters of output one progress line carries, and how often one may be sent.
const PROGRESS_CHARS = 2048;
const PROGRESS_EVERY_MS = 100;

// The output of the evaluation in flight, on its way to `once`. Lines go through the same
// socket as replies, in order, so one never splits another.
const progress = {
  id: null,
  text: '',
  last: 0,
  timer: null,
  start(id) {
    this.id = id;
    this.text = '';
  },
  add(text) {
    if (this.id === null) return;
    this.text = (this.text + text).slice(-PROGRESS_CHARS);
    const left = this.last + PROGRESS_EVERY_MS - Date.now();
    if (left <= 0) this.send();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.send(), left);
      this.timer.unref();
    }
  },
  send() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.id === null || !this.text) return;
    channel.write(JSON.stringify({ id: this.id, output: this.text }) + '\n');
    this.text = '';
    this.last = Date.now();
  },
  stop() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.id = null;
    this.text = '';
  },
};

const sandbox = {
  console,
  process,
  Buffer,
  URL,
  URLSearchParams,
  TextEncoder,
  TextDecoder,
  AbortController,
  structuredClone,
  queueMicrotask,
  setTimeout,
  clearTimeout,
  setInterval,
  clearInterval,
  setImmediate,
  clearImmediate,
  require: createRequire(path.join(process.cwd(), 'once-eval.js')),
};
if (typeof fetch === 'function') sandbox.fetch = fetch;
if (typeof performance === 'object') sandbox.performance = performance;
const context = vm.createContext(sandbox);

class Capture {
  constructor(cap) {
    this.parts = [];
    this.size = 0;
    this.cap = cap;
    this.dropped = 0;
  }
  write(chunk, encoding, callback) {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    const room = this.cap - this.size;
    if (room > 0) {
      const kept = text.slice(0, room);
      this.parts.push(kept);
      this.size += kept.length;
    }
    this.dropped += Math.max(0, text.length - Math.max(room, 0));
    progress.add(text);
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') process.nextTick(done);
    return true;
  }
  text() {
    let text = this.parts.join('');
    if (this.dropped) text += `\n[once: ${this.dropped} more characters not kept]\n`;
    return text;
  }
}

const realWrite = { out: process.stdout.write, err: process.stderr.write };
// The promise of the evaluation in flight, rejected by SIGINT.
let pending = null;

process.on('SIGINT', () => {
  if (pending) pending.reject(new InterruptError());
});

class InterruptError extends Error {
  constructor() {
    super('interrupted while awaiting a promise');
    this.name = 'InterruptError';
  }
}

function describe(error) {
  if (error instanceof Error || (error && typeof error.stack === 'string')) return String(error.stack);
  return 'Uncaught ' + util.inspect(error);
}

function interrupted(error) {
  return error instanceof InterruptError ||
    (error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED');
}

async function evaluate(request) {
  const number = request.id;
  const cap = request.cap || 1 << 20;
  const out = new Capture(cap);
  const err = new Capture(cap);
  const reply = { id: number, status: 'ok', value: null, error: null };
  process.stdout.write = out.write.bind(out);
  process.stderr.write = err.write.bind(err);
  try {
    const script = new vm.Script(request.code, { filename: `<eval-${number}>` });
    let value = script.runInContext(context, { breakOnSigint: true, displayErrors: false });
    if (value && typeof value.then === 'function') {
      value = await new Promise((resolve, reject) => {
        pending = { reject };
        value.then(resolve, reject);
      });
    }
    if (value !== undefined) {
      reply.value = util.inspect(value);
      context._ = value;
    }
  } catch (error) {
    reply.status = interrupted(error) ? 'interrupted' : 'error';
    reply.error = describe(error);
  } finally {
    pending = null;
    process.stdout.write = realWrite.out;
    process.stderr.write = realWrite.err;
  }
  reply.stdout = out.text();
  reply.stderr = err.text();
  return reply;
}

// The private channel: descriptor 3, or the loopback port ONCE_EVAL_CHANNEL names.
function connect() {
  const address = process.env.ONCE_EVAL_CHANNEL;
  if (address === undefined) {
    return new net.Socket({ fd: 3, readable: true, writable: true });
  }
  delete process.env.ONCE_EVAL_CHANNEL;
  const [port, token] = address.split(' ');
  const socket = net.connect({ port: Number(port), host: '127.0.0.1' });
  socket.setNoDelay(true);
  socket.write(token + '\n');
  return socket;
}

const channel = connect();
let buffered = '';
let queue = Promise.resolve();
channel.setEncoding('utf8');
channel.on('data', (chunk) => {
  buffered += chunk;
  let end;
  while ((end = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    if (!line.trim()) continue;
    const request = JSON.parse(line);
    queue = queue.then(async () => {
      progress.start(request.id);
      const reply = await evaluate(request);
      progress.stop();
      try {
        fs.writeSync(1, MARKER);
        reply.marker = true;
      } catch (_) {
        reply.marker = false;
      }
      channel.write(JSON.stringify(reply) + '\n');
    });
  }
});
// `once` closed its end: nothing more will come.
channel.on('end', () => process.exit(0));
channel.on('error', () => process.exit(1));
