#ifndef RILL_BENCH_BENCH_REPORT_H_
#define RILL_BENCH_BENCH_REPORT_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace rill::bench {

// What one benchmark run measured, by benchmark name ("BM_Memcpy/1048576").
struct Measured {
  double real_ns_per_iter = 0;  // Adjusted real time per iteration (median of the samples).
  std::map<std::string, double> counters;  // User counters (rates already divided; medians).
  std::vector<double> samples;             // Real time per iteration of each repetition.
};
using Results = std::map<std::string, Measured>;

// Collects FIGURE and RATIO lines.
class Report {
 public:
  // An absolute figure, e.g. Figure("stream.host.enqueue_ns", 85).
  void Figure(const std::string& name, double value);
  // Rill over the peer; higher is better.
  void Ratio(const std::string& name, double value);
  void Print() const;

 private:
  std::string lines_;
};

// Runs the registered benchmarks (honouring the usual --benchmark_* flags),
// then calls `summarize` with every run's results and prints its FIGURE and
// RATIO lines at the end of the output. Returns main's exit code.
int RunAndReport(int argc, char** argv,
                 const std::function<void(const Results&, Report&)>& summarize);

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCH_REPORT_H_
