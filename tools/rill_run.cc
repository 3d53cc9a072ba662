// rill-run: imports an ONNX model, binds it on one device, feeds it inputs
// (.pb files, the model zoo's test data, or random values), times repeated
// inference passes and checks the outputs against references (as
// onnxruntime_perf_test and trtexec do).
//
//   rill-run model.onnx [--device=cuda:0] [--batch=8] [--runs=100]
//            [--test-data=DIR] [--compare=DIR_or_file] [--json=out.json]
//
// Exit status: 0 when it ran (and every compared output passed), 1 when the
// model cannot be imported, bound or run, a data file cannot be read, or an
// output differs from its reference; 2 for a usage error.

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rill/base/status_macros.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/graph/onnx/onnx_tensor.h"
#include "rill/graph/optimize.h"
#include "rill/platform/platform_manager.h"
#include "tools/run_inputs.h"
#include "tools/run_report.h"
#include "tools/tool_flags.h"

ABSL_FLAG(std::string, device, "cpu", "where the model runs: cpu, host:0, opencl:0, cuda:0");
ABSL_FLAG(int64_t, batch, 0,
          "value of every input's symbolic or unknown axis 0 (0: the importer's default; random "
          "inputs then use 1)");
ABSL_FLAG(int32_t, runs, 10, "timed inference passes (positive)");
ABSL_FLAG(int32_t, warmup, 2, "untimed passes before them");
ABSL_FLAG(int32_t, opt, 1,
          "graph optimization level: 1 = what Executor::Bind does by default (memory planning "
          "with in-place and reuse, nodes pushed in bulk segments); 0 = none of it (every entry "
          "its own buffer, one engine function per node)");
ABSL_FLAG(std::string, optimize, "all",
          "inference optimizer level (graph/optimize.h): none, basic (constant folding, identity "
          "removal), extended (+ convolution fusions with bias, BatchNorm, residual add and "
          "activation; GELU; LayerNorm), all (+ constant filters kept in the DNN library's "
          "layout, chained convolutions in NHWC)");
ABSL_FLAG(std::vector<std::string>, disable_rewrites, {},
          "optimizer rewrites to turn off by name (fold_constants, remove_identity, "
          "fold_conv_affine, fuse_conv_residual, fuse_conv_activation, fuse_gelu, "
          "fuse_layer_norm, constant_filters, nhwc_layout)");
ABSL_FLAG(std::string, dump_optimized, "",
          "write the optimized graph (one line per node) and the optimizer's report to this file");
ABSL_FLAG(std::vector<std::string>, input, {},
          "NAME=file.pb: feed graph input NAME from an ONNX TensorProto file (repeatable)");
ABSL_FLAG(std::string, test_data, "",
          "ONNX model-zoo test data: a test_data_set_N directory (input_<i>.pb, output_<i>.pb) "
          "or a directory holding test_data_set_* (the first is used); also --test-data");
ABSL_FLAG(std::string, compare, "",
          "reference outputs: a directory of output_<i>.pb (or holding test_data_set_*), or one "
          ".pb file for output 0; overrides the test data's outputs");
ABSL_FLAG(double, rtol, 1e-3, "relative tolerance: |got - ref| <= atol + rtol * |ref|");
ABSL_FLAG(double, atol, 1e-4, "absolute tolerance");
ABSL_FLAG(std::string, json, "",
          "also write the figures as one JSON document to this file ('-': stdout, and the text "
          "report goes to stderr)");

