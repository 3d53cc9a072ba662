// rill-demo train: the main job. Loads Fashion-MNIST, trains the dataset's
// benchmark convnet on the chosen device(s), evaluates on the test set each
// epoch, and writes the table, train_curve.csv, train_curve.png and an ONNX
// checkpoint, which it loads back and evaluates.

#include "tools/demo_train.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rill/base/status_macros.h"
#include "rill/platform/platform_manager.h"
#include "rill/train/checkpoint.h"
#include "rill/train/progress.h"
#include "rill/train/report.h"
#include "rill/train/trainer.h"
#include "tools/tool_flags.h"

ABSL_FLAG(std::string, device, "",
          "one device: host:0, opencl:0, cuda:0 (default: the best available)");
ABSL_FLAG(std::string, devices, "",
          "data-parallel over several devices, e.g. host:0,host:1 (the batch is split)");
ABSL_FLAG(std::string, reduce_device, "",
          "where the KVStore sums gradients (default: the first device)");
ABSL_FLAG(int32_t, epochs, 1, "training epochs");
ABSL_FLAG(int64_t, batch, 64, "batch size (over all devices)");
ABSL_FLAG(double, lr, 1e-3, "Adam learning rate");
ABSL_FLAG(uint64_t, seed, 42, "seed of the parameters, the shuffling and dropout");
ABSL_FLAG(int64_t, train_limit, 0, "train on the first N training images (0: all 60000)");
ABSL_FLAG(int64_t, test_limit, 0, "evaluate on the first N test images (0: all 10000)");
ABSL_FLAG(std::string, data_dir, "/usr/share/datasets/fashion-mnist",
          "the IDX files (Debian's dataset-fashion-mnist)");
ABSL_FLAG(std::string, out_dir, ".",
          "where train_curve.png, train_curve.csv and fashion_mnist_convnet.onnx go");
ABSL_FLAG(int32_t, prefetch, 2, "batches loaded ahead");

namespace rill::demo {

namespace {

std::atomic<bool> g_stop{false};

void OnSigint(int) {
  if (g_stop.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

// The best device here and why: a CUDA GPU, else the host CPU (OpenCL on
// PoCL runs on the same CPU, slower than the host's oneDNN/OpenBLAS).
absl::StatusOr<std::pair<engine::Context, std::string>> BestDevice() {
  PlatformManager& m = PlatformManager::Default();
  std::string why_not_cuda = "no CUDA platform in this build";
  if (absl::StatusOr<Platform*> cuda = m.PlatformWithName("cuda"); cuda.ok()) {
    absl::Status a = (*cuda)->Availability();
    if (a.ok() && (*cuda)->VisibleDeviceCount() > 0) {
      RILL_ASSIGN_OR_RETURN(engine::Context c, engine::Context::Device("cuda", 0));
      return std::make_pair(c, std::string("a CUDA GPU is present"));
    }
    why_not_cuda = a.ok() ? "no CUDA device" : std::string(a.message());
  }
  RILL_ASSIGN_OR_RETURN(engine::Context c, engine::Context::Device("host", 0));
  return std::make_pair(
      c, absl::StrCat("no GPU (", why_not_cuda,
                      "); the host runs oneDNN and OpenBLAS, OpenCL here is PoCL on the same CPU"));
}

absl::Status Run() {
  train::TrainOptions o;
  o.batch_size = absl::GetFlag(FLAGS_batch);
  o.lr = absl::GetFlag(FLAGS_lr);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.prefetch = absl::GetFlag(FLAGS_prefetch);
  const int epochs = absl::GetFlag(FLAGS_epochs);
  if (epochs <= 0)
    return absl::InvalidArgumentError(absl::StrCat("--epochs=", epochs, " is not positive"));
  const std::string device = absl::GetFlag(FLAGS_device), devices = absl::GetFlag(FLAGS_devices);
  if (!device.empty() && !devices.empty()) {
    return absl::InvalidArgumentError("--device and --devices are exclusive");
  }
  std::string reason;
  if (!devices.empty()) {
    o.devices.clear();
    for (const std::string& d :
         std::vector<std::string>(absl::StrSplit(devices, ',', absl::SkipEmpty()))) {
      RILL_ASSIGN_OR_RETURN(engine::Context c, engine::Context::Parse(d));
      o.devices.push_back(c);
    }
    reason = "chosen with --devices";
  } else if (!device.empty()) {
    RILL_ASSIGN_OR_RETURN(engine::Context c, engine::Context::Parse(device));
    o.devices = {c};
    reason = "chosen with --device";
  } else {
    RILL_ASSIGN_OR_RETURN(auto best, BestDevice());
    o.devices = {best.first};
    reason = best.second;
  }
  if (const std::string r = absl::GetFlag(FLAGS_reduce_device); !r.empty()) {
    RILL_ASSIGN_OR_RETURN(o.reduce_context, engine::Context::Parse(r));
  }
  std::string names;
  for (const engine::Context& c : o.devices)
    absl::StrAppend(&names, names.empty() ? "" : ",", c.ToString());
  std::printf("device: %s (%s)\n", names.c_str(), reason.c_str());
  std::printf("model: %s\n", o.model.ToString().c_str());
  std::printf("training: %d epoch(s), %s; hardware threads %u\n", epochs, o.ToString().c_str(),
              std::thread::hardware_concurrency());

  // The output folder is made and checked before training, not after.
  const std::string out = absl::GetFlag(FLAGS_out_dir);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec || access(out.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "--out_dir=", out, " cannot be created or written", ec ? ": " + ec.message() : ""));
  }
  const std::string dir = absl::GetFlag(FLAGS_data_dir);
  RILL_ASSIGN_OR_RETURN(io::Dataset train,
                        io::LoadFashionMnist(dir, "train", absl::GetFlag(FLAGS_train_limit)));
  RILL_ASSIGN_OR_RETURN(io::Dataset test,
                        io::LoadFashionMnist(dir, "test", absl::GetFlag(FLAGS_test_limit)));
  std::printf("data: %lld training and %lld test images of %lldx%lld from %s\n",
              static_cast<long long>(train.size), static_cast<long long>(test.size),
              static_cast<long long>(train.rows), static_cast<long long>(train.cols), dir.c_str());
  std::fflush(stdout);

  RILL_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer, train::Trainer::Create(o));
  std::signal(SIGINT, OnSigint);
  train::ProgressLine line(stdout, epochs);
  std::vector<train::EpochRecord> records;
  double inference_rate = 0;  // test-set images/s of the last evaluation
  for (int e = 0; e < epochs && !g_stop.load(); ++e) {
    RILL_ASSIGN_OR_RETURN(
        train::EpochResult r,
        trainer->TrainEpoch(
            train, e, [&](const train::Progress& p) { line.Update(p); }, &g_stop));
    if (r.batches == 0) break;
    const absl::Time eval_start = absl::Now();
    RILL_ASSIGN_OR_RETURN(train::Metrics m, trainer->Evaluate(test));
    inference_rate =
        static_cast<double>(m.examples) / absl::ToDoubleSeconds(absl::Now() - eval_start);
    records.push_back({e + 1, r.train.loss, r.train.accuracy, m.loss, m.accuracy, r.seconds,
                       r.images_per_second, r.stopped});
    std::printf("epoch %d: test loss %.4f, test accuracy %.4f\n", e + 1, m.loss, m.accuracy);
    std::fflush(stdout);
  }
  std::signal(SIGINT, SIG_DFL);
  if (g_stop.load())
    std::printf("interrupted: stopped after the current batch; writing what was trained\n");
  if (records.empty())
    return absl::CancelledError("stopped before the first batch: nothing to report");

