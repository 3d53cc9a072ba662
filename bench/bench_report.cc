#include "bench/bench_report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

#include "benchmark/benchmark.h"

namespace rill::bench {
namespace {

// Prints as the console reporter does and keeps every run. Colour only on
// a terminal, so that piped output has clean FIGURE/RATIO lines for grep.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  explicit CollectingReporter(Results* results)
      : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular), results_(results) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      Measured& m = (*results_)[run.benchmark_name()];
      double ns = run.GetAdjustedRealTime();  // In the run's time unit.
      if (run.time_unit == benchmark::kMicrosecond) ns *= 1e3;
      if (run.time_unit == benchmark::kMillisecond) ns *= 1e6;
      if (run.time_unit == benchmark::kSecond) ns *= 1e9;
      // Repetitions (--benchmark_repetitions) each add a sample; the
      // figures are their medians.
      m.samples.push_back(ns);
      m.real_ns_per_iter = Median(m.samples);
      for (const auto& [name, counter] : run.counters) {
        std::vector<double>& values = counter_samples_[run.benchmark_name()][name];
        values.push_back(counter.value);
        m.counters[name] = Median(values);
      }
    }
  }

 private:
  static double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
  Results* results_;
  std::map<std::string, std::map<std::string, std::vector<double>>> counter_samples_;
};

}  // namespace

void Report::Figure(const std::string& name, double value) {
  char line[256];
  std::snprintf(line, sizeof(line), "FIGURE %s %.4g\n", name.c_str(), value);
  lines_ += line;
}

void Report::Ratio(const std::string& name, double value) {
  char line[256];
  std::snprintf(line, sizeof(line), "RATIO %s %.3f\n", name.c_str(), value);
  lines_ += line;
}

void Report::Print() const { std::cout << lines_ << std::flush; }

int RunAndReport(int argc, char** argv,
                 const std::function<void(const Results&, Report&)>& summarize) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Results results;
  CollectingReporter reporter(&results);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  Report report;
  summarize(results, report);
  std::fflush(stdout);
  report.Print();
  return 0;
}

}  // namespace rill::bench
