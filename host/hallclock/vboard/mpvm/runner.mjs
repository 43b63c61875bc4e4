// hallclock MicroPython VM bridge: runs the MicroPython webassembly port
// (npm @micropython/micropython-webassembly-pyscript) under node and serves a
// small binary protocol on stdin/stdout for host/hallclock/vboard/mpvm/__init__.py.
//
// usage: node runner.mjs --modules NODE_MODULES_DIR [--heapsize BYTES] [--pystack WORDS]
//
// Frames, both directions: 1 byte op (ASCII), u32 little-endian payload length, payload.
// Requests (Python -> node); each gets exactly one terminal reply 'O' or 'E',
// possibly preceded by 'P' frames (bytes the VM printed on stdout/stderr):
//   'F' write files: repeated [u16 len][path utf-8][u32 len][data]; dirs are created
//   'X' exec: payload = Python source (utf-8), run at top level in __main__
//   'H' heap: gc.collect() at top level, then O payload = ascii "mem_alloc"
//   'B' bind: payload = expression naming the stepping object (feed/step/take_output)
//   'S' step: payload = u32 n + bytes to feed first;
//       O payload = u8 status + output bytes (stops at first output or status != 0)
//   'I' REPL init (banner), 'C' REPL chars: payload = bytes typed;
//       O payload = u8 flags (1 = soft reset requested) + bytes the REPL wrote
//   'Z' soft reset: new VM instance, in-memory filesystem carried over
//   'Q' quit
// Replies (node -> Python): 'P' printed bytes, 'O' ok, 'E' error:
//   payload = exception type name, "\n", traceback text (utf-8).
// The VM's GC runs only at top level (between requests): the webassembly port
// defers gc.collect() until no C stack is live, and grows its heap meanwhile.

import path from "node:path";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
  const opts = { modules: null, heapsize: 256 * 1024, pystack: 4096 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    if (a === "--modules") { opts.modules = v; i++; }
    else if (a === "--heapsize") { opts.heapsize = parseInt(v, 10); i++; }
    else if (a === "--pystack") { opts.pystack = parseInt(v, 10); i++; }
    else { throw new Error(`runner.mjs: unknown argument ${a}`); }
  }
  if (!opts.modules) throw new Error("runner.mjs: --modules NODE_MODULES_DIR is required");
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const pkgFile = path.join(opts.modules, "@micropython", "micropython-webassembly-pyscript", "micropython.mjs");
const { loadMicroPython } = await import(pathToFileURL(pkgFile).href);

let printed = [];          // bytes the VM wrote since the last flush
let mp = null;             // the VM instance
let stepFn = null;         // bound _mpvm_step callable, after 'B'
let dead = null;           // reason, once the wasm instance aborted

async function newVM() {
  stepFn = null;
  return await loadMicroPython({
    heapsize: opts.heapsize,
    pystack: opts.pystack,
    linebuffer: false,
    stdout: (u8) => { for (const b of u8) printed.push(b); },
    stderr: (u8) => { for (const b of u8) printed.push(b); },
  });
}

// Helpers defined in every fresh VM.  An exception escaping to the top level
// while micropython.heap_lock() is in force hangs this port (it cannot format
// the exception), so exec and step unlock the heap before re-raising.
const GUARD_SRC = `
def _mpvm_guard():
    import micropython
    unlock = micropython.heap_unlock
    def unlock_all():
        for _ in range(1000):
            try:
                bytearray(8)
                return
            except MemoryError:
                unlock()
    g = globals()
    def run(src):
        try:
            exec(src, g)
        except BaseException:
            unlock_all()
            raise
    return unlock_all, run
_mpvm_unlock_all, _mpvm_exec = _mpvm_guard()
del _mpvm_guard
`;

let execFn = null;         // _mpvm_exec callable of the current VM

async function freshVM() {
  mp = await newVM();
  mp.runPython(GUARD_SRC);
  execFn = mp.globals.get("_mpvm_exec");
}

await freshVM();

// ---------------------------------------------------------------- output
function send(op, payload) {
  const body = payload === undefined ? Buffer.alloc(0) : Buffer.from(payload);
  const hdr = Buffer.alloc(5);
  hdr.write(op, 0, "latin1");
  hdr.writeUInt32LE(body.length, 1);
  process.stdout.write(Buffer.concat([hdr, body]));
}

function flushPrinted() {
  if (printed.length) {
    send("P", Uint8Array.from(printed));
    printed = [];
  }
}

function sendError(err) {
  flushPrinted();
  if (err && err.name === "PythonError") {
    send("E", Buffer.from(`${err.type}\n${err.message}`, "utf8"));
  } else {
    // A JS-level failure (wasm abort, stack overflow, bug in this script).
    const msg = err && err.stack ? err.stack : String(err);
    if (err instanceof WebAssembly.RuntimeError || /Aborted/.test(msg)) dead = msg;
    send("E", Buffer.from(`VMCrash\n${msg}\n`, "utf8"));
  }
}

