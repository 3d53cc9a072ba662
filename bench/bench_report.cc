#include "bench/bench_report.h"

#include <unistd.h>

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
      m.real_ns_per_iter = run.GetAdjustedRealTime();  // In the run's time unit.
      if (run.time_unit == benchmark::kMicrosecond) m.real_ns_per_iter *= 1e3;
      if (run.time_unit == benchmark::kMillisecond) m.real_ns_per_iter *= 1e6;
      if (run.time_unit == benchmark::kSecond) m.real_ns_per_iter *= 1e9;
      for (const auto& [name, counter] : run.counters) m.counters[name] = counter.value;
    }
  }

 private:
  Results* results_;
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
