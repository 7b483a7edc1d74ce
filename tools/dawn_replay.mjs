// dawn_replay.mjs — replay plan recordings (trainer/gpu/record.py) on Dawn, Chrome's WebGPU, through npm's
// `webgpu` package, with WebGPU's default limits, and compare every read back with the recording.
//
//   node tools/dawn_replay.mjs <folder holding node_modules/webgpu> <recording.plan>... [--json result.json]
//
// Every buffer, shader module, pipeline (explicit layouts), bind group, write, clear and submission of
// the recording is issued again in order. Validation errors are counted wherever Dawn reports them: a
// module, a pipeline, a plan's bind groups, a submission (then each dispatch of it is encoded alone to
// count the dispatches Dawn rejects and name them). A read is compared with the recorded bytes:
// floats as golden/check.py measures errors, max|got − want| / max(max|want|, 1e-30), against the read's
// tolerance ("tol", a row of the tolerance table the recording's header carries; tools/plan_export.py
// sets them), and where the read has "change_tol", the change since its "prev" event (a write or read
// of the same range) as well, or only that; "exact" reads, integer reads and reads with no tolerance
// must match bit for bit; "skip" reads are not compared. NaN and ±Inf must sit where the recording has
// the same value. Prints a summary per recording; exit 0 when there is no validation error and every
// read is within tolerance, 1 otherwise, 2 when Dawn could not run.
import { closeSync, createReadStream, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { inflateSync } from 'node:zlib';

const args = process.argv.slice(2);
const jsonAt = args.indexOf('--json');
const jsonPath = jsonAt >= 0 ? args.splice(jsonAt, 2)[1] : null;
const [dawnDir, ...recordings] = args;
if (!dawnDir || !recordings.length) {
  console.error('usage: node tools/dawn_replay.mjs <dawn folder> <recording.plan>... [--json result.json]');
  process.exit(2);
}
const { create, globals } = await import(pathToFileURL(join(dawnDir, 'node_modules', 'webgpu', 'index.js')).href);
Object.assign(globalThis, globals);

const gpu = create([]);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.error('Dawn found no adapter (it needs a Vulkan driver it accepts: SwiftShader, or a GPU)');
  process.exit(2);
}
const USAGE = { storage: GPUBufferUsage.STORAGE, uniform: GPUBufferUsage.UNIFORM, copy_src: GPUBufferUsage.COPY_SRC,
                copy_dst: GPUBufferUsage.COPY_DST };
const BINDING = { read: 'read-only-storage', read_write: 'storage', uniform: 'uniform' };
const MAX_MESSAGES = 20;

function blob(fd, [at, n, stored]) {
  const buf = Buffer.alloc(stored);
  readSync(fd, buf, 0, stored, at);
  return stored < n ? inflateSync(buf) : buf;
}

function typed(bytes, dtype) {
  const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  return dtype === 'float32' ? new Float32Array(ab) : dtype === 'int32' ? new Int32Array(ab) : new Uint32Array(ab);
}

// golden/check.py's rel_error, with non-finite values required to match the recording's
function relError(got, want) {
  let scale = 0, diff = 0, at = -1;
  for (let i = 0; i < want.length; i++) {
    const w = want[i], g = got[i];
    if (Number.isFinite(w)) scale = Math.max(scale, Math.abs(w));
    if (!Number.isFinite(w) || !Number.isFinite(g)) {
      if (!(Object.is(w, g) || (Number.isNaN(w) && Number.isNaN(g)))) return { err: Infinity, at: i };
      continue;
    }
    const d = Math.abs(g - w);
    if (d > diff) { diff = d; at = i; }
  }
  return { err: diff / Math.max(scale, 1e-30), at };
}

function exact(got, want) {
  const a = new Uint8Array(got.buffer, got.byteOffset, got.byteLength);
  const b = new Uint8Array(want.buffer, want.byteOffset, want.byteLength);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return { err: Infinity, at: i >> 2 };
  return { err: 0, at: -1 };
}

// one device for every recording: Dawn reuses a pipeline it has built (SwiftShader spends seconds on the largest)
const device = await adapter.requestDevice({ requiredFeatures: adapter.features.has('subgroups') ? ['subgroups'] : [] });
let uncaptured = [];
device.addEventListener('uncapturederror', e => uncaptured.push(e.error.message));

