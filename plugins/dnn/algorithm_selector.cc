#include "rill/plugins/dnn/algorithm_selector.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/base/untrusted_file.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/stream/stream.h"

namespace rill {

namespace {

constexpr char kFileHeader[] = "rill-dnn-algorithm-cache 1";

std::string ShapeKey(ConvolutionKind kind, const ConvolutionShape& shape) {
  return absl::StrCat(ConvolutionKindName(kind), " ", shape.ToString());
}

// Tabs and line ends would break the file's format: spaces instead.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string DeviceKey(StreamExecutor* executor) {
  const DeviceDescription& d = executor->GetDeviceDescription();
  return OneLine(absl::StrCat(executor->platform()->Name(), " ", d.name, " ", d.vendor, " ",
                              d.compute_units, " units"));
}

std::string ChainKey(const std::vector<DnnSupport*>& chain) {
  return OneLine(absl::StrJoin(chain, ", ", [](std::string* out, DnnSupport* p) {
    absl::StrAppend(out, p->Name(), " ", p->Version());
  }));
}

absl::Status RunConvolution(DnnSupport* dnn, Stream* stream, ConvolutionKind kind,
                            const ConvolutionArgs& args) {
  switch (kind) {
    case ConvolutionKind::kForward:
      return dnn->DoConvolve(stream, args);
    case ConvolutionKind::kBackwardData:
      return dnn->DoConvolveBackwardData(stream, args);
    case ConvolutionKind::kBackwardFilter:
      return dnn->DoConvolveBackwardFilter(stream, args);
  }
  return absl::InvalidArgumentError("unknown convolution kind");
}

// The chain from `first`, keeping the plugins that support `op`.
std::vector<DnnSupport*> SupportingChain(DnnSupport* first, const DnnOperation& op) {
  std::vector<DnnSupport*> chain;
  for (PluginInterface* p = first; p != nullptr; p = p->fallback()) {
    auto* dnn = static_cast<DnnSupport*>(p);
    if (dnn->Supports(op).ok()) chain.push_back(dnn);
  }
  return chain;
}

DnnSupport* Find(const std::vector<DnnSupport*>& chain, std::string_view name) {
  for (DnnSupport* p : chain) {
    if (p->Name() == name) return p;
  }
  return nullptr;
}

// Whether `plugin` offers `algorithm` for the shape now (available, and
// deterministic when asked).
bool Offers(DnnSupport* plugin, ConvolutionKind kind, const ConvolutionShape& shape,
            int64_t algorithm, bool deterministic) {
  absl::StatusOr<std::vector<ConvolutionAlgorithm>> algorithms =
      plugin->GetConvolutionAlgorithms(kind, shape);
  if (!algorithms.ok()) return false;
  for (const ConvolutionAlgorithm& a : *algorithms) {
    if (a.id == algorithm) return a.available && (a.deterministic || !deterministic);
  }
  return false;
}

}  // namespace

const char* ChoiceSourceName(ChoiceSource source) {
  switch (source) {
    case ChoiceSource::kTuned:
      return "tuned";
    case ChoiceSource::kMemory:
      return "memory";
    case ChoiceSource::kCacheFile:
      return "cache file";
    case ChoiceSource::kPinned:
      return "pinned";
  }
  return "?";
}

std::string AlgorithmChoice::ToString() const {
  return absl::StrFormat("%s algorithm %d (%.3f ms, %s)", plugin, algorithm, seconds * 1e3,
                         ChoiceSourceName(source));
}