// ---------------------------------------------------------------- helpers
function writeFiles(buf) {
  let off = 0;
  const FS = mp.FS;
  while (off < buf.length) {
    const plen = buf.readUInt16LE(off); off += 2;
    const p = buf.subarray(off, off + plen).toString("utf8"); off += plen;
    const dlen = buf.readUInt32LE(off); off += 4;
    const data = buf.subarray(off, off + dlen); off += dlen;
    const dir = path.posix.dirname(p);
    if (dir && dir !== "/" && dir !== ".") FS.mkdirTree(dir);
    FS.writeFile(p, new Uint8Array(data));
  }
}

const SKIP_DIRS = new Set(["/dev", "/proc"]);

function snapshotFS(FS, dir = "/", acc = []) {
  for (const name of FS.readdir(dir)) {
    if (name === "." || name === "..") continue;
    const p = dir === "/" ? "/" + name : dir + "/" + name;
    if (SKIP_DIRS.has(p)) continue;
    const st = FS.stat(p);
    if (FS.isDir(st.mode)) { acc.push([p, null]); snapshotFS(FS, p, acc); }
    else if (FS.isFile(st.mode)) acc.push([p, FS.readFile(p)]);
  }
  return acc;
}

function restoreFS(FS, entries) {
  for (const [p, data] of entries) {
    if (data === null) FS.mkdirTree(p);
    else FS.writeFile(p, data);
  }
}

const STEP_SRC = (expr) => `
def _mpvm_bind():
    from binascii import hexlify, unhexlify
    obj = ${expr}
    feed = obj.feed
    step = obj.step
    take = obj.take_output
    def _mpvm_step(n, feed_hex):
        try:
            if feed_hex:
                feed(unhexlify(feed_hex))
            st = 0
            for _ in range(n):
                st = step()
                out = take()
                if out:
                    return '%d:%s' % (st, hexlify(out).decode())
                if st:
                    break
            return '%d:' % st
        except BaseException:
            _mpvm_unlock_all()
            raise
    return _mpvm_step
_mpvm_step = _mpvm_bind()
del _mpvm_bind
`;

function replChars(buf) {
  let flags = 0;
  for (const c of buf) {
    const r = mp.replProcessChar(c);
    if (r) { flags |= 1; break; } // PYEXEC_FORCED_EXIT: soft reset wanted; rest is dropped
  }
  const out = Uint8Array.from(printed);
  printed = [];
  return Buffer.concat([Buffer.from([flags]), Buffer.from(out)]);
}

// ---------------------------------------------------------------- dispatch
async function handle(op, payload) {
  if (dead && op !== "Q") {
    send("E", Buffer.from(`VMCrash\nVM is dead after an earlier crash:\n${dead}\n`, "utf8"));
    return;
  }
  try {
    switch (op) {
      case "F":
        writeFiles(payload);
        flushPrinted(); send("O");
        break;
      case "X":
        execFn(payload.toString("utf8"));
        flushPrinted(); send("O");
        break;
      case "H": {
        mp.runPython("import gc\ngc.collect()\n");      // collection happens on return
        mp.runPython("import gc\n_mpvm_heap = gc.mem_alloc()\n");
        const v = mp.globals.get("_mpvm_heap");
        mp.runPython("del _mpvm_heap\n");
        flushPrinted(); send("O", Buffer.from(String(v), "latin1"));
        break;
      }
      case "B":
        mp.runPython(STEP_SRC(payload.toString("utf8")));
        stepFn = mp.globals.get("_mpvm_step");
        flushPrinted(); send("O");
        break;
      case "S": {
        if (!stepFn) throw new Error("step before bind");
        const n = payload.readUInt32LE(0);
        const feedHex = payload.length > 4 ? payload.subarray(4).toString("hex") : "";
        const r = stepFn(n, feedHex);
        const colon = r.indexOf(":");
        const st = parseInt(r.slice(0, colon), 10);
        const out = Buffer.from(r.slice(colon + 1), "hex");
        flushPrinted();
        send("O", Buffer.concat([Buffer.from([st & 0xff]), out]));
        break;
      }
      case "I":
        mp.replInit();
        send("O", Buffer.concat([Buffer.from([0]), Buffer.from(Uint8Array.from(printed))]));
        printed = [];
        break;
      case "C":
        send("O", replChars(payload));
        break;
      case "Z": {
        const files = snapshotFS(mp.FS);
        printed = [];
        await freshVM();
        restoreFS(mp.FS, files);
        printed = [];
        send("O");
        break;
      }
      case "Q":
        flushPrinted(); send("O");
        process.exit(0);
        break;
      default:
        throw new Error(`unknown op ${JSON.stringify(op)}`);
    }
  } catch (err) {
    sendError(err);
  }
}

// ---------------------------------------------------------------- input loop
let inbuf = Buffer.alloc(0);
let busy = false;

async function pump() {
  if (busy) return;
  busy = true;
  try {
    while (inbuf.length >= 5) {
      const len = inbuf.readUInt32LE(1);
      if (inbuf.length < 5 + len) break;
      const op = String.fromCharCode(inbuf[0]);
      const payload = inbuf.subarray(5, 5 + len);
      inbuf = inbuf.subarray(5 + len);
      await handle(op, payload);
    }
  } finally {
    busy = false;
  }
}

process.stdin.on("data", (chunk) => {
  inbuf = inbuf.length ? Buffer.concat([inbuf, chunk]) : chunk;
  pump();
});
process.stdin.on("end", () => process.exit(0));
