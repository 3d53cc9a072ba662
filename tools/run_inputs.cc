#include "tools/run_inputs.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "rill/base/status_macros.h"
#include "rill/ops/shape/half.h"

namespace rill::tools {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadBytes(const std::string& path, const char* what) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is a directory"));
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", what, " '", path, "'"));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return absl::DataLossError(absl::StrCat("cannot read ", what, " '", path, "'"));
  return ss.str();
}

template <typename T>
void Append(std::string& bytes, T v) {
  bytes.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

}  // namespace

absl::StatusOr<graph::OnnxHostTensor> ReadTensorFile(const std::string& path) {
  RILL_ASSIGN_OR_RETURN(std::string bytes, ReadBytes(path, "tensor file"));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' does not parse as an ONNX TensorProto"));
  }
  absl::StatusOr<graph::OnnxHostTensor> t = graph::HostTensorFromProto(proto);
  if (!t.ok()) {
    return absl::Status(t.status().code(), absl::StrCat("'", path, "': ", t.status().message()));
  }
  return t;
}

absl::StatusOr<std::string> ResolveTestDataSet(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return absl::NotFoundError(absl::StrCat("test data directory '", dir, "' does not exist"));
  const fs::path d(dir);
  if (fs::exists(d / "input_0.pb", ec) || fs::exists(d / "output_0.pb", ec)) return d.string();
  std::vector<std::string> sets;
  for (const fs::directory_entry& e : fs::directory_iterator(d, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && absl::StartsWith(name, "test_data_set_")) sets.push_back(name);
  }
  if (sets.empty()) {
    return absl::NotFoundError(absl::StrCat("'", dir,
                                            "' holds neither input_0.pb/output_0.pb nor a "
                                            "test_data_set_* directory"));
  }
  std::sort(sets.begin(), sets.end());
  return (d / sets.front()).string();
}

std::vector<std::string> NumberedFiles(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> files;
  std::error_code ec;
  for (int i = 0;; ++i) {
    const fs::path p = fs::path(dir) / absl::StrCat(prefix, i, ".pb");
    if (!fs::exists(p, ec)) break;
    files.push_back(p.string());
  }
  return files;
}

graph::OnnxHostTensor RandomTensor(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  graph::OnnxHostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  const int64_t n = shape.NumElements();
  t.bytes.reserve(n * DTypeSize(dtype));
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kF32:
        Append(t.bytes, real(rng));
        break;
      case DType::kF64:
        Append(t.bytes, static_cast<double>(real(rng)));
        break;
      case DType::kF16:
        Append(t.bytes, ops::FloatToHalf(real(rng)));
        break;
      case DType::kI32:
        Append(t.bytes, static_cast<int32_t>(small(rng)));
        break;
      case DType::kI64:
        Append(t.bytes, static_cast<int64_t>(small(rng)));
        break;
      case DType::kU8:
        Append(t.bytes, static_cast<uint8_t>(small(rng)));
        break;
      case DType::kBool:
        Append(t.bytes, static_cast<uint8_t>(small(rng) & 1));
        break;
    }
  }
  return t;
}

absl::StatusOr<std::vector<std::string>> GraphInputNames(const std::string& model_path) {
  RILL_ASSIGN_OR_RETURN(std::string bytes, ReadBytes(model_path, "ONNX file"));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    return absl::InvalidArgumentError(absl::StrCat("'", model_path, "' does not parse"));
  absl::flat_hash_set<std::string> initializers;
  for (const onnx::TensorProto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto& v : model.graph().input()) {
    if (!initializers.contains(v.name())) names.push_back(v.name());
  }
  return names;
}

absl::StatusOr<DeclaredInput> ReadDeclaredInput(const std::string& model_path,
                                                const std::string& name, int64_t batch) {
  RILL_ASSIGN_OR_RETURN(std::string bytes, ReadBytes(model_path, "ONNX file"));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    return absl::InvalidArgumentError(absl::StrCat("'", model_path, "' does not parse"));
  for (const onnx::ValueInfoProto& v : model.graph().input()) {
    if (v.name() != name) continue;
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' has no declared shape: give it with --input"));
    }
    RILL_ASSIGN_OR_RETURN(DType dtype, graph::DTypeFromOnnx(v.type().tensor_type().elem_type()));
    std::vector<int64_t> shape;
    const auto& dims = v.type().tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) {
      if (dims[i].has_dim_value()) {
        shape.push_back(dims[i].dim_value());
      } else if (i == 0) {
        shape.push_back(batch > 0 ? batch : 1);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", name, "' has a symbolic axis ", i, " ('", dims[i].dim_param(),
                         "'): give the input with --input or --test-data"));
      }
    }
    return DeclaredInput{Shape(absl::MakeConstSpan(shape)), dtype};
  }
  return absl::NotFoundError(absl::StrCat("the model has no graph input '", name, "'"));
}

absl::StatusOr<graph::OnnxHostTensor> ToHostTensor(const Tensor& t) {
  graph::OnnxHostTensor h;
  h.dtype = t.dtype();
  h.shape = t.shape();
  h.bytes.resize(t.ByteSize());
  RILL_RETURN_IF_ERROR(t.ToHostBytes(h.bytes.data(), h.bytes.size()));
  return h;
}

OutputCheck CompareTensors(const graph::OnnxHostTensor& got, const graph::OnnxHostTensor& ref,
                           double rtol, double atol) {
  OutputCheck c;
  if (got.shape != ref.shape) {
    c.reason = absl::StrCat("shape ", got.shape.ToString(), ", reference ", ref.shape.ToString());
    return c;
  }
  if (got.dtype != ref.dtype) {
    c.reason = absl::StrCat("type ", DTypeName(got.dtype), ", reference ", DTypeName(ref.dtype));
    return c;
  }
  const std::vector<double> g = got.Doubles(), r = ref.Doubles();
  int64_t worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    if (std::isnan(r[i]) && std::isnan(g[i])) continue;
    if (std::isinf(r[i]) && g[i] == r[i]) continue;
    const double err = std::abs(g[i] - r[i]);
    const double bound = atol + rtol * std::abs(r[i]);
    if (std::isnan(err)) {
      c.max_abs = c.max_rel = err;
    } else {
      c.max_abs = std::max(c.max_abs, err);
      if (r[i] != 0) c.max_rel = std::max(c.max_rel, err / std::abs(r[i]));
    }
    if (!(err <= bound)) {
      ++c.mismatches;
      const double excess = std::isnan(err) ? INFINITY : err - bound;
      if (worst < 0 || excess > worst_excess) {
        worst = static_cast<int64_t>(i);
        worst_excess = excess;
      }
    }
  }
  c.pass = c.mismatches == 0;
  if (!c.pass) {
    c.reason = absl::StrCat(c.mismatches, " of ", r.size(), " elements differ; worst at ", worst,
                            ": got ", g[worst], ", reference ", r[worst]);
  }
  return c;
}

}  // namespace rill::tools