AlgorithmSelector::Options AlgorithmSelector::OptionsFromEnvironment() {
  Options options;
  if (const char* path = std::getenv("RILL_DNN_CACHE"); path != nullptr) options.cache_path = path;
  if (const char* budget = std::getenv("RILL_DNN_TUNE_BUDGET_MS");
      budget != nullptr && *budget != '\0') {
    int64_t ms = 0;
    if (absl::SimpleAtoi(budget, &ms) && ms >= 0) {
      options.budget = absl::Milliseconds(ms);
    } else {
      RILL_LOG(WARNING) << "RILL_DNN_TUNE_BUDGET_MS=" << budget
                        << " is not a count of milliseconds; using "
                        << absl::FormatDuration(options.budget);
    }
  }
  if (const char* det = std::getenv("RILL_DNN_DETERMINISTIC"); det != nullptr && *det != '\0') {
    const std::string value = det;
    if (value == "1" || value == "0") {
      options.deterministic = value == "1";
    } else {
      RILL_LOG(WARNING) << "RILL_DNN_DETERMINISTIC=" << value << " is not 0 or 1; ignored";
    }
  }
  return options;
}

AlgorithmSelector::AlgorithmSelector(Options options) : options_(std::move(options)) {}

AlgorithmSelector& AlgorithmSelector::Default() {
  static AlgorithmSelector* selector =
      new AlgorithmSelector(OptionsFromEnvironment());  // Never destroyed.
  return *selector;
}

AlgorithmSelector::Options AlgorithmSelector::options() const {
  MutexLock lock(&mu_);
  return options_;
}

void AlgorithmSelector::SetOptions(Options options) {
  MutexLock lock(&mu_);
  if (options.cache_path != options_.cache_path) {
    loaded_ = false;
    file_.clear();
  }
  options_ = std::move(options);
}

void AlgorithmSelector::Pin(ConvolutionKind kind, const ConvolutionShape& shape, std::string plugin,
                            int64_t algorithm) {
  MutexLock lock(&mu_);
  pins_[ShapeKey(kind, shape)] = Entry{std::move(plugin), algorithm, 0};
}

void AlgorithmSelector::Unpin(ConvolutionKind kind, const ConvolutionShape& shape) {
  MutexLock lock(&mu_);
  pins_.erase(ShapeKey(kind, shape));
}

void AlgorithmSelector::ClearMemory() {
  MutexLock lock(&mu_);
  memory_.clear();
  failed_.clear();
}

AlgorithmSelector::Counts AlgorithmSelector::counts() const {
  MutexLock lock(&mu_);
  return counts_;
}

absl::Status AlgorithmSelector::ReadFile(const std::string& path,
                                         absl::flat_hash_map<std::string, Entry>* entries,
                                         int64_t* lines) {
  entries->clear();
  *lines = 0;
  // An untrusted file: a directory, a device or a FIFO is refused without
  // reading (or blocking), and a file longer than the cap is not read.
  absl::StatusOr<std::string> text =
      ReadUntrustedFile("DNN algorithm cache", path, /*allow_empty=*/true);
  if (!text.ok()) {
    if (text.status().code() == absl::StatusCode::kNotFound)
      return absl::OkStatus();  // No file yet.
    *lines = 1;
    return text.status();
  }
  // What the entries take besides their text, counted against the cap too.
  constexpr uint64_t kEntryOverhead = sizeof(Entry) + 64;
  RILL_ASSIGN_OR_RETURN(FileBudget budget, FileBudget::Create("DNN algorithm cache", path));
  RILL_RETURN_IF_ERROR(budget.Take("its text", text->size()));
  std::vector<absl::string_view> all = absl::StrSplit(AsAbsl(*text), '\n');
  auto strip = [](absl::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  };
  if (all.size() < 2 || strip(all[0]) != kFileHeader) {  // A header ends with a line end.
    *lines = 1;
    return absl::DataLossError(absl::StrCat("its first line is not \"", kFileHeader,
                                            "\" (another format or a damaged file)"));
  }
  for (size_t i = 1; i < all.size(); ++i) {
    const absl::string_view line = strip(all[i]);
    if (line.empty()) continue;
    ++*lines;
    std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
    Entry entry;
    if (fields.size() != 4 || fields[0].empty() || fields[1].empty() ||
        !absl::SimpleAtoi(fields[2], &entry.algorithm) ||
        !absl::SimpleAtod(fields[3], &entry.seconds) || !(entry.seconds >= 0) ||
        !std::isfinite(entry.seconds)) {
      entries->clear();
      return absl::DataLossError(
          absl::StrCat("line ", i + 1,
                       " is malformed (want key, plugin, algorithm id, seconds "
                       "separated by tabs)"));
    }
    if (absl::Status taken =
            budget.Take("its entries", fields[0].size() + fields[1].size() + kEntryOverhead);
        !taken.ok()) {
      entries->clear();
      return taken;
    }
    entry.plugin = std::string(fields[1]);
    (*entries)[std::string(fields[0])] = std::move(entry);
  }
  return absl::OkStatus();
}

