// Stream listeners, verbose mode and the process-wide trace: what a known
// sequence of calls reports, device time that covers the real work, and the
// trace file's structure.

#include "rill/stream/stream_listener.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "rill/rill.h"
#include "rill/stream/trace_recorder.h"
#include "rill/stream/verbose.h"
#include "rill/testing/status_testing.h"
#include "tests/testing/json_value.h"

namespace rill {
namespace {

using ::rill::testing::IsOk;
using ::rill::testing::JsonParser;
using ::rill::testing::JsonValue;
using ::rill::testing::Must;

StreamExecutor* Host0() {
  return Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
}

// Collects what it is told.
class Recorder : public StreamListener {
 public:
  void OnEnqueued(const StreamOp& op) override {
    std::lock_guard<std::mutex> lock(mu_);
    enqueued_.push_back(op);
  }
  void OnCompleted(const StreamOp& op) override {
    std::lock_guard<std::mutex> lock(mu_);
    completed_.push_back(op);
  }
  void OnAllocation(const AllocationEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    allocations_.push_back(e);
  }
  std::vector<StreamOp> enqueued() {
    std::lock_guard<std::mutex> lock(mu_);
    return enqueued_;
  }
  std::vector<StreamOp> completed() {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_;
  }
  std::vector<AllocationEvent> allocations() {
    std::lock_guard<std::mutex> lock(mu_);
    return allocations_;
  }

 private:
  std::mutex mu_;
  std::vector<StreamOp> enqueued_, completed_;
  std::vector<AllocationEvent> allocations_;
};

// Registers a Recorder for the test's scope.
struct ScopedRecorder {
  ScopedRecorder() : recorder(std::make_shared<Recorder>()) { AddStreamListener(recorder); }
  ~ScopedRecorder() { RemoveStreamListener(recorder.get()); }
  std::shared_ptr<Recorder> recorder;
};

TEST(StreamListenerTest, ReportsEveryCallWithDeviceTimeThatCoversTheWork) {
  StreamExecutor* exec = Host0();
  auto mem = Must(exec->AllocateOwnedArray<float>(256));
  std::vector<float> host(256, 1.0f);
  auto stream = Must(exec->CreateStream());
  ScopedRecorder scoped;
  const std::string lane = StreamLane(stream.get());
  EXPECT_EQ(lane.rfind("host:0 stream ", 0), 0u) << lane;

  stream->ThenMemcpy(mem.ptr(), host.data(), 1024)
      .ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); })
      .ThenMemZero(mem.ptr(), 1024)
      .ThenMemcpy(host.data(), *mem.ptr(), 1024);
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  std::vector<StreamOp> done = scoped.recorder->completed();
  ASSERT_EQ(done.size(), 4u);
  const char* names[] = {"ThenMemcpy", "ThenDoHostCallback", "ThenMemZero", "ThenMemcpy"};
  for (size_t i = 0; i < done.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(done[i].name, names[i]);
    EXPECT_EQ(done[i].device, "host:0");
    EXPECT_EQ(done[i].lane, lane);
    EXPECT_TRUE(done[i].status.ok()) << done[i].status;
    ASSERT_TRUE(done[i].has_device_time);
    EXPECT_LE(done[i].device_start_ns, done[i].device_end_ns);
    if (i > 0) {
      EXPECT_GT(done[i].id, done[i - 1].id);
      EXPECT_GE(done[i].device_start_ns, done[i - 1].device_end_ns)
          << "spans of one stream overlap";
    }
  }
  EXPECT_EQ(done[0].args, "host->device, 1024 bytes");
  EXPECT_EQ(done[3].args, "device->host, 1024 bytes");
  // The sleeping callback's device span covers its 50 ms; its enqueue took
  // far less.
  EXPECT_GE(done[1].device_end_ns - done[1].device_start_ns, 50'000'000);
  EXPECT_LT(done[1].enqueue_end_ns - done[1].enqueue_start_ns, 50'000'000);
  EXPECT_GE(done[1].device_start_ns, done[1].enqueue_start_ns - 1'000'000);
}

TEST(StreamListenerTest, RefusedCallIsReportedAtEnqueueOnly) {
  StreamExecutor* exec = Host0();
  auto mem = Must(exec->AllocateOwnedArray<float>(4));
  std::vector<float> host(64);
  auto stream = Must(exec->CreateStream());
  ScopedRecorder scoped;
  stream->ThenMemcpy(mem.ptr(), host.data(), 256);  // Overruns the 16 bytes.
  EXPECT_FALSE(stream->BlockHostUntilDone().ok());
  std::vector<StreamOp> enqueued = scoped.recorder->enqueued();
  ASSERT_EQ(enqueued.size(), 1u);
  EXPECT_EQ(enqueued[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(scoped.recorder->completed().size(), 0u);
}

TEST(StreamListenerTest, AllocationsAreReported) {
  StreamExecutor* exec = Host0();
  ScopedRecorder scoped;
  { auto mem = Must(exec->AllocateOwnedArray<float>(1000)); }
  std::vector<AllocationEvent> events = scoped.recorder->allocations();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0].free);
  EXPECT_EQ(events[0].bytes, 4000u);
  EXPECT_TRUE(events[1].free);
  EXPECT_EQ(events[0].address, events[1].address);
}