  std::printf("\n");
  train::PrintTable(stdout, records);
  const std::string png = out + "/train_curve.png", csv = out + "/train_curve.csv",
                    model = out + "/fashion_mnist_convnet.onnx";
  RILL_RETURN_IF_ERROR(train::WriteCsv(csv, records));
  RILL_RETURN_IF_ERROR(
      train::WriteCurvePng(png, records,
                           absl::StrCat("Fashion-MNIST convnet on ", names, ", batch ",
                                        o.batch_size, ", Adam lr ", o.lr)));
  RILL_RETURN_IF_ERROR(trainer->SaveCheckpoint(model));
  std::printf("\nwrote %s, %s and %s\n", png.c_str(), csv.c_str(), model.c_str());
  RILL_ASSIGN_OR_RETURN(train::Metrics reloaded,
                        train::EvaluateCheckpoint(model, o.model, test, o.devices[0], o.engine));
  std::printf(
      "checkpoint reloaded through the ONNX importer: test accuracy %.4f (trained model %.4f)\n",
      reloaded.accuracy, records.back().test_accuracy);
  if (o.devices.size() > 1) {
    const kvstore::KVStoreStats s = trainer->kvstore_stats();
    std::printf(
        "kvstore: %lld pushes, %lld pulls, %.1f MiB pushed; host time in push %.3f s, pull %.3f "
        "s\n",
        static_cast<long long>(s.pushes), static_cast<long long>(s.pulls),
        s.bytes_pushed / 1048576.0, s.push_seconds, s.pull_seconds);
  }
  const train::EpochRecord& last = records.back();
  std::printf(
      "RESULT epochs=%zu test_accuracy=%.4f train_loss=%.4f images_per_second=%.1f "
      "inference_images_per_second=%.1f checkpoint_accuracy=%.4f\n",
      records.size(), last.test_accuracy, last.train_loss, last.images_per_second, inference_rate,
      reloaded.accuracy);
  return absl::OkStatus();
}

}  // namespace

int RunTrain(int argc, char** argv) {
  tools::ParseToolFlags(
      argc, argv,
      {.name = "rill-demo train",
       .usage =
           "rill-demo train: trains the Fashion-MNIST convnet (the dataset's benchmark "
           "architecture) on a\n"
           "Rill device, prints a table per epoch and writes the curve and an ONNX checkpoint.\n"
           "Usage: rill-demo train [--device=host:0|opencl:0|cuda:0 | --devices=a,b] [--epochs=N] "
           "[--batch=B] ...",
       .flag_files = {"tools/demo_train.cc"},
       .other_modes_hint = " (it is a flag of the pipeline demo: see rill-demo --help)",
       .allow_positional = false});
  absl::Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "rill-demo train: %s\n", s.ToString().c_str());
    return absl::IsInvalidArgument(s) ? 2 : 1;
  }
  return 0;
}

}  // namespace rill::demo