void AlgorithmSelector::LoadLocked() {
  if (loaded_) return;
  loaded_ = true;
  file_.clear();
  if (options_.cache_path.empty()) return;
  int64_t lines = 0;
  if (absl::Status read = ReadFile(options_.cache_path, &file_, &lines); !read.ok()) {
    RILL_LOG(WARNING) << "DNN algorithm cache " << options_.cache_path
                      << " ignored: " << read.message() << "; it is rewritten at the next tuning";
    counts_.file_entries_ignored += std::max<int64_t>(lines, 1);
  }
}

void AlgorithmSelector::SaveLocked() {
  if (options_.cache_path.empty()) return;
  // Other processes may share the file: under an exclusive lock, take in
  // what they wrote since it was read, then replace it whole.
  const std::string lock_path = absl::StrCat(options_.cache_path, ".lock");
  const int lock_fd = open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock_fd >= 0) flock(lock_fd, LOCK_EX);
  absl::Cleanup unlock = [lock_fd] {
    if (lock_fd >= 0) close(lock_fd);  // Releases the lock.
  };
  absl::flat_hash_map<std::string, Entry> theirs;
  int64_t lines = 0;
  if (ReadFile(options_.cache_path, &theirs, &lines).ok()) {
    for (auto& [key, entry] : theirs) file_.try_emplace(key, std::move(entry));
  }
  const std::string temp = absl::StrCat(options_.cache_path, ".tmp.", getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << kFileHeader << "\n";
    for (const auto& [key, e] : file_) {
      out << key << '\t' << e.plugin << '\t' << e.algorithm << '\t'
          << absl::StrFormat("%.9g", e.seconds) << "\n";
    }
    if (!out.good()) {
      RILL_LOG(WARNING) << "DNN algorithm cache " << options_.cache_path << ": cannot write "
                        << temp << "; the choice stays in memory only";
      std::remove(temp.c_str());
      return;
    }
  }
  if (std::rename(temp.c_str(), options_.cache_path.c_str()) != 0) {
    RILL_LOG(WARNING) << "DNN algorithm cache: cannot rename " << temp << " to "
                      << options_.cache_path;
    std::remove(temp.c_str());
  }
}

