#ifndef RILL_PLUGINS_PLUGIN_H_
#define RILL_PLUGINS_PLUGIN_H_

#include <string>

#include "absl/status/status.h"

namespace rill {

// The kinds of library plugin an executor can carry.
enum class PluginKind { kBlas, kDnn, kRng, kFft };
inline constexpr PluginKind kAllPluginKinds[] = {PluginKind::kBlas, PluginKind::kDnn,
                                                 PluginKind::kRng, PluginKind::kFft};

// "blas", "dnn", "rng", "fft".
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
constexpr DataType DataTypeOf<float>() { return DataType::kFloat; }
template <>
constexpr DataType DataTypeOf<double>() { return DataType::kDouble; }

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
};

}  // namespace rill

#endif  // RILL_PLUGINS_PLUGIN_H_
