#ifndef RILL_PLUGINS_PLUGIN_H_
#define RILL_PLUGINS_PLUGIN_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill {

// The kinds of library plugin an executor can carry.
enum class PluginKind { kBlas, kDnn, kRng, kFft, kCollectives };
inline constexpr PluginKind kAllPluginKinds[] = {PluginKind::kBlas, PluginKind::kDnn,
                                                 PluginKind::kRng, PluginKind::kFft,
                                                 PluginKind::kCollectives};

// "blas", "dnn", "rng", "fft", "collectives".
const char* PluginKindName(PluginKind kind);
// OK for a declared PluginKind; InvalidArgument naming the value for any
// other (an integer cast to the enum).
absl::Status CheckPluginKind(PluginKind kind);

// Element types of library calls.
enum class DataType { kFloat, kDouble };
const char* DataTypeName(DataType type);
inline int SizeOf(DataType type) { return type == DataType::kFloat ? 4 : 8; }
template <typename T>
constexpr DataType DataTypeOf();
template <>
constexpr DataType DataTypeOf<float>() {
  return DataType::kFloat;
}
template <>
constexpr DataType DataTypeOf<double>() {
  return DataType::kDouble;
}

class PluginInterface;
namespace internal {
// Counts a call `from` handed on to `to` (plugins/plugin_chain.h) and logs
// it at INFO (RILL_LOG_LEVEL=0).
void RecordHandOff(PluginInterface& from, PluginInterface& to, PluginKind kind,
                   const std::string& operation, const absl::Status& why);
}  // namespace internal

// The base of every plugin interface (BlasSupport, RngSupport, ...). A
// plugin instance serves one executor, is created by the PluginRegistry on
// first use and lives as long as the executor.
class PluginInterface {
 public:
  virtual ~PluginInterface() = default;
  // The name it is registered under ("openblas", "blis", "philox", ...).
  virtual std::string Name() const = 0;
  // The library behind it and its version, for people (rill-info): "oneDNN
  // 2.6.3 (cpu runtime OpenMP)", "cuDNN 9.19.0"; "" when unknown.
  virtual std::string Version() const { return ""; }

  // The plugin that runs the calls this one does not support (each kind's
  // interface has a Supports() query): the next in its executor's chain
  // (StreamExecutor::SetPlugin(kind, "xnnpack,onednn"), RILL_DNN=...), null
  // at the chain's end. Set by the executor when it builds the chain.
  PluginInterface* fallback() const { return fallback_.load(std::memory_order_acquire); }
  // Calls this plugin handed on to a later one, and calls it ran that an
  // earlier one handed on (plugins/plugin_chain.h counts them).
  uint64_t calls_handed_on() const { return handed_on_.load(std::memory_order_relaxed); }
  uint64_t calls_taken_over() const { return taken_over_.load(std::memory_order_relaxed); }

 private:
  friend class StreamExecutor;
  friend void internal::RecordHandOff(PluginInterface& from, PluginInterface& to, PluginKind kind,
                                      const std::string& operation, const absl::Status& why);

  std::atomic<PluginInterface*> fallback_{nullptr};
  std::atomic<uint64_t> handed_on_{0}, taken_over_{0};
};

}  // namespace rill

#endif  // RILL_PLUGINS_PLUGIN_H_
