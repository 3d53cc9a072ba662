#include "rill/ops/params.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "rill/base/status_macros.h"

namespace rill::ops {
namespace {

absl::Status Malformed(std::string_view text, const char* type) {
  return absl::InvalidArgumentError(absl::StrCat("'", AsAbsl(text), "' is not a valid ", type));
}

}  // namespace

absl::Status ParseParam(std::string_view text, int64_t* out) {
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(AsAbsl(text)), out))
    return Malformed(text, "int");
  return absl::OkStatus();
}
absl::Status ParseParam(std::string_view text, int* out) {
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(AsAbsl(text)), out))
    return Malformed(text, "int");
  return absl::OkStatus();
}
absl::Status ParseParam(std::string_view text, double* out) {
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(AsAbsl(text)), out))
    return Malformed(text, "float");
  return absl::OkStatus();
}
absl::Status ParseParam(std::string_view text, float* out) {
  if (!absl::SimpleAtof(absl::StripAsciiWhitespace(AsAbsl(text)), out))
    return Malformed(text, "float");
  return absl::OkStatus();
}
absl::Status ParseParam(std::string_view text, bool* out) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(AsAbsl(text)));
  if (t == "1" || t == "true") {
    *out = true;
  } else if (t == "0" || t == "false") {
    *out = false;
  } else {
    return Malformed(text, "bool (true, false, 1 or 0)");
  }
  return absl::OkStatus();
}
absl::Status ParseParam(std::string_view text, std::string* out) {
  *out = std::string(text);
  return absl::OkStatus();
}
absl::Status ParseParam(std::string_view text, std::vector<int64_t>* out) {
  absl::string_view t = absl::StripAsciiWhitespace(AsAbsl(text));
  if ((absl::ConsumePrefix(&t, "(") && !absl::ConsumeSuffix(&t, ")")) ||
      (absl::ConsumePrefix(&t, "[") && !absl::ConsumeSuffix(&t, "]"))) {
    return Malformed(text, "int tuple such as (1, 2)");
  }
  out->clear();
  if (absl::StripAsciiWhitespace(t).empty()) return absl::OkStatus();
  const std::vector<absl::string_view> parts = absl::StrSplit(t, ',');
  for (size_t i = 0; i < parts.size(); ++i) {
    const absl::string_view part = absl::StripAsciiWhitespace(parts[i]);
    // Only a trailing comma after an element may leave a part empty: "(1,)".
    if (part.empty() && (i + 1 < parts.size() || i == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", AsAbsl(text), "' is not a valid int tuple: element ", i + 1, " is empty"));
    }
    if (part.empty()) break;
    int64_t v;
    if (!absl::SimpleAtoi(part, &v)) return Malformed(text, "int tuple such as (1, 2)");
    out->push_back(v);
  }
  return absl::OkStatus();
}
std::string FormatIntTuple(absl::Span<const int64_t> v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), v.size() == 1 ? ",)" : ")");
}

absl::Status ParseParam(std::string_view text, DType* out) {
  RILL_ASSIGN_OR_RETURN(*out, ParseDType(text));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const void>> ParamSchema::Parse(std::string_view op,
                                                               const Attrs& attrs) const {
  if (!make_) {
    if (!attrs.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", AsAbsl(op), "' takes no attributes, got '", attrs[0].first, "'"));
    }
    return std::shared_ptr<const void>();
  }
  std::shared_ptr<void> params = make_();
  // Per field, the attribute that set it (or null): a key given twice is
  // an error, not the last one winning.
  std::vector<const std::string*> seen(fields_.size(), nullptr);
  for (const auto& [key, value] : attrs) {
    size_t i = 0;
    while (i < fields_.size() && fields_[i].name != key) ++i;
    if (i == fields_.size()) {
      std::vector<std::string> names;
      for (const FieldInfo& f : fields_) names.push_back(f.name);
      return absl::InvalidArgumentError(
          absl::StrCat("op '", AsAbsl(op), "' has no attribute '", key,
                       "'; its attributes: ", absl::StrJoin(names, ", ")));
    }
    if (seen[i] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("op '", AsAbsl(op), "' attribute '", key,
                                                     "' is given twice: '", *seen[i], "' and '",
                                                     value, "'"));
    }
    absl::Status s = fields_[i].parse(params.get(), value);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("op '", AsAbsl(op), "' attribute '", key,
                                                     "' expects ", fields_[i].type, ": ",
                                                     s.message()));
    }
    seen[i] = &value;
  }
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].required && seen[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("op '", AsAbsl(op), "' needs attribute '",
                                                     fields_[i].name, "' (", fields_[i].type, ")"));
    }
  }
  return std::shared_ptr<const void>(std::move(params));
}

}  // namespace rill::ops
