// Hang diagnosis (DescribePending, the watchdog) and profiling (Chrome
// traces naming functions and workers). Runs with RILL_HOST_DEVICES=2.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/platform/host/host_platform.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"
#include "tests/testing/json_value.h"

namespace rill::engine {
namespace {

using ::rill::engine::testing::Kind;
using ::rill::engine::testing::KindName;
using ::rill::engine::testing::Latch;
using ::rill::engine::testing::MakeEngine;
using ::rill::engine::testing::OpenLatchOnExit;
using ::rill::engine::testing::PushHeld;
using ::rill::engine::testing::WaitUntil;
using ::rill::engine::testing::WithDeadline;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;
using namespace std::chrono_literals;

// The host platform's two devices, for traces that span devices.
class EngineProfiling : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    absl::StatusOr<Platform*> host = PlatformManager::Default().PlatformWithName("host");
    ASSERT_TRUE(host.ok()) << host.status();
    if ((*host)->VisibleDeviceCount() < 2) {
      GTEST_SKIP() << "needs RILL_HOST_DEVICES=2 (has " << (*host)->VisibleDeviceCount() << ")";
    }
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<Context> ctx = Context::Device("host", i);
      ASSERT_TRUE(ctx.ok()) << ctx.status();
      devices_[i] = *ctx;
    }
  }

  Context devices_[2];
};

INSTANTIATE_TEST_SUITE_P(Kinds, EngineProfiling, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

// --- Hang diagnosis ---------------------------------------------------------------

// DescribePending names the waiting function and the function holding the
// var it waits for.
TEST(EngineDiagnosis, DescribePendingNamesTheWaiterAndTheHolder) {
  EngineOptions options;
  options.cpu_workers = 2;
  auto engine = MakeEngine(Kind::kThreaded, options);
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {v}, "holder_op")));
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(),
                                    {v}, {}, FnProperty::kNormal, 0, "waiting_op")));
  const std::string pending = engine->DescribePending();
  EXPECT_NE(pending.find("waiting_op"), std::string::npos) << pending;
  EXPECT_NE(pending.find("holder_op"), std::string::npos) << pending;
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  const std::string after = engine->DescribePending();
  EXPECT_EQ(after.find("waiting_op"), std::string::npos) << after;
}

// Many readers holding a var at once: the first few are named, the rest
// counted (a completion then searches a short list under the var's lock).
TEST(EngineDiagnosis, DescribePendingNamesTheFirstReadersAndCountsTheRest) {
  auto engine = MakeEngine(Kind::kThreaded, testing::Workers(1));
  VarHandle busy = engine->NewVariable();
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {busy}, "occupies_the_worker")));
  for (int i = 0; i < 10; ++i) {  // Granted at once (no writer), queued for the worker.
    ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(),
                                      {v}, {}, FnProperty::kNormal, 0, absl::StrCat("r", i))));
  }
  const std::string pending = engine->DescribePending();
  EXPECT_NE(
      pending.find("held by 'r0' (read) 'r1' (read) 'r2' (read) 'r3' (read) and 6 more reader(s)"),
      std::string::npos)
      << pending;
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(engine->DescribePending().find("reader(s)"), std::string::npos);
}