namespace rill::tools {
namespace {

constexpr int kUsageError = 2;
constexpr int kRunError = 1;

constexpr char kUsage[] =
    R"(rill-run: imports an ONNX model, runs it on one device and reports import and bind
time, the memory plan, latency percentiles and throughput; checks the outputs against
references when given.
Usage: rill-run model.onnx|DIR [--device=cpu|host:0|opencl:0|cuda:0] [--batch=N]
         [--runs=N] [--warmup=N] [--opt=0|1] [--optimize=none|basic|extended|all]
         [--disable-rewrites=a,b] [--dump-optimized=FILE] [--input=NAME=file.pb ...] [--test-data=DIR]
         [--compare=DIR_or_file] [--rtol=1e-3] [--atol=1e-4] [--json=out.json]
DIR: a model-zoo directory holding model.onnx. Inputs come from --input, else the test
data's input_<i>.pb (the i-th graph input that is not an initializer), else random values
(seed 0; floats in [-1, 1), integers in [0, 3]). References: --compare, else the test
data's output_<i>.pb. Flags may be spelled with - or _ (--test-data, --test_data).
Exit status: 0 ran (and every compared output passed); 1 import, bind, run or read
failure, or an output outside the tolerance; 2 usage error.)";

// A failure with its exit status; the message is printed after "rill-run: ".
struct Failure {
  int status;
  std::string message;
};

// argv with each flag name's '-' spelled '_' (--test-data) and every
// --input merged into one comma-separated --input (Abseil keeps only the
// last occurrence of a flag).
class Args {
 public:
  Args(int argc, char** argv) {
    std::vector<std::string> inputs;
    bool flags_done = false;
    for (int i = 0; i < argc; ++i) {
      std::string arg = argv[i];
      if (i > 0 && !flags_done && arg == "--") flags_done = true;
      if (i > 0 && !flags_done && arg.size() > 1 && arg[0] == '-') {
        const size_t begin = arg[1] == '-' ? 2 : 1;
        const size_t end = std::min(arg.find('='), arg.size());
        for (size_t k = begin; k < end; ++k)
          if (arg[k] == '-') arg[k] = '_';
        const std::string name = arg.substr(begin, end - begin);
        if (name == "input") {
          if (end < arg.size()) {
            inputs.push_back(arg.substr(end + 1));
          } else if (i + 1 < argc) {
            inputs.push_back(argv[++i]);
          } else {
            inputs.push_back("<missing>");  // Refused by ReadOptions.
          }
          continue;
        }
      }
      storage_.push_back(std::move(arg));
    }
    if (!inputs.empty()) storage_.push_back("--input=" + absl::StrJoin(inputs, ","));
    for (std::string& s : storage_) argv_.push_back(s.data());
    argv_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(argv_.size()) - 1; }
  char** argv() { return argv_.data(); }

