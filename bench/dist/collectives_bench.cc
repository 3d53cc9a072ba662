// Float32 sum all-reduce through Rill against MPI_Allreduce called directly,
// on the same buffers, in one job:
//
//   mpirun -np 2 [--allow-run-as-root] build/bench/dist/collectives_bench
//       [--min_bytes=4096] [--max_bytes=67108864] [--rounds=5] [--repeats=0 (auto)]
//       [--mmap_threshold=0 (leave glibc's)] [--quick]
//
// Sizes 4 KB, 64 KB, 1 MB, 16 MB and 64 MB (those within [min, max]). Per
// size and round, in this order (A B A B ...):
//   raw        MPI_Allreduce(MPI_IN_PLACE) on the tensor's own host memory,
//              on a duplicate of MPI_COMM_WORLD;
//   engine     dist::AllReduce on the tensor (in place), then WaitToRead:
//              one at a time through the engine and the communicator's thread;
//   nocheck    the same on a second communicator with check_order = false
//              (no descriptor exchange before the data moves);
//   stream     Stream::ThenAllReduce + BlockHostUntilDone on a host stream
//              (the communicator without the engine);
//   raw8       8 MPI_Allreduce calls on 8 distinct buffers back to back;
//   pipe8      8 dist::AllReduce pushed on those 8 tensors, then 8 waits.
// A round's figure is the median of its --repeats calls (each rank's median,
// the slowest rank's taken); the table shows the median over rounds, and
// ratio = raw / Rill time (>= 1: Rill as fast) with the range over rounds.
// GB/s is algorithm bandwidth: bytes of one rank's buffer / time.
//
// Rank 0 prints the table and lines for scripts:
//   RATIO size=<bytes> mode=<engine|nocheck|stream|pipe8> median=<r> min=<r> max=<r>
//   FIGURE size=<bytes> mode=<raw|engine|...> us=<median microseconds> gbps=<GB/s>
//
// The 64 MB trap (docs: /work/shared/TOOLCHAIN.md section 10): with glibc's
// default mmap threshold Open MPI's default allreduce of 64 MB on 2 ranks
// runs ~7x slower than it can, for raw and Rill alike; `-x
// MALLOC_MMAP_THRESHOLD_=1073741824`, --mmap_threshold=268435456 (mallopt
// before MPI_Init) or `--mca coll_tuned_use_dynamic_rules 1 --mca
// coll_tuned_allreduce_algorithm 1` remove it. The header says which
// settings were in effect.

#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rill/dist/collective_ops.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream.h"

extern char** environ;

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int g_rank = 0;

[[noreturn]] void Die(const std::string& what, const absl::Status& s = absl::OkStatus()) {
  std::fprintf(stderr, "collectives_bench: rank %d: %s%s%s\n", g_rank, what.c_str(),
               s.ok() ? "" : ": ", s.ok() ? "" : std::string(s.message()).c_str());
  int init = 0;
  MPI_Initialized(&init);
  if (init) MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) Die(what, s);
}
template <typename T>
T Must(absl::StatusOr<T> v, const std::string& what) {
  if (!v.ok()) Die(what, v.status());
  return *std::move(v);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Flags {
  int64_t min_bytes = 4096, max_bytes = 64 << 20;
  int rounds = 5;
  int repeats = 0;  // 0: by size.
  int64_t mmap_threshold = 0;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : a.substr(eq + 1);
    auto num = [&] {
      char* end = nullptr;
      const long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || v < 0) Die("bad value in " + a);
      return static_cast<int64_t>(v);
    };
    if (name == "--min_bytes")
      f.min_bytes = num();
    else if (name == "--max_bytes")
      f.max_bytes = num();
    else if (name == "--rounds")
      f.rounds = static_cast<int>(std::max<int64_t>(1, num()));
    else if (name == "--repeats")
      f.repeats = static_cast<int>(num());
    else if (name == "--mmap_threshold")
      f.mmap_threshold = num();
    else if (name == "--quick")
      f.max_bytes = 1 << 20, f.rounds = 2, f.repeats = 5;
    else
      Die("unknown flag " + a +
          " (--min_bytes= --max_bytes= --rounds= --repeats= --mmap_threshold= --quick)");
  }
  return f;
}