// DescribePending may be called at any time, also while workers take, run
// and recycle the functions it lists: every name it prints is one that was
// pushed (a block recycled under it would show a torn or foreign name, and
// ThreadSanitizer reports the race). Operators are pushed too: their blocks
// drop the operator's body when recycled.
TEST(EngineDiagnosis, DescribePendingIsSafeWhileFunctionsRunAndAreRecycled) {
  EngineOptions options;
  options.cpu_workers = 2;
  auto engine = MakeEngine(Kind::kThreaded, options);
  // Names past the small-string buffer, so a reused block reallocates them.
  const std::vector<std::string> names = {"describe_race_function_alpha_0123456789",
                                          "describe_race_function_beta_0123456789",
                                          "describe_race_operator_gamma_0123456789"};
  std::vector<VarHandle> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine->NewVariable());
  absl::StatusOr<OperatorHandle> op =
      engine->NewOperator([](RunContext, Completion done) { done(); }, {vars[0]}, {vars[1]},
                          FnProperty::kNormal, names[2]);
  ASSERT_TRUE(IsOk(op.status()));

  std::atomic<bool> pushing{true};
  std::atomic<int> descriptions{0};
  std::atomic<bool> failed{false};
  std::string bad;  // Written by the describer only; read after it joins.
  std::thread describer([&] {
    while (pushing.load()) {
      const std::string text = engine->DescribePending();
      descriptions.fetch_add(1);
      // Every quoted name must be one that was pushed.
      for (size_t open = text.find('\''); open != std::string::npos;
           open = text.find('\'', open + 1)) {
        const size_t close = text.find('\'', open + 1);
        if (close == std::string::npos) {
          bad = "unterminated name in: " + text;
          failed = true;
          return;
        }
        const std::string name = text.substr(open + 1, close - open - 1);
        if (std::find(names.begin(), names.end(), name) == names.end()) {
          bad = "unknown name '" + name + "' in: " + text;
          failed = true;
          return;
        }
        open = close;
      }
    }
  });
  for (int i = 0; i < 60000 && !failed.load(); ++i) {
    absl::Status pushed;
    if (i % 3 == 2) {
      pushed = engine->Push(*op, Context::Host());
    } else {
      // Independent functions, so most are ready at once and queue for a worker.
      pushed = engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(), {},
                                {vars[2 + i % 6]}, FnProperty::kNormal, 0, names[i % 3]);
    }
    if (!pushed.ok()) {
      ADD_FAILURE() << pushed;
      break;
    }
  }
  EXPECT_TRUE(WaitUntil([&] { return descriptions.load() >= 2 || failed.load(); }));
  pushing = false;
  describer.join();
  EXPECT_TRUE(bad.empty()) << bad;
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
}

// The watchdog, after a period without progress, reports what is pending
// (on stderr) without being asked.
TEST(EngineDiagnosis, WatchdogReportsAHang) {
  EngineOptions options;
  options.cpu_workers = 1;
  options.watchdog_period = absl::Milliseconds(50);
  auto engine = MakeEngine(Kind::kThreaded, options);
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {v}, "stuck_holder")));
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(),
                                    {v}, {}, FnProperty::kNormal, 0, "stuck_waiter")));
  // Long enough for several periods even under ThreadSanitizer.
  std::this_thread::sleep_for(1000ms);
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  engine.reset();
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::fputs(err.c_str(), stderr);  // Keep the report (and any sanitizer report) in the log.
  EXPECT_NE(err.find("stuck_waiter"), std::string::npos) << err;
  EXPECT_NE(err.find("stuck_holder"), std::string::npos) << err;
}

// --- Profiling ----------------------------------------------------------------------

