// AlgorithmSelector (plugins/dnn/algorithm_selector.h): the first call
// tunes, the second hits memory, a fresh selector (as a new process) reads
// the file, a corrupt or stale file is ignored, a pin wins, deterministic
// mode skips non-deterministic algorithms, the budget bounds the timing;
// and kBestAlgorithm through DoConvolve runs the choice. The plugin offering
// the algorithms is a test double (FakeDnn) whose algorithms sleep for
// set times and compute with oneDNN.

#include "rill/plugins/dnn/algorithm_selector.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "rill/base/untrusted_file.h"
#include "rill/plugins/dnn/fake_dnn_test_util.h"
#include "rill/plugins/dnn/onednn/onednn_test_util.h"

namespace rill::testing {
namespace {

const bool kRegistered = RegisterFakeDnn();

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Selector : public OneDnnTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kRegistered);
    OneDnnTest::SetUp();
    if (IsSkipped()) return;
    // 0: deterministic and slow; 1: fast, not deterministic; 2: unavailable.
    FakeDnn::Algorithms() = {
        {{0, "slow", true, "", "", 0, true}, absl::Milliseconds(4)},
        {{1, "fast", true, "", "", 0, false}, absl::ZeroDuration()},
        {{2, "missing", false, "not on this machine", "", 0, true}, absl::ZeroDuration()},
    };
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "fake_nhwc")));
    fake_ = static_cast<FakeDnn*>(exec_->AsDnn());
    path_ = ::testing::TempDir() + "/rill_algorithms_" + std::to_string(getpid()) + "_" +
            std::to_string(GetParam());
    std::remove(path_.c_str());
    shape_.input = {.n = 1, .c = 4, .h = 6, .w = 6, .layout = DataLayout::kNHWC};
    shape_.filter = {.output_channels = 4, .input_channels = 4, .height = 3, .width = 3};
    shape_.conv = {.pad_h = 1, .pad_w = 1};
    shape_.output = Must(ConvolutionOutput(shape_.input, shape_.filter, shape_.conv));
  }
  void TearDown() override {
    std::remove(path_.c_str());
    if (exec_ != nullptr) {
      EXPECT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "onednn")));
    }
    FakeDnn::Algorithms() = {{{0, "plain", true, "", "", 0, true}, absl::ZeroDuration()}};
  }
  AlgorithmSelector::Options Options() const {
    AlgorithmSelector::Options o;
    o.cache_path = path_;
    o.repetitions = 2;
    return o;
  }
  AlgorithmChoice Select(AlgorithmSelector& selector) {
    return Must(selector.Select(exec_, fake_, ConvolutionKind::kForward, shape_));
  }

  FakeDnn* fake_ = nullptr;
  std::string path_;
  ConvolutionShape shape_;
};

TEST_P(Selector, TunesOnceThenRemembersInMemoryAndOnDisk) {
  AlgorithmSelector selector(Options());
  AlgorithmChoice first = Select(selector);
  EXPECT_EQ(first.source, ChoiceSource::kTuned);
  EXPECT_EQ(first.plugin, "fake_nhwc");
  EXPECT_EQ(first.algorithm, 1);  // The fast one; the unavailable one is never run.
  EXPECT_EQ(fake_->convolutions_by_algorithm.count(2), 0u);
  EXPECT_EQ(selector.counts().candidates_timed, 2);
  AlgorithmChoice second = Select(selector);
  EXPECT_EQ(second.source, ChoiceSource::kMemory);
  EXPECT_EQ(second.algorithm, 1);
  EXPECT_EQ(selector.counts().tuned, 1);

  const std::string file = ReadFile(path_);
  EXPECT_NE(file.find("rill-dnn-algorithm-cache 1\n"), std::string::npos) << file;
  EXPECT_NE(file.find("fake_nhwc fake 1"), std::string::npos) << file;

  // A fresh selector -- what a new process has -- reads the file and times nothing.
  AlgorithmSelector fresh(Options());
  AlgorithmChoice third = Select(fresh);
  EXPECT_EQ(third.source, ChoiceSource::kCacheFile);
  EXPECT_EQ(third.algorithm, 1);
  EXPECT_EQ(fresh.counts().candidates_timed, 0);
}

