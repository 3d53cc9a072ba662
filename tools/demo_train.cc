// rill-demo train: the main job. Loads Fashion-MNIST, trains the dataset's
// benchmark convnet on the chosen device(s), evaluates on the test set each
// epoch, and writes the table, train_curve.csv, train_curve.png and an ONNX
// checkpoint, which it loads back and evaluates.

#include "tools/demo_train.h"

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
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
#include "rill/dist/collective_ops.h"
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
ABSL_FLAG(int64_t, hidden, 1024, "units of the dense layer");
ABSL_FLAG(double, dropout, 0.4, "dropout rate after the dense layer (0: none)");
ABSL_FLAG(int64_t, curve_every, 20,
          "plot the mean training loss of every N steps (0: per epoch only)");
ABSL_FLAG(int64_t, max_steps, 0, "stop after N steps in all, writing the state (0: no limit)");
ABSL_FLAG(bool, resume, false,
          "continue from the training state in --state (written at every epoch's end, at a stop, "
          "and every --state_every steps)");
ABSL_FLAG(std::string, state, "", "the training state file (default: <out_dir>/train_state.bin)");
ABSL_FLAG(int64_t, state_every, 0, "also write the training state every N steps (0: no)");
// Under mpirun (data-parallel over processes).
ABSL_FLAG(double, bucket_mb, 25, "mpirun: gradient fusion bucket size, MiB (the first is 1 MiB)");
ABSL_FLAG(bool, overlap, true,
          "mpirun: reduce gradients while the backward pass runs (false: after it, to measure)");
ABSL_FLAG(double, collective_timeout, 0,
          "mpirun: seconds a collective waits for the other ranks before failing "
          "(0: RILL_COLLECTIVE_TIMEOUT, else 120)");
ABSL_FLAG(double, stall_warning, 0,
          "mpirun: seconds before a warning names the ranks a collective waits for "
          "(0: RILL_COLLECTIVE_STALL, else 30)");