 private:
  std::vector<std::string> storage_;
  std::vector<char*> argv_;
};

struct Options {
  std::string model;
  engine::Context context;
  int64_t batch = 0;
  int runs = 0, warmup = 0, opt = 1;
  graph::OptimizeOptions optimize;
  std::string dump_optimized;
  std::vector<std::pair<std::string, std::string>> inputs;  // NAME, file.
  std::string test_data, compare, json;
  double rtol = 0, atol = 0;
};

// The bounds of the count flags: a batch past kMaxBatch would have every
// input allocate that many samples, and kMaxRuns passes are hours.
constexpr int64_t kMaxBatch = 65536;
constexpr int64_t kMaxRuns = 1000000;

absl::StatusOr<Options> ReadOptions(const std::vector<char*>& positional) {
  Options o;
  if (positional.size() != 2) {
    return absl::InvalidArgumentError(
        positional.size() < 2
            ? "give one ONNX model file (see --help)"
            : absl::StrCat("one model at a time; unexpected '", positional[2], "' (see --help)"));
  }
  o.model = positional[1];
  // A model-zoo directory: its model.onnx.
  std::error_code ec;
  if (std::filesystem::is_directory(o.model, ec) &&
      std::filesystem::exists(std::filesystem::path(o.model) / "model.onnx", ec)) {
    o.model = (std::filesystem::path(o.model) / "model.onnx").string();
  }
  o.batch = absl::GetFlag(FLAGS_batch);
  o.runs = absl::GetFlag(FLAGS_runs);
  o.warmup = absl::GetFlag(FLAGS_warmup);
  o.opt = absl::GetFlag(FLAGS_opt);
  absl::StatusOr<graph::OptLevel> level = graph::ParseOptLevel(absl::GetFlag(FLAGS_optimize));
  if (!level.ok())
    return absl::InvalidArgumentError(absl::StrCat("--optimize: ", level.status().message()));
  o.optimize.level = *level;
  o.optimize.disabled = absl::GetFlag(FLAGS_disable_rewrites);
  if (absl::Status s = graph::CheckRewriteNames(o.optimize.disabled); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--disable-rewrites: ", s.message()));
  }
  o.dump_optimized = absl::GetFlag(FLAGS_dump_optimized);
  o.rtol = absl::GetFlag(FLAGS_rtol);
  o.atol = absl::GetFlag(FLAGS_atol);
  o.test_data = absl::GetFlag(FLAGS_test_data);
  o.compare = absl::GetFlag(FLAGS_compare);
  o.json = absl::GetFlag(FLAGS_json);
  RILL_RETURN_IF_ERROR(
      CheckFlagRange("batch", o.batch, 0, kMaxBatch, "a batch size; 0: the importer's default"));
  RILL_RETURN_IF_ERROR(CheckFlagRange("runs", o.runs, 1, kMaxRuns, "timed passes"));
  RILL_RETURN_IF_ERROR(CheckFlagRange("warmup", o.warmup, 0, kMaxRuns, "untimed passes"));
  if (o.opt != 0 && o.opt != 1)
    return absl::InvalidArgumentError(absl::StrCat("--opt=", o.opt, ": the levels are 0 and 1"));
  if (!(o.rtol >= 0) || !(o.atol >= 0))
    return absl::InvalidArgumentError("--rtol and --atol must be >= 0");
  for (const std::string& spec : absl::GetFlag(FLAGS_input)) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--input=", spec, ": expected NAME=file.pb"));
    }
    o.inputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  const std::string device = absl::GetFlag(FLAGS_device);
  absl::StatusOr<engine::Context> ctx = engine::Context::Parse(device);
  if (!ctx.ok()) {
    return absl::Status(ctx.status().code(),
                        absl::StrCat("--device=", device, ": ", ctx.status().message()));
  }
  o.context = *ctx;
  o.optimize.context = o.context;
  return o;
}

// NotFound/Unavailable naming the device when it cannot run here.
absl::Status CheckDevice(engine::Context ctx) {
  if (ctx.is_host()) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(Platform * p, PlatformManager::Default().PlatformWithId(ctx.platform));
  if (absl::Status a = p->Availability(); !a.ok()) {
    return absl::UnavailableError(
        absl::StrCat("device ", ctx.ToString(), " is unavailable: ", a.message()));
  }
  if (ctx.ordinal < 0 || ctx.ordinal >= p->VisibleDeviceCount()) {
    return absl::NotFoundError(absl::StrCat("no device ", ctx.ToString(), " (", p->Name(), " has ",
                                            p->VisibleDeviceCount(), " device(s))"));
  }
  return absl::OkStatus();
}

double MsSince(absl::Time start) { return absl::ToDoubleMilliseconds(absl::Now() - start); }

// The host tensors fed to the model's inputs, in m.inputs order, each with
// where it came from.
absl::Status CollectInputs(const Options& o, const graph::OnnxModel& m, const std::string& set,
                           std::vector<graph::OnnxHostTensor>* values, RunReport* report) {
  absl::flat_hash_map<std::string, std::pair<graph::OnnxHostTensor, std::string>> given;
  if (!set.empty()) {
    const std::vector<std::string> files = NumberedFiles(set, "input_");
    if (files.size() > m.inputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("the test data has ", files.size(),
                                                     " input files, the model ", m.inputs.size(),
                                                     " input(s)"));
    }
    for (size_t i = 0; i < files.size(); ++i) {
      RILL_ASSIGN_OR_RETURN(graph::OnnxHostTensor t, ReadTensorFile(files[i]));
      given[m.inputs[i]] = {std::move(t), "test data " + files[i]};
    }
  }
  for (const auto& [name, file] : o.inputs) {
    RILL_ASSIGN_OR_RETURN(graph::OnnxHostTensor t, ReadTensorFile(file));
    given[name] = {std::move(t), "file " + file};
  }
  std::mt19937_64 rng(0);
  for (const std::string& name : m.inputs) {
    auto it = given.find(name);
    if (it != given.end()) {
      values->push_back(std::move(it->second.first));
      report->inputs.push_back(
          {name, values->back().shape, values->back().dtype, std::move(it->second.second)});
      continue;
    }
    const graph::Node& var = m.graph.node(m.graph.Find(name));
    DeclaredInput d;
    if (var.shape && var.dtype) {
      d = {*var.shape, *var.dtype};
    } else {
      RILL_ASSIGN_OR_RETURN(d, ReadDeclaredInput(o.model, name, o.batch));
    }
    values->push_back(RandomTensor(d.dtype, d.shape, rng));
    report->inputs.push_back({name, d.shape, d.dtype, "random"});
  }
  return absl::OkStatus();
}

