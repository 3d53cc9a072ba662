#ifndef RILL_OPS_PARAMS_H_
#define RILL_OPS_PARAMS_H_

// Typed op parameters, parsed and validated from string attributes (as
// graphs and model files carry them).
//
//   struct ReduceParams { std::vector<int64_t> axes; bool keepdims = false; };
//   ParamSchema schema = ParamSchema::For<ReduceParams>()
//       .Field("axes", &ReduceParams::axes, "axes to reduce; empty: all")
//       .Field("keepdims", &ReduceParams::keepdims, "keep reduced axes as 1");
//   RILL_ASSIGN_OR_RETURN(auto p, schema.Parse("sum", {{"axes", "(0, 1)"}}));

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/tensor/dtype.h"

namespace rill::ops {

// String attributes, in order: {"axis", "1"}, {"keepdims", "true"}.
using Attrs = std::vector<std::pair<std::string, std::string>>;

// Parsers for each supported field type; InvalidArgument naming the
// expected type on a malformed value.
absl::Status ParseParam(std::string_view text, int64_t* out);
absl::Status ParseParam(std::string_view text, int* out);
absl::Status ParseParam(std::string_view text, double* out);
absl::Status ParseParam(std::string_view text, float* out);
absl::Status ParseParam(std::string_view text, bool* out);
absl::Status ParseParam(std::string_view text, std::string* out);
// "(1, 2)", "[1,2]", "1", "(1,)", "()"; an empty element ("(2,,3)", "(,)")
// is malformed.
absl::Status ParseParam(std::string_view text, std::vector<int64_t>* out);
absl::Status ParseParam(std::string_view text, DType* out);

// An int tuple as ParseParam reads it back: "(2, 3)", "(4,)", "()".
std::string FormatIntTuple(absl::Span<const int64_t> v);

template <typename T>
const char* ParamTypeName();
template <>
inline const char* ParamTypeName<int64_t>() {
  return "int";
}
template <>
inline const char* ParamTypeName<int>() {
  return "int";
}
template <>
inline const char* ParamTypeName<double>() {
  return "float";
}
template <>
inline const char* ParamTypeName<float>() {
  return "float";
}
template <>
inline const char* ParamTypeName<bool>() {
  return "bool";
}
template <>
inline const char* ParamTypeName<std::string>() {
  return "string";
}
template <>
inline const char* ParamTypeName<std::vector<int64_t>>() {
  return "int tuple";
}
template <>
inline const char* ParamTypeName<DType>() {
  return "dtype";
}

// The parameters of one op: a struct type and its named fields. A field is
// optional (the struct's default member value) unless declared Required.
// Copyable; thread-safe to use once built.
class ParamSchema {
 public:
  struct FieldInfo {
    std::string name;
    const char* type = "";
    std::string doc;
    bool required = false;
    std::function<absl::Status(void* params, std::string_view text)> parse;
  };

  ParamSchema() = default;
  template <typename P>
  static ParamSchema For() {
    ParamSchema s;
    s.make_ = [] { return std::shared_ptr<void>(std::make_shared<P>()); };
    return s;
  }
  template <typename P, typename F>
  ParamSchema& Field(std::string name, F P::*member, std::string doc = "", bool required = false) {
    FieldInfo f;
    f.name = std::move(name);
    f.type = ParamTypeName<F>();
    f.doc = std::move(doc);
    f.required = required;
    f.parse = [member](void* params, std::string_view text) {
      return ParseParam(text, &(static_cast<P*>(params)->*member));
    };
    fields_.push_back(std::move(f));
    return *this;
  }
  template <typename P, typename F>
  ParamSchema& Required(std::string name, F P::*member, std::string doc = "") {
    return Field(std::move(name), member, std::move(doc), true);
  }

  bool empty() const { return !make_; }
  const std::vector<FieldInfo>& fields() const { return fields_; }
  // The parameters of op `op` from `attrs`: InvalidArgument naming an
  // unknown attribute (and the known ones), a malformed value (and the
  // expected type), an attribute given twice (and both values) or a
  // missing required one. An op without parameters
  // accepts no attributes (null result).
  absl::StatusOr<std::shared_ptr<const void>> Parse(std::string_view op, const Attrs& attrs) const;

 private:
  std::function<std::shared_ptr<void>()> make_;
  std::vector<FieldInfo> fields_;
};

// Typed parameters handed straight to Invoke, skipping the string parse.
template <typename P>
std::shared_ptr<const void> MakeParams(P params) {
  return std::make_shared<const P>(std::move(params));
}

}  // namespace rill::ops

#endif  // RILL_OPS_PARAMS_H_