// A small strict JSON checker: returns whether `text` is one JSON value.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : s_(text) {}
  bool Valid() {
    Ws();
    if (!Value()) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Lit(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  bool String() {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        if (s_[i_] == 'u') {
          for (int k = 0; k < 4; ++k) {
            if (++i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_])))
              return false;
          }
        } else if (std::string("\"\\/bfnrt").find(s_[i_]) == std::string::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool Number() {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    size_t digits = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_, ++digits;
    if (digits == 0) return false;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_, ++digits;
      if (digits == 0) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_, ++digits;
      if (digits == 0) return false;
    }
    return i_ > start;
  }
  bool Value() {
    if (++depth_ > 64) return false;
    Ws();
    bool ok = false;
    if (i_ >= s_.size()) {
      ok = false;
    } else if (s_[i_] == '{') {
      ++i_;
      Ws();
      ok = true;
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
      } else {
        while (true) {
          Ws();
          if (!String()) {
            ok = false;
            break;
          }
          Ws();
          if (i_ >= s_.size() || s_[i_] != ':') {
            ok = false;
            break;
          }
          ++i_;
          if (!Value()) {
            ok = false;
            break;
          }
          Ws();
          if (i_ < s_.size() && s_[i_] == ',') {
            ++i_;
            continue;
          }
          if (i_ < s_.size() && s_[i_] == '}') {
            ++i_;
            break;
          }
          ok = false;
          break;
        }
      }
    } else if (s_[i_] == '[') {
      ++i_;
      Ws();
      ok = true;
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
      } else {
        while (true) {
          if (!Value()) {
            ok = false;
            break;
          }
          Ws();
          if (i_ < s_.size() && s_[i_] == ',') {
            ++i_;
            continue;
          }
          if (i_ < s_.size() && s_[i_] == ']') {
            ++i_;
            break;
          }
          ok = false;
          break;
        }
      }
    } else if (s_[i_] == '"') {
      ok = String();
    } else if (s_[i_] == 't') {
      ok = Lit("true");
    } else if (s_[i_] == 'f') {
      ok = Lit("false");
    } else if (s_[i_] == 'n') {
      ok = Lit("null");
    } else {
      ok = Number();
    }
    --depth_;
    return ok;
  }

  const std::string& s_;
  size_t i_ = 0;
  int depth_ = 0;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name + "_" +
         std::to_string(::getpid()) + ".json";
}

TEST(JsonCheckerSelfTest, AcceptsJsonAndRejectsNonJson) {
  EXPECT_TRUE(
      JsonChecker(R"({"traceEvents":[{"name":"a\"b","ts":1.5e3,"x":[true,false,null]}]})").Valid());
  EXPECT_FALSE(JsonChecker(R"({"traceEvents":[{"name":"a",}]})").Valid());
  EXPECT_FALSE(JsonChecker(R"({"traceEvents":[)").Valid());
  EXPECT_FALSE(JsonChecker("{\"a\":1}{").Valid());
}

// StartProfiling + WriteTrace: a valid Chrome trace JSON with a
// "traceEvents" array naming every function that ran, host and device.
TEST_P(EngineProfiling, ProfilingWritesAChromeTraceNamingTheFunctions) {
  auto engine = MakeEngine(GetParam());
  engine->StartProfiling();
  VarHandle v = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(),
                                    {}, {v}, FnProperty::kNormal, 0, "alpha_host_op")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [](RunContext rc) {
        rc.stream->ThenDoHostCallback([] { std::this_thread::sleep_for(1ms); });
        return absl::OkStatus();
      },
      devices_[1], {v}, {}, FnProperty::kNormal, 0, "beta_device_op")));
  ASSERT_TRUE(IsOk(engine->PushAsync([](RunContext, Completion done) { done(); }, Context::Host(),
                                     {v}, {v}, FnProperty::kAsync, 0, "gamma \"quoted\" op")));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  const std::string path = TempPath("rill_engine_trace");
  ASSERT_TRUE(IsOk(engine->WriteTrace(path)));
  const std::string json = ReadFile(path);
  std::remove(path.c_str());
  EXPECT_TRUE(JsonChecker(json).Valid()) << json;
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos) << json;
  EXPECT_NE(json.find("alpha_host_op"), std::string::npos) << json;
  EXPECT_NE(json.find("beta_device_op"), std::string::npos) << json;
  EXPECT_NE(json.find("gamma \\\"quoted\\\" op"), std::string::npos) << json;
}