// Calls per measurement: enough that small sizes are not all noise, few
// enough that 64 MB stays short under the trap (~150 ms a call).
int RepeatsFor(int64_t bytes, const Flags& f) {
  if (f.repeats > 0) return f.repeats;
  return bytes <= (64 << 10) ? 200 : bytes <= (1 << 20) ? 50 : bytes <= (16 << 20) ? 10 : 5;
}

void PrintSettings(const Communicator& world, const Flags& f) {
  std::printf("MPI: %s; %d ranks; Rill communicator: %s\n", world.Version().c_str(), world.size(),
              world.Algorithm().c_str());
  // mpirun's --mca flags and -x/exported OMPI_MCA_* reach the ranks as
  // these; the launcher's own bookkeeping ones are only counted.
  int any = 0, launcher = 0;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "OMPI_MCA_", 9) != 0) continue;
    const std::string v = *e + 9;
    bool own = false;
    for (const char* p :
         {"orte_", "ess", "pmix", "shmem_RUNTIME", "initial_wdir", "mpi_oversubscribe="}) {
      own |= v.rfind(p, 0) == 0;
    }
    if (own) {
      ++launcher;
    } else {
      std::printf("  env %s\n", *e), any = 1;
    }
  }
  std::printf("  env: %s OMPI_MCA_* settings (and %d of the launcher's own)\n", any ? "the" : "no",
              launcher);
  for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_"}) {
    const char* s = std::getenv(v);
    std::printf("  env %s=%s\n", v, s != nullptr ? s : "(unset)");
  }
  if (f.mmap_threshold > 0) {
    std::printf("  mallopt(M_MMAP_THRESHOLD, %lld) before MPI_Init\n",
                static_cast<long long>(f.mmap_threshold));
  } else {
    std::printf("  mmap threshold: glibc's (128 KiB, dynamic) unless set above\n");
  }
  for (const char* path : {"/etc/openmpi/openmpi-mca-params.conf"}) {
    std::ifstream in(path);
    std::string line, params;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] != '#') params += (params.empty() ? "" : "; ") + line;
    }
    if (!params.empty()) std::printf("  %s: %s\n", path, params.c_str());
  }
}

// One rank's memory for a size: 8 tensors; tensor 0 serves the one-at-a-time
// modes. Raw calls use the tensors' own host memory.
struct Buffers {
  std::vector<Tensor> t;
  std::vector<float*> host;
  std::vector<DeviceMemory<float>> mem;
  int64_t count = 0;
};

Buffers MakeBuffers(int64_t count, int n) {
  Buffers b;
  b.count = count;
  for (int i = 0; i < n; ++i) {
    std::vector<float> zeros(static_cast<size_t>(count), 0.0f);
    Tensor t = Must(
        Tensor::FromHost<float>(absl::MakeConstSpan(zeros), Shape{count}, engine::Context::Host()),
        "Tensor::FromHost");
    Check(t.WaitToWrite(), "WaitToWrite");
    StorageBlock s = Must(t.Storage(), "Storage");
    if (s.host == nullptr) Die("the tensor has no host pointer");
    b.host.push_back(reinterpret_cast<float*>(static_cast<char*>(s.host) + t.byte_offset()));
    b.mem.emplace_back(
        DeviceMemoryBase(s.memory.opaque(), t.ByteSize(), s.memory.offset() + t.byte_offset()));
    b.t.push_back(std::move(t));
  }
  return b;
}

// Seconds of one call of each mode.
struct Modes {
  Communicator* world;
  Communicator* nocheck;
  Stream* stream;
  MPI_Comm raw;
  Buffers* b;

  void Raw(int i = 0) const {
    const int rc = MPI_Allreduce(MPI_IN_PLACE, b->host[i], static_cast<int>(b->count), MPI_FLOAT,
                                 MPI_SUM, raw);
    if (rc != MPI_SUCCESS) Die("MPI_Allreduce failed");
  }
  void Engine(Communicator* c) const {
    Check(dist::AllReduce(*c, b->t[0], b->t[0], {.op = ReduceOp::kSum, .name = "bench"}),
          "dist::AllReduce");
    Check(b->t[0].WaitToRead(), "WaitToRead");
  }
  void StreamCall() const {
    stream->ThenAllReduce(world, b->mem[0], &b->mem[0], b->count, ReduceOp::kSum);
    Check(stream->BlockHostUntilDone(), "ThenAllReduce");
  }
  void Raw8() const {
    for (int i = 0; i < 8; ++i) Raw(i);
  }
  void Pipe8() const {
    for (int i = 0; i < 8; ++i) {
      Check(dist::AllReduce(*world, b->t[i], b->t[i], {.op = ReduceOp::kSum, .name = "bench"}),
            "dist::AllReduce");
    }
    for (int i = 0; i < 8; ++i) Check(b->t[i].WaitToRead(), "WaitToRead");
  }
};

