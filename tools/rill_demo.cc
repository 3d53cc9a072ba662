// rill-demo: runs a small pipeline on every available device, verifies it
// and prints what ran where and how long it took; `rill-demo train` trains
// the Fashion-MNIST convnet (tools/demo_train.cc; --help lists its flags).
//
//   rill-demo [--quiet] [--n=<floats>] [--trace=<engine trace .json>]
//   rill-demo train [--device=host:0] [--epochs=N] ...

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/flags/flag.h"
#include "rill/base/env_settings.h"
#include "rill/rill.h"
#include "rill/stream/trace_recorder.h"
#include "tools/demo_dnn.h"
#include "tools/demo_engine.h"
#include "tools/demo_pipeline.h"
#include "tools/tool_flags.h"
#ifdef RILL_DEMO_TRAIN
#include "tools/demo_train.h"
#endif

ABSL_FLAG(bool, quiet, false, "print only the tables");
ABSL_FLAG(int64_t, n, 1 << 20, "floats per device in the pipeline (1 to 134217728)");
ABSL_FLAG(
    std::string, trace, "",
    "write one Chrome/Perfetto trace (.json) of everything the demo runs: every stream operation "
    "with its "
    "device time, the engine's functions with their dependency arrows (as RILL_TRACE=<file> does)");

namespace {

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

}  // namespace

// The most floats --n may ask for: each device gets three buffers of n
// floats and the host three more (512 MiB each at the bound).
constexpr int64_t kMaxFloats = int64_t{1} << 27;