TEST_P(Selector, ACorruptFileIsIgnoredAndRewritten) {
  {
    std::ofstream out(path_);
    out << "rill-dnn-algorithm-cache 1\nthis line has no tabs\n";
  }
  AlgorithmSelector selector(Options());
  AlgorithmChoice choice = Select(selector);
  EXPECT_EQ(choice.source, ChoiceSource::kTuned);
  EXPECT_GE(selector.counts().file_entries_ignored, 1);
  EXPECT_EQ(ReadFile(path_).find("no tabs"), std::string::npos);

  {
    std::ofstream out(path_);
    out << "some other format\n";
  }
  AlgorithmSelector other(Options());
  EXPECT_EQ(Select(other).source, ChoiceSource::kTuned);
}

// Regression (issue 39, class 5): the cache was read with std::ifstream:
// a FIFO blocked the first convolution, a huge file was read whole, "inf"
// seconds were accepted.
TEST_P(Selector, AnUntrustedCacheIsIgnoredCleanly) {
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  AlgorithmSelector fifo(Options());
  EXPECT_EQ(Select(fifo).source, ChoiceSource::kTuned);  // Did not block.
  EXPECT_GE(fifo.counts().file_entries_ignored, 1);
  std::remove(path_.c_str());

  ASSERT_EQ(mkdir(path_.c_str(), 0700), 0);
  AlgorithmSelector directory(Options());
  EXPECT_EQ(Select(directory).source, ChoiceSource::kTuned);
  EXPECT_GE(directory.counts().file_entries_ignored, 1);
  ASSERT_EQ(rmdir(path_.c_str()), 0);

  {
    std::ofstream out(path_);
    out << "rill-dnn-algorithm-cache 1\nkey\tfake_nhwc\t1\tinf\n";
  }
  AlgorithmSelector infinite(Options());
  EXPECT_EQ(Select(infinite).source, ChoiceSource::kTuned);
  EXPECT_GE(infinite.counts().file_entries_ignored, 1);

  {
    std::ofstream out(path_);
    out << "rill-dnn-algorithm-cache 1\n";
    for (int i = 0; i < 100; ++i) out << "key " << i << "\tfake_nhwc\t1\t0.5\n";
  }
  SetFileAllocationCap(2000);
  AlgorithmSelector capped(Options());
  const AlgorithmChoice choice = Select(capped);
  SetFileAllocationCap(0);
  EXPECT_EQ(choice.source, ChoiceSource::kTuned);
  EXPECT_GE(capped.counts().file_entries_ignored, 1);
}

TEST_P(Selector, AStaleEntryIsNotTrusted) {
  AlgorithmSelector selector(Options());
  Select(selector);
  // Rewrite the entry to name an algorithm the plugin does not offer.
  std::string file = ReadFile(path_);
  const size_t tab = file.rfind("\tfake_nhwc\t1\t");
  ASSERT_NE(tab, std::string::npos) << file;
  file.replace(tab, 13, "\tfake_nhwc\t7\t");
  {
    std::ofstream out(path_);
    out << file;
  }
  AlgorithmSelector fresh(Options());
  AlgorithmChoice choice = Select(fresh);
  EXPECT_EQ(choice.source, ChoiceSource::kTuned);
  EXPECT_EQ(choice.algorithm, 1);
  EXPECT_EQ(fresh.counts().file_entries_ignored, 1);
}

TEST_P(Selector, APinWinsOverTheCache) {
  AlgorithmSelector selector(Options());
  EXPECT_EQ(Select(selector).algorithm, 1);
  selector.Pin(ConvolutionKind::kForward, shape_, "fake_nhwc", 0);
  AlgorithmChoice pinned = Select(selector);
  EXPECT_EQ(pinned.source, ChoiceSource::kPinned);
  EXPECT_EQ(pinned.algorithm, 0);
  selector.Pin(ConvolutionKind::kForward, shape_, "cudnn", 0);
  EXPECT_TRUE(HasError(selector.Select(exec_, fake_, ConvolutionKind::kForward, shape_).status(),
                       absl::StatusCode::kNotFound,
                       {"pinned plugin \"cudnn\"", "not in the chain"}));
  selector.Unpin(ConvolutionKind::kForward, shape_);
  EXPECT_EQ(Select(selector).source, ChoiceSource::kMemory);
}

