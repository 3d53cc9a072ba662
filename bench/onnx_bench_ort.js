// The ONNX Runtime side of bench/onnx_bench.sh: loads a model with
// onnxruntime-node (CPU execution provider, every graph optimization, one
// inter-op thread, sequential execution), feeds random floats in [-1, 1) of
// the inputs' static shapes, runs `warmup` untimed passes and `runs` timed
// ones, and prints one line:
//   ORT median_ms=12.345 min_ms=12.0 runs=20 warmup=3 threads=2 ort=1.30.0
//
//   NODE_PATH=DIR/node_modules node bench/onnx_bench_ort.js model.onnx \
//       [--threads=2] [--runs=20] [--warmup=3]
//
// The model must have static float inputs (bench/onnx_bench_torch.py
// exports them so); a symbolic dimension or another type is an error.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const opts = { model: '', threads: 2, runs: 20, warmup: 3 };
  for (const arg of argv) {
    const m = /^--(threads|runs|warmup)=(\d+)$/.exec(arg);
    if (m) {
      opts[m[1]] = Number(m[2]);
    } else if (!arg.startsWith('-') && !opts.model) {
      opts.model = arg;
    } else {
      throw new Error(`unknown argument ${arg} (model.onnx --threads= --runs= --warmup=)`);
    }
  }
  if (!opts.model) throw new Error('no model given');
  if (opts.threads < 1 || opts.runs < 1) throw new Error('--threads and --runs must be positive');
  return opts;
}

// The installed package's version, read from its package.json (its
// "exports" map hides the file from require).
function ortVersion() {
  for (const dir of (process.env.NODE_PATH || '').split(path.delimiter)) {
    try {
      const file = path.join(dir, 'onnxruntime-node', 'package.json');
      return JSON.parse(fs.readFileSync(file, 'utf8')).version;
    } catch (e) {
      // Try the next directory.
    }
  }
  return 'unknown';
}

function randomFeeds(session) {
  const feeds = {};
  for (const meta of session.inputMetadata) {
    const shape = meta.shape || [];
    if (!meta.isTensor || meta.type !== 'float32' || shape.some((d) => typeof d !== 'number')) {
      throw new Error(`input ${meta.name}: need a static float32 tensor, got ` +
                      `${meta.type} [${shape.join(', ')}]`);
    }
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; ++i) data[i] = Math.random() * 2 - 1;
    feeds[meta.name] = new ort.Tensor('float32', data, shape);
  }
  return feeds;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(opts.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: opts.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const feeds = randomFeeds(session);
  for (let i = 0; i < opts.warmup; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < opts.runs; ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  console.log(`ORT median_ms=${median.toFixed(3)} min_ms=${times[0].toFixed(3)} ` +
              `runs=${opts.runs} warmup=${opts.warmup} threads=${opts.threads} ` +
              `ort=${ortVersion()}`);
  await session.release();
}

main().catch((e) => {
  console.error(`onnx_bench_ort.js: ${e.message}`);
  process.exit(1);
});