TEST(StreamListenerTest, RemovedListenerHearsNothingMore) {
  StreamExecutor* exec = Host0();
  auto stream = Must(exec->CreateStream());
  auto recorder = std::make_shared<Recorder>();
  AddStreamListener(recorder);
  stream->ThenDoHostCallback([] {});
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  RemoveStreamListener(recorder.get());
  EXPECT_FALSE(StreamListenersActive());
  stream->ThenDoHostCallback([] {});
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(recorder->completed().size(), 1u);
}

TEST(StreamListenerTest, LabelNamesTheLane) {
  auto stream = Must(Host0()->CreateStream());
  SetStreamLabel(stream.get(), "host:0 my stream");
  EXPECT_EQ(StreamLane(stream.get()), "host:0 my stream");
}

// Verbose mode: the header, then one parsable line per call.
TEST(VerboseTest, PrintsOneParsableLinePerCall) {
  StreamExecutor* exec = Host0();
  auto mem = Must(exec->AllocateOwnedArray<float>(64));
  std::vector<float> host(64);
  auto stream = Must(exec->CreateStream());
  std::mutex mu;
  std::vector<std::string> lines;
  SetVerboseSink([&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  });
  SetVerbose(2);
  stream->ThenMemcpy(mem.ptr(), host.data(), 256).ThenDoHostCallback([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  { auto more = Must(exec->AllocateOwnedArray<float>(8)); }
  stream->ThenMemcpy(mem.ptr(), host.data(), 1 << 20);  // Refused: overruns.
  SetVerbose(0);
  SetVerboseSink(nullptr);
  EXPECT_EQ(VerboseLevel(), 0);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lines.size(), 6u) << absl::StrJoin(lines, "\n");
  EXPECT_EQ(lines[0], "rill_verbose,kind,device,lane,op,args,plugin,algorithm,status,device_ms");
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : lines) rows.push_back(absl::StrSplit(line, ','));
  for (const auto& row : rows) ASSERT_EQ(row.size(), 10u) << absl::StrJoin(row, ",");
  // exec lines: kind, device, lane, op, args, plugin, algorithm, status, ms.
  EXPECT_EQ(rows[1][1], "exec");
  EXPECT_EQ(rows[1][2], "host:0");
  EXPECT_EQ(rows[1][3], StreamLane(stream.get()));
  EXPECT_EQ(rows[1][4], "ThenMemcpy");
  EXPECT_EQ(rows[1][5], "host->device;256 bytes");
  EXPECT_EQ(rows[1][6], "-");
  EXPECT_EQ(rows[1][8], "ok");
  EXPECT_EQ(rows[2][4], "ThenDoHostCallback");
  EXPECT_GE(std::stod(rows[2][9]), 20.0) << lines[2];
  EXPECT_EQ(rows[3][1], "alloc");
  EXPECT_EQ(rows[3][4], "Allocate");
  EXPECT_EQ(rows[3][5].rfind("32 bytes;", 0), 0u) << lines[3];
  EXPECT_EQ(rows[4][1], "free");
  EXPECT_EQ(rows[5][1], "refused");
  EXPECT_EQ(rows[5][8].rfind("INVALID_ARGUMENT: ", 0), 0u) << lines[5];
  EXPECT_EQ(rows[5][9], "-");
}

TEST(VerboseTest, BadLevelIsRefusedWithItsValue) {
  absl::Status status = SetVerboseFromString("loud");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'loud'"), std::string::npos) << status;
  EXPECT_EQ(VerboseLevel(), 0);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The process-wide trace: stream work on its lane with device time, a
// process name, absolute timestamps.
TEST(TraceTest, StreamWorkOutsideTheEngineIsTraced) {
  const std::string path = ::testing::TempDir() + "/rill_stream_trace.json";
  auto stream = Must(Host0()->CreateStream());
  const int64_t before_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  ASSERT_TRUE(IsOk(StartTracing(path)));
  EXPECT_EQ(StartTracing(path).code(), absl::StatusCode::kFailedPrecondition);
  stream->ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(StopTracing()));
  EXPECT_EQ(StopTracing().code(), absl::StatusCode::kFailedPrecondition);
  std::optional<JsonValue> trace = JsonParser::Parse(ReadFile(path));
  std::remove(path.c_str());
  ASSERT_TRUE(trace.has_value());
  const JsonValue& events = (*trace)["traceEvents"];
  ASSERT_EQ(events.type, JsonValue::Type::kArray);
  bool process_named = false;
  double lane_tid = -1;
  for (const JsonValue& e : events.array) {
    if (e["ph"].string == "M" && e["name"].string == "process_name") process_named = true;
    if (e["ph"].string == "M" && e["name"].string == "thread_name" &&
        e["args"]["name"].string == StreamLane(stream.get())) {
      lane_tid = e["tid"].number;
    }
  }
  EXPECT_TRUE(process_named);
  ASSERT_GE(lane_tid, 0) << "no lane named " << StreamLane(stream.get());
  int callbacks = 0;
  for (const JsonValue& e : events.array) {
    if (e["ph"].string != "X" || e["name"].string != "ThenDoHostCallback") continue;
    ++callbacks;
    EXPECT_EQ(e["tid"].number, lane_tid);
    EXPECT_GE(e["dur"].number, 50'000) << "µs";
    EXPECT_GE(e["ts"].number, before_us - 1e6) << "timestamps are absolute (Unix epoch µs)";
  }
  EXPECT_EQ(callbacks, 1);
}

}  // namespace
}  // namespace rill