// The slowest rank's median seconds of `repeats` calls of `fn`.
template <typename Fn>
double Measure(MPI_Comm sync, int repeats, Fn fn) {
  MPI_Barrier(sync);
  std::vector<double> s;
  s.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point t0 = Clock::now();
    fn();
    s.push_back(Seconds(t0, Clock::now()));
  }
  double m = Median(std::move(s)), worst = 0;
  MPI_Allreduce(&m, &worst, 1, MPI_DOUBLE, MPI_MAX, sync);
  return worst;
}

// Every rank's contribution is (rank + 1) * (i % 7 + 1); checks the sum once
// per path before timing anything.
void CheckSums(const Modes& m, int size) {
  const int64_t n = m.b->count;
  const double ranks_sum = size * (size + 1) / 2.0;
  auto fill = [&](int k) {
    for (int64_t i = 0; i < n; ++i)
      m.b->host[k][i] = static_cast<float>((g_rank + 1) * (i % 7 + 1));
  };
  auto expect = [&](int k, const char* path) {
    for (int64_t i = 0; i < n; ++i) {
      if (m.b->host[k][i] != static_cast<float>(ranks_sum * (i % 7 + 1))) {
        Die(std::string("wrong sum from the ") + path + " path at element " + std::to_string(i));
      }
    }
    std::memset(m.b->host[k], 0, n * sizeof(float));
  };
  fill(0), m.Raw(), expect(0, "raw");
  fill(0), m.Engine(m.world), expect(0, "engine");
  fill(0), m.Engine(m.nocheck), expect(0, "nocheck");
  fill(0), m.StreamCall(), expect(0, "stream");
  for (int k = 0; k < 8; ++k) fill(k);
  m.Pipe8();
  for (int k = 0; k < 8; ++k) expect(k, "pipelined");
}

std::string SizeName(int64_t bytes) {
  char s[32];
  if (bytes >= (1 << 20))
    std::snprintf(s, sizeof s, "%lld MB", static_cast<long long>(bytes >> 20));
  else if (bytes >= 1024)
    std::snprintf(s, sizeof s, "%lld KB", static_cast<long long>(bytes >> 10));
  else
    std::snprintf(s, sizeof s, "%lld B", static_cast<long long>(bytes));
  return s;
}