// Profiling may start while functions run: every span still names the
// worker that ran it (the number is taken with the start time).
TEST_P(EngineProfiling, ProfilingStartedMidRunLabelsEverySpanWithItsWorker) {
  // The test's thread does not help while it waits: a helping waiter runs
  // functions on its own lane, and on a loaded machine it can run all of
  // the profiled ones (seen under ctest -j2), leaving no worker span.
  EngineOptions options;
  options.waiting_thread_helps = false;
  auto engine = MakeEngine(GetParam(), options);
  std::vector<VarHandle> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine->NewVariable());
  std::atomic<bool> pushing{true};
  std::thread starter([&] {
    while (pushing.load() && engine->Stats().completed < 100) std::this_thread::yield();
    engine->StartProfiling();
  });
  bool pushed = true;  // No ASSERT while the starter runs: it must be joined.
  for (int i = 0; i < 20000 && pushed; ++i) {
    pushed = IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(), {},
                                   {vars[i % vars.size()]}, FnProperty::kNormal, 0, "tick"));
  }
  pushing.store(false);
  starter.join();
  ASSERT_TRUE(pushed);
  for (int i = 0; i < 100; ++i) {  // Profiled for sure.
    ASSERT_TRUE(
        IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(), {},
                              {vars[i % vars.size()]}, FnProperty::kNormal, 0, "tock")));
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  const std::string path = TempPath("rill_engine_trace_mid_run");
  ASSERT_TRUE(IsOk(engine->WriteTrace(path)));
  const std::string json = ReadFile(path);
  std::remove(path.c_str());
  EXPECT_TRUE(JsonChecker(json).Valid());
  EXPECT_NE(json.find("tock"), std::string::npos);
  EXPECT_NE(json.find("\"engine worker "), std::string::npos) << json.substr(0, 2000);
  EXPECT_EQ(json.find("worker -1"), std::string::npos) << json.substr(0, 2000);
}

// EngineOptions::trace_path writes the trace at shutdown.
TEST_P(EngineProfiling, TracePathOptionWritesTheTraceAtShutdown) {
  const std::string path = TempPath("rill_engine_trace_option");
  std::remove(path.c_str());
  {
    EngineOptions options;
    options.trace_path = path;
    auto engine = MakeEngine(GetParam(), options);
    VarHandle v = engine->NewVariable();
    ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(),
                                      {}, {v}, FnProperty::kNormal, 0, "delta_op")));
  }
  const std::string json = ReadFile(path);
  std::remove(path.c_str());
  EXPECT_TRUE(JsonChecker(json).Valid()) << json;
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos) << json;
  EXPECT_NE(json.find("delta_op"), std::string::npos) << json;
}

