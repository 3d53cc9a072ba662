#ifndef RILL_PLUGINS_DNN_ALGORITHM_SELECTOR_H_
#define RILL_PLUGINS_DNN_ALGORITHM_SELECTOR_H_

// Convolution algorithm selection as a service: which plugin of a chain and
// which of its algorithms runs a convolution shape fastest, measured once
// and remembered in memory and on disk.
//
// DnnSupport::DoConvolve* with ConvolutionArgs::algorithm = kBestAlgorithm
// asks AlgorithmSelector::Default(). For a shape met the first time it
// enumerates the algorithms of every plugin of the chain from the called
// plugin that supports the call (GetConvolutionAlgorithms), keeps the
// available ones (only deterministic ones in deterministic mode), and times
// each on zeroed scratch buffers on a stream of its own, on the calling
// thread, within a time budget; the fastest wins. The choice is keyed by
// (device, the chain's libraries and versions, direction, shape with
// layouts and type, deterministic mode) and written to the cache file,
// where the next process finds it. A pin (Pin) wins over both.
//
//   AlgorithmSelector::Options options = AlgorithmSelector::OptionsFromEnvironment();
//   options.cache_path = "/var/cache/app/dnn-algorithms.tsv";
//   AlgorithmSelector::Default().SetOptions(options);
//   ConvolutionArgs conv{shape, x, w, y, kBestAlgorithm};
//   RILL_RETURN_IF_ERROR(executor->AsDnn()->DoConvolve(stream, conv));
//
// Environment (read by OptionsFromEnvironment, hence by Default()):
//   RILL_DNN_CACHE=<path>          the cache file (none: memory only);
//   RILL_DNN_TUNE_BUDGET_MS=<ms>   time budget per shape (default 2000);
//   RILL_DNN_DETERMINISTIC=1       deterministic algorithms only.
//
// The cache file is text, one choice per line after a format header. A file
// that does not parse is ignored whole, with a warning, and rewritten at
// the next tuning (so is a path that is not a regular file, or a file
// larger than the cap of base/untrusted_file.h); an entry naming a plugin or algorithm the chain no
// longer offers (available) is ignored with a warning and tuned again.
// Entries of other devices or library versions never match. Processes may
// share the file: each write merges what others wrote, under flock on
// "<path>.lock". A tuning that fails (a timing run's error) is warned about
// once and remembered; DoConvolve then runs the plugin's default algorithm.
//
// Thread-safe. Tunings are serialized (concurrent timings would disturb
// each other).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rill/base/mutex.h"
#include "rill/plugins/dnn/dnn.h"

namespace rill {

class StreamExecutor;

// Where a choice came from.
enum class ChoiceSource { kTuned, kMemory, kCacheFile, kPinned };
const char* ChoiceSourceName(ChoiceSource source);  // "tuned", "memory", "cache file", "pinned".

// The plugin and algorithm a convolution runs with.
struct AlgorithmChoice {
  std::string plugin;     // Registered name: "onednn", "xnnpack", "cudnn".
  int64_t algorithm = 0;  // The plugin's id (GetConvolutionAlgorithms).
  double seconds = 0;     // Measured per call; 0 when pinned.
  ChoiceSource source = ChoiceSource::kTuned;
  std::string ToString() const;  // "onednn algorithm 0 (0.412 ms, tuned)".
};

class AlgorithmSelector {
 public:
  struct Options {
    std::string cache_path;                    // Empty: memory only.
    absl::Duration budget = absl::Seconds(2);  // Timing per shape; at least one candidate is timed.
    bool deterministic = false;                // Only algorithms with `deterministic` set.
    int repetitions = 5;  // Timed runs per candidate (the fastest counts), after one warm-up.
  };
  // Defaults overridden by RILL_DNN_CACHE, RILL_DNN_TUNE_BUDGET_MS and
  // RILL_DNN_DETERMINISTIC; a malformed value is ignored with a warning.
  static Options OptionsFromEnvironment();

  explicit AlgorithmSelector(Options options);
  // The process's selector, with OptionsFromEnvironment(); never destroyed.
  static AlgorithmSelector& Default();

  Options options() const;
  // Changes the options; choices in memory are kept, the cache file is read
  // again on next use when the path changed.
  void SetOptions(Options options);

  // The choice for a `kind` convolution of `shape` by the chain from
  // `first` on `executor` (the executor `first` serves). NotFound when no
  // plugin of the chain supports it or offers an available (deterministic,
  // in that mode) algorithm; the error of a failed timing run.
  absl::StatusOr<AlgorithmChoice> Select(StreamExecutor* executor, DnnSupport* first,
                                         ConvolutionKind kind, const ConvolutionShape& shape);

  // Pins plugin `plugin`'s `algorithm` for `kind` and `shape` on every
  // device and chain: Select returns it without timing (when the chain has
  // that plugin; else Select fails with NotFound naming the pin).
  void Pin(ConvolutionKind kind, const ConvolutionShape& shape, std::string plugin,
           int64_t algorithm);
  void Unpin(ConvolutionKind kind, const ConvolutionShape& shape);
  // Forgets the choices and failed tunings in memory (not the pins, not the file).
  void ClearMemory();

  struct Counts {
    int64_t tuned = 0, memory_hits = 0, file_hits = 0, pinned = 0;
    int64_t candidates_timed = 0;      // Over all tunings.
    int64_t file_entries_ignored = 0;  // Corrupt files' lines and stale entries.
  };
  Counts counts() const;

 private:
  struct Entry {
    std::string plugin;
    int64_t algorithm = 0;
    double seconds = 0;
  };
  // The entries of the cache file at `path` (none when it does not exist);
  // DataLoss saying why when it does not parse. The file is untrusted
  // (base/untrusted_file.h): InvalidArgument when it is not a regular file,
  // ResourceExhausted when it or its entries pass the allocation cap.
  // `lines` counts its lines.
  static absl::Status ReadFile(const std::string& path,
                               absl::flat_hash_map<std::string, Entry>* entries, int64_t* lines);
  // Reads the cache file when it is not loaded yet.
  void LoadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SaveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<AlgorithmChoice> Tune(StreamExecutor* executor,
                                       const std::vector<DnnSupport*>& chain, ConvolutionKind kind,
                                       const ConvolutionShape& shape, bool deterministic,
                                       absl::Duration budget, int repetitions);

  Mutex tune_mu_;  // Held while timing; taken before mu_.
  mutable Mutex mu_;
  Options options_ ABSL_GUARDED_BY(mu_);
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, Entry> memory_ ABSL_GUARDED_BY(mu_);  // Tuned this process.
  absl::flat_hash_map<std::string, Entry> file_ ABSL_GUARDED_BY(mu_);    // Read from the file.
  absl::flat_hash_map<std::string, Entry> pins_
      ABSL_GUARDED_BY(mu_);  // Keyed by direction and shape.
  absl::flat_hash_map<std::string, absl::Status> failed_
      ABSL_GUARDED_BY(mu_);  // Tunings that failed.
  Counts counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_PLUGINS_DNN_ALGORITHM_SELECTOR_H_
