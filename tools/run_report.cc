#include "tools/run_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "tools/info_report.h"
#include "tools/json_writer.h"

namespace rill::tools {
namespace {

void WriteShape(JsonWriter& j, const Shape& shape) {
  j.Key("shape");
  j.BeginArray();
  for (int64_t d : shape.dims()) j.Int(d);
  j.EndArray();
}

}  // namespace

double RunReport::Percentile(double p) const {
  if (latencies_ms.empty()) return 0;
  std::vector<double> sorted = latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double RunReport::MeanMs() const {
  if (latencies_ms.empty()) return 0;
  double sum = 0;
  for (double v : latencies_ms) sum += v;
  return sum / latencies_ms.size();
}

double RunReport::SamplesPerSecond() const { return total_s > 0 ? batch * runs / total_s : 0; }
double RunReport::RunsPerSecond() const { return total_s > 0 ? runs / total_s : 0; }

bool RunReport::Checked() const {
  return std::any_of(outputs.begin(), outputs.end(), [](const Output& o) { return o.check; });
}

bool RunReport::AllPassed() const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [](const Output& o) { return !o.check || o.check->pass; });
}

void PrintRunReport(const RunReport& r, std::FILE* out) {
  const graph::MemoryReport& m = r.memory;
  absl::FPrintF(out, "model: %s (opset %d, %d forward nodes)\n", r.model, r.opset, r.forward_nodes);
  absl::FPrintF(out, "device: %s, opt %d, batch %d\n", r.device, r.opt, r.batch);
  for (const RunReport::Input& in : r.inputs)
    absl::FPrintF(out, "input  %s: %s %s (%s)\n", in.name, DTypeName(in.dtype), in.shape.ToString(),
                  in.source);
  absl::FPrintF(out, "import: %.2f ms\n", r.import_ms);
  absl::FPrintF(out, "optimize (level %s): %.2f ms%s%s\n", r.optimize_level, r.optimize_ms,
                r.optimize.empty() ? "" : ", ", r.optimize);
  absl::FPrintF(out, "bind: %.2f ms\n", r.bind_ms);
  absl::FPrintF(out,
                "memory plan: %s planned vs %s unshared (ratio %.3f; %d entries in %d blocks, %d "
                "in place); %s bound (weights, inputs)\n",
                HumanBytes(m.planned_bytes), HumanBytes(m.naive_bytes), m.ratio(), m.entries,
                m.blocks, m.inplace, HumanBytes(m.external_bytes));
  absl::FPrintF(out,
                "latency over %d runs (after %d warmup): p50 %.3f ms, p90 %.3f ms, "
                "p99 %.3f ms, mean %.3f ms, min %.3f ms, max %.3f ms\n",
                r.runs, r.warmup, r.Percentile(50), r.Percentile(90), r.Percentile(99), r.MeanMs(),
                r.Percentile(0), r.Percentile(100));
  absl::FPrintF(out, "throughput: %.1f inferences/s (batch %d x %.2f runs/s)\n",
                r.SamplesPerSecond(), r.batch, r.RunsPerSecond());
  absl::FPrintF(out,
                "cpu: %.2f cores busy on average (process CPU time %.3f s / wall %.3f s; spinning "
                "threads count as busy)\n",
                r.total_s > 0 ? r.cpu_s / r.total_s : 0, r.cpu_s, r.total_s);
  for (const RunReport::Output& o : r.outputs) {
    absl::FPrintF(out, "output %s: %s %s", o.name, DTypeName(o.dtype), o.shape.ToString());
    if (o.check) {
      absl::FPrintF(out, ": max abs err %.3g, max rel err %.3g: %s", o.check->max_abs,
                    o.check->max_rel, o.check->pass ? "PASS" : "FAIL");
      if (!o.check->pass) absl::FPrintF(out, " (%s)", o.check->reason);
    } else if (r.Checked()) {
      absl::FPrintF(out, ": no reference");
    }
    absl::FPrintF(out, "\n");
  }
  if (r.Checked()) {
    absl::FPrintF(out, "%s (rtol %g, atol %g)\n",
                  r.AllPassed() ? "PASS: every output within tolerance"
                                : "FAIL: outputs differ from the reference",
                  r.rtol, r.atol);
  }
}

std::string RunReportJson(const RunReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Member("model", r.model);
  j.Member("device", r.device);
  j.Member("opset", r.opset);
  j.Member("opt", r.opt);
  j.Member("batch", r.batch);
  j.Member("warmup", r.warmup);
  j.Member("runs", r.runs);
  j.Member("forward_nodes", r.forward_nodes);
  j.Member("cpu_cores_busy", r.total_s > 0 ? r.cpu_s / r.total_s : 0);
  j.Member("import_ms", r.import_ms);
  j.Member("optimize_level", r.optimize_level);
  j.Member("optimize_ms", r.optimize_ms);
  j.Member("optimize", r.optimize);
  j.Member("bind_ms", r.bind_ms);
  const graph::MemoryReport& m = r.memory;
  j.Key("memory");
  j.BeginObject();
  j.Member("planned_bytes", static_cast<int64_t>(m.planned_bytes));
  j.Member("unshared_bytes", static_cast<int64_t>(m.naive_bytes));
  j.Member("ratio", m.ratio());
  j.Member("entries", m.entries);
  j.Member("blocks", m.blocks);
  j.Member("inplace", m.inplace);
  j.Member("external_bytes", static_cast<int64_t>(m.external_bytes));
  j.EndObject();
  j.Key("latency_ms");
  j.BeginObject();
  j.Member("p50", r.Percentile(50));
  j.Member("p90", r.Percentile(90));
  j.Member("p99", r.Percentile(99));
  j.Member("mean", r.MeanMs());
  j.Member("min", r.Percentile(0));
  j.Member("max", r.Percentile(100));
  j.Key("runs");
  j.BeginArray();
  for (double v : r.latencies_ms) j.Double(v);
  j.EndArray();
  j.EndObject();
  j.Member("inferences_per_s", r.SamplesPerSecond());
  j.Member("runs_per_s", r.RunsPerSecond());
  j.Key("inputs");
  j.BeginArray();
  for (const RunReport::Input& in : r.inputs) {
    j.BeginObject();
    j.Member("name", in.name);
    WriteShape(j, in.shape);
    j.Member("dtype", DTypeName(in.dtype));
    j.Member("source", in.source);
    j.EndObject();
  }
  j.EndArray();
  j.Key("outputs");
  j.BeginArray();
  for (const RunReport::Output& o : r.outputs) {
    j.BeginObject();
    j.Member("name", o.name);
    WriteShape(j, o.shape);
    j.Member("dtype", DTypeName(o.dtype));
    if (o.check) {
      j.Member("reference", o.reference);
      j.Member("pass", o.check->pass);
      j.Member("max_abs_error", o.check->max_abs);
      j.Member("max_rel_error", o.check->max_rel);
      j.Member("mismatches", o.check->mismatches);
      if (!o.check->pass) j.Member("reason", o.check->reason);
    }
    j.EndObject();
  }
  j.EndArray();
  if (r.Checked()) {
    j.Member("rtol", r.rtol);
    j.Member("atol", r.atol);
    j.Member("pass", r.AllPassed());
  }
  j.EndObject();
  return j.str();
}

}  // namespace rill::tools