absl::StatusOr<AlgorithmChoice> AlgorithmSelector::Select(StreamExecutor* executor,
                                                          DnnSupport* first, ConvolutionKind kind,
                                                          const ConvolutionShape& shape) {
  if (executor == nullptr || first == nullptr) {
    return absl::InvalidArgumentError(
        "AlgorithmSelector::Select: executor and plugin must not be null");
  }
  RILL_RETURN_IF_ERROR(CheckConvolutionShape(shape));
  const std::vector<DnnSupport*> chain = SupportingChain(first, DnnOperation::Of(shape, kind));
  if (chain.empty()) {
    return absl::UnimplementedError(absl::StrCat("no DNN plugin of the chain from \"",
                                                 first->Name(), "\" supports ",
                                                 DnnOperation::Of(shape, kind).ToString()));
  }
  const std::string shape_key = ShapeKey(kind, shape);
  Options options;
  {
    MutexLock lock(&mu_);
    options = options_;
    if (auto pin = pins_.find(shape_key); pin != pins_.end()) {
      if (Find(chain, pin->second.plugin) == nullptr) {
        return absl::NotFoundError(absl::StrCat("the pinned plugin \"", pin->second.plugin,
                                                "\" for ", shape_key, " is not in the chain (",
                                                ChainKey(chain), ")"));
      }
      ++counts_.pinned;
      return AlgorithmChoice{pin->second.plugin, pin->second.algorithm, 0, ChoiceSource::kPinned};
    }
  }
  const std::string key = absl::StrCat(DeviceKey(executor), " | ", ChainKey(chain), " | ",
                                       shape_key, options.deterministic ? " | deterministic" : "");
  // Called with mu_ held.
  auto lookup = [&](ChoiceSource* source) -> std::optional<Entry> {
    if (auto it = memory_.find(key); it != memory_.end()) {
      *source = ChoiceSource::kMemory;
      return it->second;
    }
    LoadLocked();
    if (auto it = file_.find(key); it != file_.end()) {
      *source = ChoiceSource::kCacheFile;
      return it->second;
    }
    return std::nullopt;
  };
  for (int attempt = 0;; ++attempt) {
    ChoiceSource source = ChoiceSource::kTuned;
    std::optional<Entry> found;
    {
      MutexLock lock(&mu_);
      if (auto failed = failed_.find(key); failed != failed_.end()) return failed->second;
      found = lookup(&source);
    }
    if (!found.has_value()) break;
    if (source == ChoiceSource::kMemory) {
      MutexLock lock(&mu_);
      ++counts_.memory_hits;
      return AlgorithmChoice{found->plugin, found->algorithm, found->seconds, source};
    }
    // From the file: trusted only if the chain still offers it (asked
    // outside the lock: the plugin may build primitives to answer).
    DnnSupport* plugin = Find(chain, found->plugin);
    const bool offered =
        plugin != nullptr && Offers(plugin, kind, shape, found->algorithm, options.deterministic);
    MutexLock lock(&mu_);
    if (offered) {
      ++counts_.file_hits;
      memory_[key] = *found;
      return AlgorithmChoice{found->plugin, found->algorithm, found->seconds, source};
    }
    RILL_LOG(WARNING) << "DNN algorithm cache " << options.cache_path << ": the entry for "
                      << shape_key << " names " << found->plugin << " algorithm "
                      << found->algorithm << ", which the chain does not offer now; tuning again";
    ++counts_.file_entries_ignored;
    file_.erase(key);
    if (attempt > 0) break;
  }

  MutexLock tuning(&tune_mu_);
  {
    MutexLock lock(&mu_);
    if (auto it = memory_.find(key); it != memory_.end()) {  // Tuned by another thread meanwhile.
      ++counts_.memory_hits;
      return AlgorithmChoice{it->second.plugin, it->second.algorithm, it->second.seconds,
                             ChoiceSource::kMemory};
    }
  }
  absl::StatusOr<AlgorithmChoice> tuned = Tune(executor, chain, kind, shape, options.deterministic,
                                               options.budget, std::max(1, options.repetitions));
  if (!tuned.ok()) {
    // Remembered, so that later calls neither time again nor warn again.
    RILL_LOG(WARNING) << "tuning " << shape_key << " failed: " << tuned.status().ToString()
                      << (absl::IsNotFound(tuned.status())
                              ? ""
                              : "; calls run the plugin's default algorithm");
    MutexLock lock(&mu_);
    failed_[key] = tuned.status();
    return tuned.status();
  }
  const AlgorithmChoice choice = *tuned;
  MutexLock lock(&mu_);
  ++counts_.tuned;
  const Entry entry{choice.plugin, choice.algorithm, choice.seconds};
  memory_[key] = entry;
  LoadLocked();
  file_[key] = entry;
  SaveLocked();
  return choice;
}