// output_<i>.pb per output index, from --compare or else the test data.
absl::StatusOr<std::vector<std::string>> ReferenceFiles(const Options& o, const std::string& set) {
  if (o.compare.empty()) {
    return set.empty() ? std::vector<std::string>{} : NumberedFiles(set, "output_");
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(o.compare, ec)) {
    if (!std::filesystem::exists(o.compare, ec))
      return absl::NotFoundError(absl::StrCat("--compare: no such file '", o.compare, "'"));
    return std::vector<std::string>{o.compare};
  }
  RILL_ASSIGN_OR_RETURN(std::string dir, ResolveTestDataSet(o.compare));
  std::vector<std::string> files = NumberedFiles(dir, "output_");
  if (files.empty())
    return absl::NotFoundError(absl::StrCat("--compare: no output_0.pb in '", dir, "'"));
  return files;
}

std::optional<Failure> Fail(int status, const std::string& what, const absl::Status& s) {
  return Failure{status, absl::StrCat(what, s.message())};
}

// The shapes of the inputs given as files (the test set's input_<i>.pb,
// --input), which fix the model's symbolic dimensions at import.
absl::Status GivenShapes(const Options& o, const std::string& set,
                         absl::flat_hash_map<std::string, std::vector<int64_t>>* shapes) {
  absl::StatusOr<std::vector<std::string>> read = GraphInputNames(o.model);
  if (!read.ok()) return absl::OkStatus();  // The import says what is wrong with the file.
  const std::vector<std::string>& names = *read;
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [name, file] : o.inputs) {
    // A name that is no input is refused later, as a usage error.
    if (std::find(names.begin(), names.end(), name) != names.end()) files.emplace_back(name, file);
  }
  if (!set.empty()) {
    const std::vector<std::string> numbered = NumberedFiles(set, "input_");
    for (size_t i = 0; i < numbered.size() && i < names.size(); ++i) {
      files.emplace_back(names[i], numbered[i]);
    }
  }
  for (const auto& [name, file] : files) {
    RILL_ASSIGN_OR_RETURN(graph::OnnxHostTensor t, ReadTensorFile(file));
    (*shapes)[name] = std::vector<int64_t>(t.shape.span().begin(), t.shape.span().end());
  }
  return absl::OkStatus();
}