struct Range {
  double median, min, max;
};
Range RangeOf(const std::vector<double>& v) {
  return {Median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

int Main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  if (f.mmap_threshold > 0)
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(std::min<int64_t>(f.mmap_threshold, 1 << 30)));
  std::shared_ptr<Communicator> world = Must(dist::World(), "dist::World");
  g_rank = world->rank();
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"), "host platform");
  StreamExecutor* exec = Must(host->ExecutorForDevice(0), "host:0");
  CollectivesSupport* coll = exec->AsCollectives();
  if (coll == nullptr) Die("host:0 has no collectives plugin");
  CommunicatorOptions no_check;
  no_check.check_order = false;
  std::shared_ptr<Communicator> nocheck = Must(coll->NewCommunicator(no_check), "NewCommunicator");
  std::unique_ptr<Stream> stream = Must(exec->CreateStream(), "CreateStream");
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  MPI_Comm sync;
  MPI_Comm_dup(MPI_COMM_WORLD, &sync);

  const bool me = g_rank == 0;
  if (me) {
    PrintSettings(*world, f);
    std::printf("rounds %d, repeats %s per measurement; times are the slowest rank's median\n\n",
                f.rounds,
                f.repeats > 0 ? std::to_string(f.repeats).c_str() : "by size (200/50/10/5)");
    std::printf("%-6s %-8s %11s %11s %9s %9s  %-22s\n", "size", "mode", "raw us", "rill us",
                "raw GB/s", "rill GB/s", "ratio raw/rill (range)");
    std::fflush(stdout);
  }
  const char* kModes[] = {"engine", "nocheck", "stream", "pipe8"};
  std::string lines;
  for (int64_t bytes : {int64_t{4} << 10, int64_t{64} << 10, int64_t{1} << 20, int64_t{16} << 20,
                        int64_t{64} << 20}) {
    if (bytes < f.min_bytes || bytes > f.max_bytes) continue;
    const int64_t count = bytes / 4;
    Buffers b = MakeBuffers(count, 8);
    Modes m{world.get(), nocheck.get(), stream.get(), raw, &b};
    CheckSums(m, world->size());
    const int reps = RepeatsFor(bytes, f), reps8 = std::max(2, reps / 4);
    // Warm-up: first touches, Open MPI's first-use set-up, engine threads.
    m.Raw(), m.Engine(world.get()), m.Engine(nocheck.get()), m.StreamCall(), m.Raw8(), m.Pipe8();
    // Seconds per round, by mode ("raw" pairs with engine/nocheck/stream).
    std::map<std::string, std::vector<double>> t;
    for (int r = 0; r < f.rounds; ++r) {
      t["raw"].push_back(Measure(sync, reps, [&] { m.Raw(); }));
      t["engine"].push_back(Measure(sync, reps, [&] { m.Engine(world.get()); }));
      t["nocheck"].push_back(Measure(sync, reps, [&] { m.Engine(nocheck.get()); }));
      t["stream"].push_back(Measure(sync, reps, [&] { m.StreamCall(); }));
      t["raw8"].push_back(Measure(sync, reps8, [&] { m.Raw8(); }));
      t["pipe8"].push_back(Measure(sync, reps8, [&] { m.Pipe8(); }));
    }
    if (!me) continue;
    auto gbps = [](double b, double s) { return s > 0 ? b / s / 1e9 : 0; };
    const double raw_us = Median(t["raw"]) * 1e6, raw8_us = Median(t["raw8"]) * 1e6;
    char fig[160];
    std::snprintf(fig, sizeof fig, "FIGURE size=%lld mode=raw us=%.2f gbps=%.3f\n",
                  static_cast<long long>(bytes), raw_us, gbps(bytes, raw_us * 1e-6));
    lines += fig;
    std::snprintf(fig, sizeof fig, "FIGURE size=%lld mode=raw8 us=%.2f gbps=%.3f\n",
                  static_cast<long long>(bytes), raw8_us, gbps(8.0 * bytes, raw8_us * 1e-6));
    lines += fig;
    for (const char* mode : kModes) {
      const bool pipe = std::strcmp(mode, "pipe8") == 0;
      const std::vector<double>& base = t[pipe ? "raw8" : "raw"];
      const std::vector<double>& rill = t[mode];
      std::vector<double> ratios;
      for (size_t r = 0; r < rill.size(); ++r) ratios.push_back(base[r] / rill[r]);
      const Range q = RangeOf(ratios);
      const double bu = pipe ? raw8_us : raw_us, ru = Median(rill) * 1e6;
      const double moved = pipe ? 8.0 * bytes : static_cast<double>(bytes);
      std::printf("%-6s %-8s %11.1f %11.1f %9.3f %9.3f  %.3f (%.3f-%.3f)\n",
                  SizeName(bytes).c_str(), mode, bu, ru, gbps(moved, bu * 1e-6),
                  gbps(moved, ru * 1e-6), q.median, q.min, q.max);
      char line[200];
      std::snprintf(line, sizeof line, "RATIO size=%lld mode=%s median=%.3f min=%.3f max=%.3f\n",
                    static_cast<long long>(bytes), mode, q.median, q.min, q.max);
      lines += line;
      std::snprintf(line, sizeof line, "FIGURE size=%lld mode=%s us=%.2f gbps=%.3f\n",
                    static_cast<long long>(bytes), mode, ru, gbps(moved, ru * 1e-6));
      lines += line;
    }
    std::fflush(stdout);
  }
  if (me) {
    std::printf("\n(pipe8/raw8 times are per batch of 8; GB/s counts the 8 buffers)\n%s",
                lines.c_str());
    const CommunicatorStats s = world->stats();
    std::printf(
        "rill world communicator: %lld collectives, order-check wait %.3f s, transfer %.3f s\n",
        static_cast<long long>(s.collectives), s.wait_seconds, s.transfer_seconds);
    std::fflush(stdout);
  }
  stream.reset();
  MPI_Barrier(sync);
  MPI_Comm_free(&raw);
  MPI_Comm_free(&sync);
  return 0;  // Rill's at-exit hook finalizes MPI.
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) { return rill::Main(argc, argv); }