namespace rill::demo {

namespace {

std::atomic<bool> g_stop{false};
bool g_quiet = false;      // Ranks other than 0 print only errors.
std::string g_rank_label;  // " (rank 1 of 2)" under mpirun.

// printf for rank 0 alone.
void Say(const char* format, ...) ABSL_PRINTF_ATTRIBUTE(1, 2);
void Say(const char* format, ...) {
  if (g_quiet) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(stdout, format, args);
  va_end(args);
}

// Under mpirun, a rank that dies makes the launcher terminate the others
// with SIGTERM (Open MPI's default): each says so before it goes.
char g_term_message[256];
void OnSigterm(int) {
  ssize_t unused = write(STDERR_FILENO, g_term_message, strlen(g_term_message));
  (void)unused;
  _exit(143);
}

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

// Every count flag within a bound, before anything is allocated: a batch,
// a dense layer or a prefetch depth past these would not fit in memory
// (--hidden=16384 is 51M parameters, 600 MB with Adam's state).
absl::Status CheckCountFlags() {
  constexpr int64_t kMaxCount = int64_t{1} << 40;
  RILL_RETURN_IF_ERROR(
      tools::CheckFlagRange("epochs", absl::GetFlag(FLAGS_epochs), 1, 100000, "training epochs"));
  RILL_RETURN_IF_ERROR(tools::CheckFlagRange("batch", absl::GetFlag(FLAGS_batch), 1, 65536,
                                             "images per step over all devices"));
  RILL_RETURN_IF_ERROR(tools::CheckFlagRange("hidden", absl::GetFlag(FLAGS_hidden), 1, 16384,
                                             "units of the dense layer"));
  RILL_RETURN_IF_ERROR(
      tools::CheckFlagRange("prefetch", absl::GetFlag(FLAGS_prefetch), 0, 64, "batches ahead"));
  RILL_RETURN_IF_ERROR(tools::CheckFlagRange("train_limit", absl::GetFlag(FLAGS_train_limit), 0,
                                             kMaxCount, "images; 0: all"));
  RILL_RETURN_IF_ERROR(tools::CheckFlagRange("test_limit", absl::GetFlag(FLAGS_test_limit), 0,
                                             kMaxCount, "images; 0: all"));
  RILL_RETURN_IF_ERROR(tools::CheckFlagRange("curve_every", absl::GetFlag(FLAGS_curve_every), 0,
                                             kMaxCount, "steps; 0: per epoch"));
  RILL_RETURN_IF_ERROR(tools::CheckFlagRange("max_steps", absl::GetFlag(FLAGS_max_steps), 0,
                                             kMaxCount, "steps; 0: no limit"));
  RILL_RETURN_IF_ERROR(tools::CheckFlagRange("state_every", absl::GetFlag(FLAGS_state_every), 0,
                                             kMaxCount, "steps; 0: never"));
  const double dropout = absl::GetFlag(FLAGS_dropout), lr = absl::GetFlag(FLAGS_lr);
  if (!(dropout >= 0 && dropout < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dropout=", dropout, " is out of range [0, 1) (the dropped fraction)"));
  }
  if (!(lr > 0 && std::isfinite(lr))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr=", lr, " is not a positive finite learning rate"));
  }
  return absl::OkStatus();
}

absl::Status Run() {
  RILL_RETURN_IF_ERROR(CheckCountFlags());
  train::TrainOptions o;
  o.batch_size = absl::GetFlag(FLAGS_batch);
  o.lr = absl::GetFlag(FLAGS_lr);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.prefetch = absl::GetFlag(FLAGS_prefetch);
  o.model.hidden = absl::GetFlag(FLAGS_hidden);
  o.model.dropout = absl::GetFlag(FLAGS_dropout);
  o.curve_every = absl::GetFlag(FLAGS_curve_every);
  o.max_steps = absl::GetFlag(FLAGS_max_steps);
  o.overlap = absl::GetFlag(FLAGS_overlap);
  const double bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  if (!(bucket_mb > 0) || bucket_mb > 1 << 20)
    return absl::InvalidArgumentError(
        absl::StrCat("--bucket_mb=", bucket_mb, " is not in (0, 1M]"));
  o.bucket_bytes = static_cast<uint64_t>(bucket_mb * (1 << 20));
  o.first_bucket_bytes = std::min<uint64_t>(o.bucket_bytes, uint64_t{1} << 20);
  std::shared_ptr<Communicator> world;
  if (dist::LaunchedByMpi()) {
    CommunicatorOptions co;
    for (auto [flag, out] : {std::pair{absl::GetFlag(FLAGS_collective_timeout), &co.timeout},
                             std::pair{absl::GetFlag(FLAGS_stall_warning), &co.stall_warning}}) {
      if (!(flag >= 0) || flag > 3.1e7) {
        return absl::InvalidArgumentError(
            absl::StrCat("--collective_timeout/--stall_warning: ", flag,
                         " is not a number of seconds in [0, 3.1e7]"));
      }
      *out = std::chrono::milliseconds(static_cast<int64_t>(flag * 1000));
    }
    RILL_ASSIGN_OR_RETURN(world, dist::World(co));
    o.communicator = world;
    g_quiet = world->rank() != 0;
    g_rank_label = absl::StrCat(" (rank ", world->rank(), " of ", world->size(), ")");
    std::snprintf(g_term_message, sizeof g_term_message,
                  "rill-demo train: rank %d of %d: terminated (SIGTERM): under mpirun this "
                  "means another rank was lost or failed (the launcher's message names it)\n",
                  world->rank(), world->size());
    std::signal(SIGTERM, OnSigterm);
  }
  const int epochs = absl::GetFlag(FLAGS_epochs);
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
  Say("device: %s (%s)\n", names.c_str(), reason.c_str());
  if (world != nullptr) {
    Say("world: %d ranks (%s, %s; %s), this output is rank 0's\n", world->size(),
        world->Name().c_str(), world->Version().c_str(), world->Algorithm().c_str());
  }
  Say("model: %s\n", o.model.ToString().c_str());
  Say("training: %d epoch(s), %s; hardware threads %u\n", epochs, o.ToString().c_str(),
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
  Say("data: %lld training and %lld test images of %lldx%lld from %s\n",
      static_cast<long long>(train.size), static_cast<long long>(test.size),
      static_cast<long long>(train.rows), static_cast<long long>(train.cols), dir.c_str());
  std::fflush(stdout);

  std::string state_path = absl::GetFlag(FLAGS_state);
  if (state_path.empty()) state_path = out + "/train_state.bin";
  o.state_every = absl::GetFlag(FLAGS_state_every);
  o.state_path = state_path;
  if (absl::GetFlag(FLAGS_resume)) {
    RILL_ASSIGN_OR_RETURN(o.resume, train::ReadTrainState(state_path));
    Say("resuming from %s: epoch %d, batch %lld, step %lld (written by %d rank(s))\n",
        state_path.c_str(), o.resume->epoch + 1, static_cast<long long>(o.resume->next_batch),
        static_cast<long long>(o.resume->step), o.resume->world_size);
  }
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer, train::Trainer::Create(o));
  // Under mpirun a stop must reach every rank at the same step (--max_steps);
  // Ctrl-C there ends the job.
  if (world == nullptr) std::signal(SIGINT, OnSigint);
  std::FILE* progress_out = g_quiet ? std::fopen("/dev/null", "w") : stdout;
  train::ProgressLine line(progress_out != nullptr ? progress_out : stdout, epochs);
  std::vector<train::EpochRecord> records;
  std::vector<train::StepRecord> steps;
  double inference_rate = 0;  // test-set images/s of the last evaluation
  double comm_seconds = 0;
  bool stopped = false;
  for (int e = trainer->resume_epoch(); e < epochs && !g_stop.load() && !stopped; ++e) {
    RILL_ASSIGN_OR_RETURN(
        train::EpochResult r,
        trainer->TrainEpoch(
            train, e, [&](const train::Progress& p) { line.Update(p); }, &g_stop));
    stopped = r.stopped;
    comm_seconds += r.comm_seconds;
    steps.insert(steps.end(), r.steps.begin(), r.steps.end());
    RILL_RETURN_IF_ERROR(r.stopped ? trainer->SaveState(state_path, e, r.first_batch + r.batches)
                                   : trainer->SaveState(state_path, e + 1, 0));
    if (r.batches == 0) break;
    train::Metrics m;
    if (!g_quiet) {  // Rank 0 evaluates; the others go on to the next epoch.
      const absl::Time eval_start = absl::Now();
      RILL_ASSIGN_OR_RETURN(m, trainer->Evaluate(test));
      inference_rate =
          static_cast<double>(m.examples) / absl::ToDoubleSeconds(absl::Now() - eval_start);
    }
    records.push_back({e + 1, r.train.loss, r.train.accuracy, m.loss, m.accuracy, r.seconds,
                       r.images_per_second, r.stopped});
    Say("epoch %d: test loss %.4f, test accuracy %.4f\n", e + 1, m.loss, m.accuracy);
    std::fflush(stdout);
  }
  if (world == nullptr) std::signal(SIGINT, SIG_DFL);
  if (stopped)
    Say("stopped after step %lld (--max_steps); the state is in %s\n",
        static_cast<long long>(trainer->steps()), state_path.c_str());
  if (g_stop.load())
    Say("interrupted: stopped after the current batch; writing what was trained\n");
  if (records.empty())
    return absl::CancelledError("stopped before the first batch: nothing to report");
  if (g_quiet) return absl::OkStatus();  // Rank 0 writes the report and the files.

  Say("\n");
  train::PrintTable(stdout, records);
  const std::string png = out + "/train_curve.png", csv = out + "/train_curve.csv",
                    steps_csv = out + "/train_steps.csv",
                    model = out + "/fashion_mnist_convnet.onnx";
  RILL_RETURN_IF_ERROR(train::WriteCsv(csv, records));
  RILL_RETURN_IF_ERROR(train::WriteStepCsv(steps_csv, steps));
  RILL_RETURN_IF_ERROR(train::WriteCurvePng(
      png, records, steps,
      absl::StrCat("Fashion-MNIST convnet on ", names,
                   world != nullptr ? absl::StrCat(" x ", world->size(), " ranks") : "", ", batch ",
                   o.batch_size, ", Adam lr ", o.lr)));
  RILL_RETURN_IF_ERROR(trainer->SaveCheckpoint(model));
  Say("\nwrote %s, %s, %s and %s\n", png.c_str(), csv.c_str(), steps_csv.c_str(), model.c_str());
  RILL_ASSIGN_OR_RETURN(train::Metrics reloaded,
                        train::EvaluateCheckpoint(model, o.model, test, o.devices[0], o.engine));
  Say("checkpoint reloaded through the ONNX importer: test accuracy %.4f (trained model %.4f)\n",
      reloaded.accuracy, records.back().test_accuracy);
  if (o.devices.size() > 1 || world != nullptr) {
    const kvstore::KVStoreStats s = trainer->kvstore_stats();
    Say("kvstore: %lld pushes, %lld pulls, %.1f MiB pushed; host time in push %.3f s, pull %.3f "
        "s\n",
        static_cast<long long>(s.pushes), static_cast<long long>(s.pulls),
        s.bytes_pushed / 1048576.0, s.push_seconds, s.pull_seconds);
  }
  const CommunicatorStats cs = world != nullptr ? world->stats() : CommunicatorStats{};
  if (world != nullptr) {
    Say("collectives (rank 0): %lld, %.1f MiB; %.3f s waiting for the other ranks to join, "
        "%.3f s moving data\n",
        static_cast<long long>(cs.collectives), cs.bytes / 1048576.0, cs.wait_seconds,
        cs.transfer_seconds);
  }
  const train::EpochRecord& last = records.back();
  Say("RESULT epochs=%zu test_accuracy=%.4f train_loss=%.4f images_per_second=%.1f "
      "inference_images_per_second=%.1f checkpoint_accuracy=%.4f world=%d comm_seconds=%.3f "
      "comm_wait_seconds=%.3f comm_transfer_seconds=%.3f\n",
      records.size(), last.test_accuracy, last.train_loss, last.images_per_second, inference_rate,
      reloaded.accuracy, world != nullptr ? world->size() : 1, comm_seconds, cs.wait_seconds,
      cs.transfer_seconds);
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
    std::fprintf(stderr, "rill-demo train%s: %s\n", g_rank_label.c_str(), s.ToString().c_str());
    return absl::IsInvalidArgument(s) ? 2 : 1;
  }
  return 0;
}

}  // namespace rill::demo