std::optional<Failure> Import(const Options& o, const std::string& set, graph::OnnxModel* model,
                              RunReport& r) {
  graph::OnnxImportOptions io;
  io.context = o.context;
  io.batch = o.batch;
  if (absl::Status s = GivenShapes(o, set, &io.input_shapes); !s.ok()) {
    return Fail(kRunError, "inputs: ", s);
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<graph::OnnxModel> m = graph::ImportOnnxFile(o.model, io);
  r.import_ms = MsSince(start);
  if (!m.ok()) {
    // The importer's message, whole (an Unimplemented one lists every
    // unsupported node by op type), less its own "'MODEL': " prefix.
    std::string message(m.status().message());
    const std::string named = absl::StrCat("'", o.model, "': ");
    if (absl::StartsWith(message, named)) message.erase(0, named.size());
    return Failure{kRunError, absl::StrCat("cannot import ", o.model, ": ", message)};
  }
  r.opset = static_cast<int>(m->opset);
  *model = *std::move(m);
  return std::nullopt;
}

// The initializers and the inputs (CollectInputs) as tensors on the device.
std::optional<Failure> MakeArgs(const Options& o, const graph::OnnxModel& m, const std::string& set,
                                absl::flat_hash_map<std::string, Tensor>* args, RunReport& r) {
  for (const auto& [name, file] : o.inputs) {
    if (std::find(m.inputs.begin(), m.inputs.end(), name) == m.inputs.end()) {
      return Failure{kUsageError,
                     absl::StrCat("--input: the model has no input '", name,
                                  "' (its inputs: ", absl::StrJoin(m.inputs, ", "), ")")};
    }
  }
  std::vector<graph::OnnxHostTensor> values;
  if (absl::Status s = CollectInputs(o, m, set, &values, &r); !s.ok())
    return Fail(kRunError, "inputs: ", s);
  *args = m.initializers;
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StatusOr<Tensor> t = graph::TensorFromHost(values[i], o.context);
    if (!t.ok()) return Fail(kRunError, absl::StrCat("input '", m.inputs[i], "': "), t.status());
    (*args)[m.inputs[i]] = *std::move(t);
  }
  if (!r.inputs.empty() && r.inputs[0].shape.rank() > 0) r.batch = r.inputs[0].shape.dim(0);
  return std::nullopt;
}

// --warmup then --runs passes, each waiting for every output.
double CpuSeconds() {
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

std::optional<Failure> TimeRuns(const Options& o, graph::Executor& exec, RunReport& r) {
  absl::Time first = absl::Now();
  double cpu_first = CpuSeconds();
  for (int i = 0; i < o.warmup + o.runs; ++i) {
    if (i == o.warmup) {
      first = absl::Now();
      cpu_first = CpuSeconds();
    }
    const absl::Time start = absl::Now();
    absl::Status s = exec.Forward(/*is_train=*/false);
    for (const Tensor& y : exec.outputs()) {
      if (!s.ok()) break;
      s = y.WaitToRead();
    }
    if (!s.ok()) return Fail(kRunError, absl::StrCat("run ", i + 1, " failed: "), s);
    if (i >= o.warmup) r.latencies_ms.push_back(MsSince(start));
  }
  r.total_s = absl::ToDoubleSeconds(absl::Now() - first);
  r.cpu_s = CpuSeconds() - cpu_first;
  return std::nullopt;
}

// Every output's name, shape and type, and its check where a reference is.
std::optional<Failure> CheckOutputs(const Options& o, const graph::OnnxModel& m,
                                    const std::string& set, const graph::Executor& exec,
                                    RunReport& r) {
  absl::StatusOr<std::vector<std::string>> refs = ReferenceFiles(o, set);
  if (!refs.ok()) return Fail(kRunError, "", refs.status());
  const std::vector<Tensor>& outs = exec.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    RunReport::Output out;
    out.name = i < m.outputs.size() ? m.outputs[i] : absl::StrCat("output ", i);
    out.shape = outs[i].shape();
    out.dtype = outs[i].dtype();
    if (i < refs->size()) {
      absl::StatusOr<graph::OnnxHostTensor> got = ToHostTensor(outs[i]);
      if (!got.ok())
        return Fail(kRunError, absl::StrCat("output '", out.name, "': "), got.status());
      absl::StatusOr<graph::OnnxHostTensor> want = ReadTensorFile((*refs)[i]);
      if (!want.ok()) return Fail(kRunError, "reference: ", want.status());
      out.reference = (*refs)[i];
      out.check = CompareTensors(*got, *want, o.rtol, o.atol);
    }
    r.outputs.push_back(std::move(out));
  }
  return std::nullopt;
}