TEST_P(Selector, DeterministicModeSkipsNonDeterministicAlgorithms) {
  AlgorithmSelector::Options options = Options();
  options.deterministic = true;
  AlgorithmSelector selector(options);
  const int fast_runs = fake_->convolutions_by_algorithm[1];  // The instance outlives tests.
  AlgorithmChoice choice = Select(selector);
  EXPECT_EQ(choice.algorithm, 0);
  EXPECT_EQ(fake_->convolutions_by_algorithm[1], fast_runs);  // Never even timed.
  // Only non-deterministic algorithms: nothing to choose.
  FakeDnn::Algorithms().erase(FakeDnn::Algorithms().begin());
  selector.ClearMemory();
  shape_.input.n = 2;
  shape_.output.n = 2;
  EXPECT_TRUE(HasError(selector.Select(exec_, fake_, ConvolutionKind::kForward, shape_).status(),
                       absl::StatusCode::kNotFound,
                       {"no deterministic available forward convolution algorithm"}));
}

TEST_P(Selector, TheBudgetBoundsTheTiming) {
  AlgorithmSelector::Options options = Options();
  options.budget = absl::ZeroDuration();
  AlgorithmSelector selector(options);
  AlgorithmChoice choice = Select(selector);
  EXPECT_EQ(selector.counts().candidates_timed, 1);  // At least one is always timed.
  EXPECT_EQ(choice.algorithm, 0);
}

TEST_P(Selector, BestAlgorithmThroughTheChainRunsTheChoice) {
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "fake_nhwc,onednn")));
  fake_ = static_cast<FakeDnn*>(exec_->AsDnn());
  AlgorithmSelector& selector = AlgorithmSelector::Default();
  const AlgorithmSelector::Options saved = selector.options();
  selector.SetOptions(Options());
  const std::vector<float> x = RandomFloats(shape_.input.ElementCount(), 1),
                           w = RandomFloats(shape_.filter.ElementCount(), 2);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w), dy = Output(shape_.output.ElementCount());
  ASSERT_TRUE(
      IsOk(exec_->AsDnn()->DoConvolve(stream_.get(), {shape_, dx, dw, dy, kBestAlgorithm})));
  const std::vector<float> y = Download(dy);
  selector.SetOptions(saved);
  const Reference ref = Forward(shape_, x, w);
  EXPECT_TRUE(AllNear("conv", y, ref.value, 1e-5, 1e-5));
  // The fake (fast algorithm) or oneDNN won; the file names the choice.
  const std::string file = ReadFile(path_);
  EXPECT_NE(file.find("fake_nhwc fake 1, onednn oneDNN"), std::string::npos) << file;
}

// A new process -- this test binary again, running only the test below
// with RILL_DNN_CACHE naming the file -- finds the choice on disk through
// AlgorithmSelector::Default() and times nothing.
TEST_P(Selector, ANewProcessReadsTheCacheFile) {
  if (GetParam() != 0) GTEST_SKIP() << "one device is enough";
  AlgorithmSelector selector(Options());
  ASSERT_EQ(Select(selector).source, ChoiceSource::kTuned);
  const std::string filter = "--gtest_filter=Devices/Selector.DISABLED_ReadsTheFileAlone/host0";
  const std::string env = "RILL_DNN_CACHE=" + path_;
  char* argv[] = {const_cast<char*>("/proc/self/exe"), const_cast<char*>(filter.c_str()),
                  const_cast<char*>("--gtest_also_run_disabled_tests"), nullptr};
  std::vector<char*> envp = {const_cast<char*>(env.c_str())};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, 15) != "RILL_DNN_CACHE=") envp.push_back(*e);
  }
  envp.push_back(nullptr);
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child process did not find the choice in " << path_;
}

// Run only by ANewProcessReadsTheCacheFile, in a process of its own.
TEST_P(Selector, DISABLED_ReadsTheFileAlone) {
  AlgorithmSelector& selector = AlgorithmSelector::Default();
  const char* cache = std::getenv("RILL_DNN_CACHE");
  ASSERT_NE(cache, nullptr);
  ASSERT_EQ(selector.options().cache_path, cache);
  const AlgorithmChoice choice = Select(selector);
  EXPECT_EQ(choice.source, ChoiceSource::kCacheFile);
  EXPECT_EQ(choice.algorithm, 1);
  EXPECT_EQ(selector.counts().candidates_timed, 0);
}

INSTANTIATE_TEST_SUITE_P(Devices, Selector, ::testing::Values(0, 1), DeviceName);

}  // namespace
}  // namespace rill::testing