async function replay(path) {
  uncaptured = [];
  const fd = openSync(join(path, 'data.bin'), 'r');
  const lines = createInterface({ input: createReadStream(join(path, 'events.jsonl'), { encoding: 'utf8' }), crlfDelay: Infinity });
  const r = { recording: path, adapter: adapter.info.description || adapter.info.device || adapter.info.vendor,
              events: 0, buffers: 0, kernels: 0, plans: 0, submits: 0, dispatches: 0, reads: 0, errors: 0,
              rejected_dispatches: 0, messages: [], failed_reads: 0, skipped_reads: 0, failures: [], worst: {} };
  let header = null, tolerances = {}, staging = null, mark = path.replace(/\/+$/, '').split('/').pop();
  const buffers = new Map(), modules = new Map(), kernels = new Map(), plans = new Map(), kept = new Map();
  const note = (what, msg) => { r.errors++; if (r.messages.length < MAX_MESSAGES) r.messages.push(`${what}: ${msg}`); };
  const scoped = async (what, fn) => {
    device.pushErrorScope('validation');
    const out = fn();
    const err = await device.popErrorScope();
    if (err) note(what, err.message);
    return [out, err];
  };
  const compare = (rd, index, got, want) => {
    // the value against "tol", or bit for bit ("exact", an integer read, or a read with no tolerance at all);
    // the change since event "prev" against "change_tol"
    const checks = rd.tol || rd.exact || !rd.change_tol ? [[rd.exact ? null : rd.tol, got, want, 'value']] : [];
    if (rd.change_tol) {
      const base = kept.get(rd.prev);
      if (!base) throw new Error(`read at event ${index} compares its change since event ${rd.prev}, which was not kept`);
      const g = Float64Array.from(got, (v, i) => v - base.got[i]);
      const w = Float64Array.from(want, (v, i) => v - base.want[i]);
      checks.push([rd.change_tol, g, w, 'change']);
    }
    r.reads++;
    let ok = true;
    for (const [key, g, w, what] of checks) {
      const res = rd.dtype !== 'float32' || !key ? exact(g, w) : relError(g, w);
      const tol = !key || rd.dtype !== 'float32' ? 0 : tolerances[key][0];
      const name = key || 'exact';
      const worst = r.worst[name] ??= { tol, err: 0, reads: 0, where: '' };
      worst.reads++;
      if (res.err > worst.err) Object.assign(worst, { err: res.err, where: `${mark} ${rd.label} (${what})` });
      if (res.err > tol) {
        ok = false;
        if (r.failures.length < MAX_MESSAGES) {
          r.failures.push(`${mark}: read of ${rd.label} (${what}, event ${index}): max relative error ` +
                          `${res.err.toExponential(3)} > ${tol} (${name}) at index ${res.at}: got ${g[res.at]}, want ${w[res.at]}`);
        }
      }
    }
    if (!ok) r.failed_reads++;
  };

  let index = -1;
  for await (const line of lines) {
    if (!line) continue;
    const ev = JSON.parse(line);
    if (header === null) {
      header = ev;
      if (ev.format !== 'puffgpu-plan' || ev.version !== 1) throw new Error(`${path}: not a puffgpu-plan recording, version 1`);
      tolerances = ev.tolerances || {};
      continue;
    }
    index++;
    r.events++;
    switch (ev.e) {
      case 'buffer': {
        const usage = ev.usage.reduce((u, n) => u | USAGE[n], 0);
        const [buf] = await scoped(`buffer ${ev.label}`, () => device.createBuffer({ size: ev.size, usage, label: ev.label }));
        buffers.set(ev.id, buf);
        r.buffers++;
        break;
      }
      case 'free':
        buffers.get(ev.buffer)?.destroy();
        buffers.delete(ev.buffer);
        break;
      case 'module': {
        const module = device.createShaderModule({ code: ev.code, label: ev.file });
        const info = await module.getCompilationInfo();
        for (const m of info.messages) note(`module ${ev.file}:${m.lineNum}:${m.linePos} (${m.type})`, m.message);
        modules.set(ev.file, module);
        break;
      }
      case 'kernel': {
        const [k] = await scoped(`pipeline ${ev.label}`, () => {
          const layout = device.createBindGroupLayout({ label: ev.label, entries: ev.bindings.map(([b, kind]) => (
            { binding: b, visibility: GPUShaderStage.COMPUTE, buffer: { type: BINDING[kind] } })) });
          const pipeline = device.createComputePipeline({
            label: ev.label, layout: device.createPipelineLayout({ bindGroupLayouts: [layout], label: ev.label }),
            compute: { module: modules.get(ev.file), entryPoint: ev.entry, constants: ev.constants } });
          return { layout, pipeline, label: ev.label };
        });
        kernels.set(ev.id, k);
        r.kernels++;
        break;
      }
      case 'write': {
        const data = blob(fd, ev.data);
        device.queue.writeBuffer(buffers.get(ev.buffer), ev.offset, data);
        if (ev.keep) kept.set(index, { got: typed(data, 'float32'), want: typed(data, 'float32') });
        break;
      }
      case 'clear': {
        const enc = device.createCommandEncoder();
        enc.clearBuffer(buffers.get(ev.buffer), ev.offset, ev.size);
        device.queue.submit([enc.finish()]);
        break;
      }
      case 'plan': {
        const [dispatches] = await scoped(`bind groups of plan ${ev.label}`, () => ev.dispatches.map((d, i) => {
          const k = kernels.get(d.kernel);
          const bindGroup = device.createBindGroup({ layout: k.layout, label: `${ev.label}/${i}:${k.label}`,
            entries: d.bind.map(([b, buf, offset, size]) => ({ binding: b, resource: { buffer: buffers.get(buf), offset, size } })) });
          return { kernel: k, bindGroup, grid: d.grid, label: `${ev.label}/${i}:${k.label}` };
        }));
        plans.set(ev.id, dispatches);
        r.plans++;
        break;
      }
      case 'mark':
        mark = ev.name;
        break;
      case 'submit': {
        const list = ev.plans.flatMap(id => plans.get(id));
        const rd = ev.read;
        if (rd && (!staging || staging.size < rd.size)) {
          staging?.destroy();
          staging = device.createBuffer({ size: Math.max(rd.size, 1 << 16), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
        }
        const [, err] = await scoped(`submission ${r.submits} (${mark})`, () => {
          const enc = device.createCommandEncoder();
          if (list.length) {
            const pass = enc.beginComputePass();
            let last = null;
            for (const d of list) {
              if (d.kernel.pipeline !== last) pass.setPipeline(last = d.kernel.pipeline);
              pass.setBindGroup(0, d.bindGroup);
              pass.dispatchWorkgroups(...d.grid);
            }
            pass.end();
          }
          if (rd) enc.copyBufferToBuffer(buffers.get(rd.buffer), rd.offset, staging, 0, rd.size);
          device.queue.submit([enc.finish()]);
        });
        if (err) {  // which dispatches Dawn rejects: each alone
          for (const d of list) {
            device.pushErrorScope('validation');
            const enc = device.createCommandEncoder();
            const pass = enc.beginComputePass();
            pass.setPipeline(d.kernel.pipeline);
            pass.setBindGroup(0, d.bindGroup);
            pass.dispatchWorkgroups(...d.grid);
            pass.end();
            enc.finish();
            const e = await device.popErrorScope();
            if (e) {
              r.rejected_dispatches++;
              if (r.messages.length < MAX_MESSAGES) r.messages.push(`dispatch ${d.label}: ${e.message}`);
            }
          }
        }
        r.submits++;
        r.dispatches += list.length;
        if (rd) {
          await staging.mapAsync(GPUMapMode.READ, 0, rd.size);
          const got = typed(Buffer.from(staging.getMappedRange(0, rd.size).slice(0)), rd.dtype);
          staging.unmap();
          const want = typed(blob(fd, rd.data), rd.dtype);
          if (rd.skip) r.skipped_reads++;  // e.g. the device's subgroup size: not a result
          else compare(rd, index, got, want);
          if (rd.keep) kept.set(index, { got, want });
        }
        break;
      }
      default:
        throw new Error(`${path}: event ${index}: unknown kind ${JSON.stringify(ev.e)}`);
    }
  }
  closeSync(fd);
  await device.queue.onSubmittedWorkDone();
  for (const m of uncaptured) note('uncaptured', m);
  for (const buf of buffers.values()) buf.destroy();
  staging?.destroy();
  return r;
}

const results = [];
let bad = false;
for (const path of recordings) {
  const t0 = performance.now();
  const r = await replay(path);
  r.seconds = (performance.now() - t0) / 1000;
  results.push(r);
  bad ||= r.errors > 0 || r.failed_reads > 0;
  console.log(`${path}: Dawn on ${r.adapter}: ${r.dispatches} dispatches in ${r.submits} submissions, ` +
              `${r.reads} reads compared (${r.skipped_reads} skipped), ${r.errors} validation errors (${r.rejected_dispatches} dispatches rejected), ` +
              `${r.failed_reads} reads out of tolerance, ${r.seconds.toFixed(1)} s`);
  for (const [key, w] of Object.entries(r.worst)) {
    console.log(`   ${key.padEnd(14)} ${String(w.reads).padStart(6)} reads, max error ${w.err.toExponential(2)} ` +
                `(tolerance ${w.tol})${w.err > 0 ? ` at ${w.where}` : ''}`);
  }
  for (const m of r.messages) console.log(`   error: ${m}`);
  for (const f of r.failures) console.log(`   FAIL ${f}`);
}
if (jsonPath) writeFileSync(jsonPath, JSON.stringify(results, null, 1));
device.destroy();
process.exit(bad ? 1 : 0);