// The inference optimizer on the imported model, and its dump.
std::optional<Failure> Optimize(const Options& o, graph::OnnxModel& m, RunReport& r) {
  const absl::Time start = absl::Now();
  absl::StatusOr<graph::OptimizeReport> done =
      graph::OptimizeForInference(&m.graph, &m.initializers, o.optimize);
  r.optimize_ms = MsSince(start);
  if (!done.ok()) return Fail(kRunError, "cannot optimize: ", done.status());
  r.optimize_level = graph::OptLevelName(o.optimize.level);
  r.optimize = done->ToString();
  if (!o.dump_optimized.empty()) {
    std::ofstream f(o.dump_optimized, std::ios::binary | std::ios::trunc);
    if (!(f << "# " << r.optimize << " (level " << r.optimize_level << ")\n"
            << m.graph.ToString()) ||
        !f.flush()) {
      return Failure{kRunError,
                     absl::StrCat("cannot write --dump-optimized file '", o.dump_optimized, "'")};
    }
  }
  return std::nullopt;
}

// Runs everything after the flags; the report is filled as far as it got.
std::optional<Failure> Run(const Options& o, RunReport& r) {
  r.model = o.model;
  r.device = o.context.ToString();
  r.opt = o.opt;
  r.runs = o.runs;
  r.warmup = o.warmup;
  r.rtol = o.rtol;
  r.atol = o.atol;
  if (absl::Status s = CheckDevice(o.context); !s.ok()) return Fail(kRunError, "", s);
  std::string set;
  if (!o.test_data.empty()) {
    absl::StatusOr<std::string> s = ResolveTestDataSet(o.test_data);
    if (!s.ok()) return Fail(kRunError, "--test-data: ", s.status());
    set = *s;
  }
  graph::OnnxModel m;
  if (auto f = Import(o, set, &m, r)) return f;
  if (auto f = Optimize(o, m, r)) return f;
  absl::flat_hash_map<std::string, Tensor> args;
  if (auto f = MakeArgs(o, m, set, &args, r)) return f;

  graph::BindOptions bo;
  bo.context = o.context;
  if (o.opt == 0) {  // Nothing of what Bind does to save memory or pushes.
    bo.plan_memory = false;
    bo.bulk_size = 1;
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<graph::Executor>> exec =
      graph::Executor::Bind(m.graph, args, {}, bo);
  r.bind_ms = MsSince(start);
  if (!exec.ok()) {
    return Fail(kRunError, absl::StrCat("cannot bind ", o.model, " on ", r.device, ": "),
                exec.status());
  }
  r.memory = (*exec)->memory();
  r.forward_nodes = (*exec)->num_forward_nodes();
  if (auto f = TimeRuns(o, **exec, r)) return f;
  return CheckOutputs(o, m, set, **exec, r);
}

int Main(int argc, char** argv) {
  CheckEnvironmentOrExit("rill-run");
  Args args(argc, argv);
  const std::vector<char*> positional = ParseToolFlags(args.argc(), args.argv(),
                                                       {.name = "rill-run",
                                                        .usage = kUsage,
                                                        .flag_files = {"tools/rill_run.cc"},
                                                        .other_modes_hint = "",
                                                        .allow_positional = true,
                                                        .usage_error_status = kUsageError});
  absl::StatusOr<Options> o = ReadOptions(positional);
  if (!o.ok()) {
    std::fprintf(stderr, "rill-run: %s\n", std::string(o.status().message()).c_str());
    // NotFound: a well-formed --device of a platform not in this build.
    return absl::IsNotFound(o.status()) ? kRunError : kUsageError;
  }
  RunReport report;
  if (std::optional<Failure> f = Run(*o, report)) {
    std::fprintf(stderr, "rill-run: %s\n", f->message.c_str());
    return f->status;
  }
  PrintRunReport(report, o->json == "-" ? stderr : stdout);
  if (!o->json.empty()) {
    const std::string doc = RunReportJson(report);
    if (o->json == "-") {
      std::fputs(doc.c_str(), stdout);
    } else {
      std::ofstream f(o->json, std::ios::binary | std::ios::trunc);
      if (!(f << doc) || !f.flush()) {
        std::fprintf(stderr, "rill-run: cannot write --json file '%s'\n", o->json.c_str());
        return kRunError;
      }
    }
  }
  return report.AllPassed() ? 0 : kRunError;
}

}  // namespace
}  // namespace rill::tools

int main(int argc, char** argv) { return rill::tools::Main(argc, argv); }