int main(int argc, char** argv) {
  rill::tools::CheckEnvironmentOrExit(
      argc > 1 && std::strcmp(argv[1], "train") == 0 ? "rill-demo train" : "rill-demo");
  if (argc > 1 && std::strcmp(argv[1], "train") == 0) {
#ifdef RILL_DEMO_TRAIN
    return rill::demo::RunTrain(argc - 1, argv + 1);
#else
    std::fprintf(
        stderr,
        "rill-demo train: not built (train/ needs libonnx-dev, zlib1g-dev and libcairo2-dev)\n");
    return 2;
#endif
  }
  rill::tools::ParseToolFlags(
      argc, argv,
      {.name = "rill-demo",
       .usage = "rill-demo: runs copy -> saxpy -> event -> square -> copy on every available "
                "device, checks it\n"
                "and prints what ran where and how long it took; then a DNN forward pass and the "
                "engine demo.\n"
                "Usage: rill-demo [--quiet] [--n=<floats>] [--trace=<file.json>]\n"
                "       rill-demo train --help   (the main job: Fashion-MNIST training)",
       .flag_files = {"tools/rill_demo.cc"},
       .other_modes_hint = " (it is a flag of `rill-demo train`: see rill-demo train --help)",
       .allow_positional = false});
  const bool quiet = absl::GetFlag(FLAGS_quiet);
  const int64_t n = absl::GetFlag(FLAGS_n);
  const std::string trace_path = absl::GetFlag(FLAGS_trace);
  if (absl::Status range =
          rill::tools::CheckFlagRange("n", n, 1, kMaxFloats, "floats per device in the pipeline");
      !range.ok()) {
    std::fprintf(stderr, "rill-demo: %s\n", std::string(range.message()).c_str());
    return 2;
  }

  if (!trace_path.empty()) {
    // Checked now, not when the trace is written after the whole run.
    absl::Status started = rill::CheckWritablePath("cannot write", trace_path);
    if (started.ok()) started = rill::StartTracing(trace_path);
    if (!started.ok()) {
      std::fprintf(stderr, "ERROR: --trace=%s: %s\n", trace_path.c_str(),
                   started.ToString().c_str());
      return 2;
    }
  }
  rill::PlatformManager& manager = rill::PlatformManager::Default();
  if (!quiet) {
    std::printf(
        "rill-demo: copy -> saxpy -> event -> square -> copy over %lld floats on every device\n",
        static_cast<long long>(n));
    for (rill::Platform* p : manager.AllPlatforms()) {
      absl::Status available = p->Availability();
      if (!available.ok())
        std::printf("  skipping %s: %s\n", p->Name().c_str(),
                    std::string(available.message()).c_str());
    }
  }
  std::printf("\n%-10s %-3s %-24s %-24s %12s\n", "platform", "dev", "step", "where", "device ms");
  int failures = 0, devices = 0;
  for (rill::Platform* platform : manager.AvailablePlatforms()) {
    for (int ordinal = 0; ordinal < platform->VisibleDeviceCount(); ++ordinal) {
      ++devices;
      absl::StatusOr<rill::StreamExecutor*> executor = platform->ExecutorForDevice(ordinal);
      absl::StatusOr<rill::demo::PipelineResult> result =
          executor.ok() ? rill::demo::RunCopyKernelPipeline(*executor, n) : executor.status();
      if (absl::IsUnimplemented(result.status())) {
        // A backend still being written (a copy of platform/skeleton).
        std::printf("%-10s %-3d skipped: %s\n", platform->Name().c_str(), ordinal,
                    result.status().ToString().c_str());
        continue;
      }
      if (!result.ok()) {
        ++failures;
        std::printf("%-10s %-3d FAILED: %s\n", platform->Name().c_str(), ordinal,
                    result.status().ToString().c_str());
        continue;
      }
      for (const rill::demo::Step& step : result->steps) {
        std::printf("%-10s %-3d %-24s %-24s %12.3f\n", platform->Name().c_str(), ordinal,
                    step.name.c_str(), step.where.c_str(), Ms(step.device_time));
      }
      std::printf("%-10s %-3d %-24s %-24s %12.3f  verified (max error %.1e)\n",
                  platform->Name().c_str(), ordinal, "total (wall)", "host", Ms(result->wall_time),
                  result->max_abs_error);
    }
  }
  if (devices == 0) {
    std::printf("no available device\n");
    return 1;
  }
  std::printf("\n%d device(s), %d failed\n", devices, failures);

  // A DNN forward pass (conv -> bias -> relu -> pool -> softmax) on every
  // device whose platform has a DNN plugin.
  std::printf("\n%-10s %-3s %-8s %12s\n", "platform", "dev", "dnn", "device ms");
  for (rill::Platform* platform : manager.AvailablePlatforms()) {
    for (int ordinal = 0; ordinal < platform->VisibleDeviceCount(); ++ordinal) {
      absl::StatusOr<rill::StreamExecutor*> executor = platform->ExecutorForDevice(ordinal);
      absl::StatusOr<rill::demo::DnnDemoResult> dnn =
          executor.ok() ? rill::demo::RunDnnForward(*executor) : executor.status();
      if (dnn.ok()) {
        std::printf(
            "%-10s %-3d %-8s %12.3f  conv3x3 -> bias -> relu -> maxpool -> softmax (%s) verified "
            "(max error %.1e)%s\n",
            platform->Name().c_str(), ordinal, dnn->plugin.c_str(), Ms(dnn->device_time),
            dnn->layout.c_str(), dnn->max_abs_error,
            dnn->fallbacks.empty() ? "" : ("; handed on: " + dnn->fallbacks).c_str());
      } else if (absl::IsUnimplemented(dnn.status())) {
        std::printf("%-10s %-3d %-8s %12s  %s\n", platform->Name().c_str(), ordinal, "none", "-",
                    std::string(dnn.status().message()).c_str());
      } else {
        ++failures;
        std::printf("%-10s %-3d dnn FAILED: %s\n", platform->Name().c_str(), ordinal,
                    dnn.status().ToString().c_str());
      }
    }
  }

  // The dependency engine: a training-like loop across two host devices.
  constexpr int kIterations = 8;
  absl::StatusOr<rill::demo::EngineDemoResult> engine =
      rill::demo::RunEngineDemo(kIterations, std::min<int64_t>(n, 1 << 18), /*trace_path=*/"");
  if (!engine.ok()) {
    std::printf("\nengine: FAILED: %s\n", engine.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "\nengine: %d functions over %d iterations on %s (copies, kernels, w += g after the reads of "
      "w): "
      "%.3f ms wall, verified (max error %.1e)%s%s\n",
      engine->functions, kIterations, engine->devices.c_str(), Ms(engine->wall_time),
      engine->max_abs_error, "", "");
  if (!trace_path.empty()) {
    const size_t spans = rill::GlobalTrace() != nullptr ? rill::GlobalTrace()->span_count() : 0;
    if (absl::Status written = rill::StopTracing(); !written.ok()) {
      std::printf("trace: FAILED: %s\n", written.ToString().c_str());
      return 1;
    }
    std::printf("trace: %zu spans written to %s (open it in https://ui.perfetto.dev)\n", spans,
                trace_path.c_str());
  }
  return failures == 0 ? 0 : 1;
}
