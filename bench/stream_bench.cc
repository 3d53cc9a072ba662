// Host stream costs: enqueue, round trip, event record/wait, and memcpy
// bandwidth through ThenMemcpy against plain memcpy in the same run.
//
//   build/bench/stream_bench [--benchmark_min_time=0.2]
//
// The cost of stream listeners (verbose mode, the trace) with nobody
// listening is measured against the build before they existed:
// docs/verbose.md.

#include <cstring>
#include <memory>
#include <vector>

#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/rill.h"

namespace rill {
namespace {

StreamExecutor* HostExecutor() {
  static StreamExecutor* executor = [] {
    Platform* host = *PlatformManager::Default().PlatformWithName("host");
    return *host->ExecutorForDevice(0);
  }();
  return executor;
}

constexpr int kBatch = 1024;

// Pipelined empty host callbacks: a batch is enqueued back to back while the
// worker drains it, then waited for. Time per operation = producer cost plus
// hand-off, amortized; the figure is per operation.
void BM_EnqueueHostCallback(benchmark::State& state) {
  std::unique_ptr<Stream> stream = *HostExecutor()->CreateStream();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) stream->ThenDoHostCallback([] {});
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_EnqueueHostCallback)->UseRealTime();

// Enqueue one empty callback and wait for it: the latency of a hand-off to
// the stream thread and back.
void BM_RoundTrip(benchmark::State& state) {
  std::unique_ptr<Stream> stream = *HostExecutor()->CreateStream();
  for (auto _ : state) {
    stream->ThenDoHostCallback([] {});
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
}
BENCHMARK(BM_RoundTrip)->UseRealTime();

// Record an event on one stream and make another wait for it, pipelined in
// batches; the figure is per record+wait pair.
void BM_EventRecordWait(benchmark::State& state) {
  std::unique_ptr<Stream> producer = *HostExecutor()->CreateStream();
  std::unique_ptr<Stream> consumer = *HostExecutor()->CreateStream();
  std::unique_ptr<Event> event = *HostExecutor()->CreateEvent();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      producer->ThenRecordEvent(event.get());
      consumer->ThenWaitFor(event.get());
    }
    if (!producer->BlockHostUntilDone().ok() || !consumer->BlockHostUntilDone().ok()) {
      state.SkipWithError("stream failed");
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_EventRecordWait)->UseRealTime();

constexpr int kCopies = 8;

// Device-to-host copies through a stream, kCopies per wait, against plain
// memcpy of the same buffers below.
void BM_RillMemcpy(benchmark::State& state) {
  const uint64_t bytes = state.range(0);
  ScopedDeviceMemory<char> device = *HostExecutor()->AllocateOwnedArray<char>(bytes);
  std::vector<char> host(bytes, 1);
  std::unique_ptr<Stream> stream = *HostExecutor()->CreateStream();
  stream->ThenMemcpy(device.ptr(), host.data(), bytes);  // First touch.
  if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  for (auto _ : state) {
    for (int i = 0; i < kCopies; ++i) stream->ThenMemcpy(host.data(), *device, bytes);
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.SetBytesProcessed(state.iterations() * kCopies * bytes);
}
BENCHMARK(BM_RillMemcpy)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();

void BM_PlainMemcpy(benchmark::State& state) {
  const uint64_t bytes = state.range(0);
  ScopedDeviceMemory<char> device = *HostExecutor()->AllocateOwnedArray<char>(bytes);
  std::vector<char> host(bytes, 1);
  char* src = static_cast<char*>(device->opaque());
  std::memcpy(src, host.data(), bytes);  // First touch.
  for (auto _ : state) {
    for (int i = 0; i < kCopies; ++i) {
      std::memcpy(host.data(), src, bytes);
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(state.iterations() * kCopies * bytes);
}
BENCHMARK(BM_PlainMemcpy)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();

// Pipelined 64-byte fills, with no stream listener (/0: what every Then*
// call pays for the listener hooks when nobody listens, one relaxed load)
// and with one listener that does nothing (/1: the cost of listening --
// two timer events and a notification per call, as verbose mode and the
// trace pay before their own work).
void BM_MemZeroListened(benchmark::State& state) {
  class Quiet : public StreamListener {};
  auto listener = std::make_shared<Quiet>();
  if (state.range(0) == 1) AddStreamListener(listener);
  std::unique_ptr<Stream> stream = *HostExecutor()->CreateStream();
  auto memory = *HostExecutor()->AllocateOwnedArray<float>(16);
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) stream->ThenMemZero(memory.ptr(), 64);
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  RemoveStreamListener(listener.get());
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_MemZeroListened)->Arg(0)->Arg(1)->UseRealTime();

void Summarize(const bench::Results& r, bench::Report& report) {
  auto ns = [&](const std::string& name) {
    auto it = r.find(name);
    return it == r.end() ? 0.0 : it->second.real_ns_per_iter;
  };
  report.Figure("stream.host.enqueue_ns", ns("BM_EnqueueHostCallback/real_time") / kBatch);
  report.Figure("stream.host.round_trip_us", ns("BM_RoundTrip/real_time") / 1e3);
  report.Figure("stream.host.event_record_wait_ns", ns("BM_EventRecordWait/real_time") / kBatch);
  const double quiet = ns("BM_MemZeroListened/0/real_time") / kBatch;
  const double listened = ns("BM_MemZeroListened/1/real_time") / kBatch;
  report.Figure("stream.host.memzero_ns.no_listener", quiet);
  report.Figure("stream.host.memzero_ns.one_listener", listened);
  if (quiet > 0 && listened > 0) report.Ratio("stream.host.listening_cost", quiet / listened);
  for (int bytes : {64 << 10, 1 << 20, 16 << 20}) {
    const std::string arg = std::to_string(bytes);
    const double rill = ns("BM_RillMemcpy/" + arg + "/real_time");
    const double plain = ns("BM_PlainMemcpy/" + arg + "/real_time");
    if (rill > 0 && plain > 0) {
      report.Figure("stream.host.memcpy_gbps." + arg, kCopies * bytes / rill);
      report.Ratio("stream.host.memcpy." + arg, plain / rill);
    }
  }
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) { return rill::bench::RunAndReport(argc, argv, rill::Summarize); }
