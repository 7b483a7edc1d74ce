// tint_check.mjs — compile shader modules and create compute pipelines with Dawn (Chrome's WebGPU, whose
// WGSL compiler is Tint) through npm's `webgpu` package; run by checks/wgsl_check.py, which writes the job.
//
//   node checks/tint_check.mjs <folder holding node_modules/webgpu> <job.json> <result.json>
//
// job.json: {"modules": {file: wgsl}, "pipelines": [{"file", "entry", "constants"}], "features": [...]}
// result.json: {"adapter": {...}, "modules": {file: [{type, message, line, col}]},
//               "pipelines": [{"file", "entry", "constants", "error"}]}
// The device is requested with WebGPU's default limits (Dawn's default), so a pipeline over them fails
// here as it would in a browser. Every message of getCompilationInfo counts: errors, warnings (the
// uniformity analysis reports through them) and infos.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, jobPath, resultPath] = process.argv.slice(2);
const { create, globals } = await import(pathToFileURL(join(dir, 'node_modules', 'webgpu', 'index.js')).href);
Object.assign(globalThis, globals);
const job = JSON.parse(readFileSync(jobPath, 'utf8'));

const gpu = create([]);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.error('Dawn found no adapter (it needs a Vulkan driver it accepts: SwiftShader, or a GPU)');
  process.exit(2);
}
const missing = job.features.filter(f => !adapter.features.has(f));
if (missing.length) {
  console.error(`Dawn's adapter lacks the features ${missing.join(', ')}`);
  process.exit(2);
}
const device = await adapter.requestDevice({ requiredFeatures: job.features });
const uncaptured = [];
device.addEventListener('uncapturederror', e => uncaptured.push(e.error.message));

const result = { adapter: { vendor: adapter.info.vendor, architecture: adapter.info.architecture,
                            device: adapter.info.device, description: adapter.info.description },
                 modules: {}, pipelines: [], uncaptured };
const modules = {};
for (const [file, code] of Object.entries(job.modules)) {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code, label: file });
  const info = await module.getCompilationInfo();
  const err = await device.popErrorScope();
  const messages = info.messages.map(m => ({ type: m.type, message: m.message, line: m.lineNum, col: m.linePos }));
  if (err && !messages.some(m => m.type === 'error')) messages.push({ type: 'error', message: err.message });
  result.modules[file] = messages;
  modules[file] = module;
}
for (const p of job.pipelines) {
  let error = null;
  try {
    await device.createComputePipelineAsync({
      layout: 'auto', label: `${p.file}:${p.entry}`,
      compute: { module: modules[p.file], entryPoint: p.entry, constants: p.constants },
    });
  } catch (e) {
    error = String(e.message || e);
  }
  result.pipelines.push({ ...p, error });
}
writeFileSync(resultPath, JSON.stringify(result, null, 1));
device.destroy();
process.exit(0);