absl::StatusOr<AlgorithmChoice> AlgorithmSelector::Tune(
    StreamExecutor* executor, const std::vector<DnnSupport*>& chain, ConvolutionKind kind,
    const ConvolutionShape& shape, bool deterministic, absl::Duration budget, int repetitions) {
  struct Candidate {
    DnnSupport* plugin;
    ConvolutionAlgorithm algorithm;
  };
  std::vector<Candidate> candidates;
  for (DnnSupport* p : chain) {
    RILL_ASSIGN_OR_RETURN(std::vector<ConvolutionAlgorithm> algorithms,
                          p->GetConvolutionAlgorithms(kind, shape));
    for (ConvolutionAlgorithm& a : algorithms) {
      if (a.available && (a.deterministic || !deterministic))
        candidates.push_back({p, std::move(a)});
    }
  }
  if (candidates.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no ", deterministic ? "deterministic " : "", "available ", ConvolutionKindName(kind),
        " convolution algorithm for ", shape.ToString(), " in the chain ", ChainKey(chain)));
  }
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, executor->CreateStream());
  DeviceMemoryBase input, filter, output;
  absl::Cleanup free_buffers = [&] {
    for (DeviceMemoryBase* m : {&input, &filter, &output}) {
      if (!m->is_null()) executor->Deallocate(m).IgnoreError();
    }
  };
  RILL_ASSIGN_OR_RETURN(input, executor->Allocate(shape.input.Bytes()));
  RILL_ASSIGN_OR_RETURN(filter, executor->Allocate(shape.filter.Bytes()));
  RILL_ASSIGN_OR_RETURN(output, executor->Allocate(shape.output.Bytes()));
  stream->ThenMemZero(&input, input.size())
      .ThenMemZero(&filter, filter.size())
      .ThenMemZero(&output, output.size());
  RILL_RETURN_IF_ERROR(stream->BlockHostUntilDone());

  const absl::Time start = absl::Now();
  std::optional<AlgorithmChoice> best;
  absl::Status last_error;
  size_t timed = 0;
  for (const Candidate& c : candidates) {
    if (best.has_value() && absl::Now() - start > budget) break;
    ConvolutionArgs args{shape, input, filter, output, c.algorithm.id};
    absl::Status status = RunConvolution(c.plugin, stream.get(), kind, args);  // Warm-up.
    if (status.ok()) status = stream->BlockHostUntilDone();
    double seconds = std::numeric_limits<double>::infinity();
    for (int r = 0; status.ok() && r < repetitions && (r == 0 || absl::Now() - start <= budget);
         ++r) {
      const absl::Time t0 = absl::Now();
      status = RunConvolution(c.plugin, stream.get(), kind, args);
      if (status.ok()) status = stream->BlockHostUntilDone();
      seconds = std::min(seconds, absl::ToDoubleSeconds(absl::Now() - t0));
    }
    if (!status.ok()) {
      RILL_LOG(WARNING) << "timing " << c.plugin->Name() << " algorithm " << c.algorithm.name
                        << " for " << shape.ToString() << " failed: " << status.ToString()
                        << "; skipped";
      last_error = status;
      if (!stream->ok()) {
        RILL_ASSIGN_OR_RETURN(stream, executor->CreateStream());
      }
      continue;
    }
    ++timed;
    if (!best.has_value() || seconds < best->seconds) {
      best = AlgorithmChoice{c.plugin->Name(), c.algorithm.id, seconds, ChoiceSource::kTuned};
    }
  }
  {
    MutexLock lock(&mu_);
    counts_.candidates_timed += static_cast<int64_t>(timed);
  }
  if (!best.has_value()) return last_error;
  if (timed < candidates.size()) {
    RILL_LOG(INFO) << "tuning " << ShapeKey(kind, shape) << ": the budget of "
                   << absl::FormatDuration(budget) << " ended after " << timed << " of "
                   << candidates.size() << " candidates";
  }
  RILL_LOG(INFO) << "tuned " << ShapeKey(kind, shape) << ": " << best->ToString();
  return *best;
}

}  // namespace rill