// What ran where, for how long, waiting on what: a device function whose
// stream work sleeps 50 ms shows a >= 50 ms span on its stream's lane
// beside a short enqueue span on a worker; arrows join it to the device
// function that read its var and on to the host function after that; the
// lanes carry names and the process its name; timestamps are absolute; and
// 12 independent device functions use at most streams_per_device streams.
TEST_P(EngineProfiling, TraceShowsDeviceTimeArrowsAndNamedLanes) {
  using ::rill::testing::JsonParser;
  using ::rill::testing::JsonValue;
  EngineOptions options;
  options.streams_per_device = 2;
  auto engine = MakeEngine(GetParam(), options);
  engine->StartProfiling();
  const double start_us = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  VarHandle v = engine->NewVariable(), w = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync(
      [](RunContext rc) {
        rc.stream->ThenDoHostCallback([] { std::this_thread::sleep_for(50ms); });
        return absl::OkStatus();
      },
      devices_[1], {}, {v}, FnProperty::kNormal, 0, "sleepy")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [](RunContext rc) {
        rc.stream->ThenDoHostCallback([] {});
        return absl::OkStatus();
      },
      devices_[1], {v}, {w}, FnProperty::kNormal, 0, "reads_sleepy")));
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::OkStatus(); }, Context::Host(),
                                    {w}, {}, FnProperty::kNormal, 0, "host_reader")));
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [](RunContext rc) {
          rc.stream->ThenDoHostCallback([] { std::this_thread::sleep_for(2ms); });
          return absl::OkStatus();
        },
        devices_[0], {}, {engine->NewVariable()}, FnProperty::kNormal, 0, "independent")));
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  const std::string path = TempPath("rill_engine_trace_device");
  ASSERT_TRUE(IsOk(engine->WriteTrace(path)));
  std::optional<JsonValue> trace = JsonParser::Parse(ReadFile(path));
  std::remove(path.c_str());
  ASSERT_TRUE(trace.has_value()) << "not JSON";
  const std::vector<JsonValue>& events = trace->operator[]("traceEvents").array;

  std::map<double, std::string> lanes;  // tid -> name
  bool process_named = false;
  for (const JsonValue& e : events) {
    if (e["ph"].string != "M") continue;
    if (e["name"].string == "process_name") process_named = true;
    if (e["name"].string == "thread_name") lanes[e["tid"].number] = e["args"]["name"].string;
  }
  EXPECT_TRUE(process_named);
  struct Slice {
    std::string lane, cat;
    double ts, dur;
  };
  std::map<std::string, std::vector<Slice>> slices;  // By function name.
  std::set<std::string> pool_lanes;
  for (const JsonValue& e : events) {
    if (e["ph"].string != "X") continue;
    const std::string& lane = lanes[e["tid"].number];
    slices[e["name"].string].push_back({lane, e["cat"].string, e["ts"].number, e["dur"].number});
    EXPECT_GE(e["ts"].number, start_us - 60e6) << "timestamps are absolute (Unix epoch µs)";
    if (lane.rfind("host:0 engine stream ", 0) == 0) pool_lanes.insert(lane);
  }
  auto find = [&](const std::string& name, const std::string& cat) -> const Slice* {
    for (const Slice& s : slices[name]) {
      if (s.cat == cat) return &s;
    }
    return nullptr;
  };
  const Slice* sleepy_device = find("sleepy", "engine.device");
  const Slice* sleepy_host = find("sleepy", "engine");
  const Slice* reader_device = find("reads_sleepy", "engine.device");
  const Slice* host_reader = find("host_reader", "engine");
  ASSERT_NE(sleepy_device, nullptr);
  ASSERT_NE(sleepy_host, nullptr);
  ASSERT_NE(reader_device, nullptr);
  ASSERT_NE(host_reader, nullptr);
  EXPECT_EQ(sleepy_device->lane.rfind("host:1 engine stream ", 0), 0u) << sleepy_device->lane;
  EXPECT_EQ(sleepy_host->lane.rfind("engine worker ", 0), 0u) << sleepy_host->lane;
  EXPECT_GE(sleepy_device->dur, 50'000) << "µs of device time";
  EXPECT_LT(sleepy_host->dur, 50'000) << "the enqueue does not wait for the work";
  EXPECT_GE(reader_device->ts, sleepy_device->ts + sleepy_device->dur - 1000);
  EXPECT_LE(pool_lanes.size(), 2u) << "streams_per_device is 2";
  EXPECT_GE(pool_lanes.size(), 1u);

  // Arrows: each "s" and its "f" share an id; collect (from lane, to lane, times).
  struct End {
    std::string lane;
    double ts = 0;
  };
  std::map<double, End> from, to;
  for (const JsonValue& e : events) {
    if (e["ph"].string == "s") from[e["id"].number] = {lanes[e["tid"].number], e["ts"].number};
    if (e["ph"].string == "f") {
      EXPECT_EQ(e["bp"].string, "e");
      to[e["id"].number] = {lanes[e["tid"].number], e["ts"].number};
    }
  }
  EXPECT_EQ(from.size(), to.size());
  auto has_arrow = [&](const Slice& a, const Slice& b) {
    for (const auto& [id, f] : from) {
      auto t = to.find(id);
      if (t == to.end()) continue;
      // Microseconds since the epoch in a double: about 0.25 µs apart.
      if (f.lane == a.lane && f.ts >= a.ts - 1 && f.ts <= a.ts + a.dur + 1 &&
          t->second.lane == b.lane && std::abs(t->second.ts - b.ts) < 1) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(has_arrow(*sleepy_device, *reader_device)) << "no arrow from sleepy to reads_sleepy";
  EXPECT_TRUE(has_arrow(*reader_device, *host_reader))
      << "no arrow from reads_sleepy to host_reader";
}

}  // namespace
}  // namespace rill::engine
