#ifndef RILL_TESTS_TESTING_JSON_VALUE_H_
#define RILL_TESTS_TESTING_JSON_VALUE_H_

// A small strict JSON parser for tests that read what Rill writes (traces,
// rill-info --json): objects, arrays, strings with escapes, numbers, true,
// false, null. Parse returns nullopt on any syntax error.

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rill::testing {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  bool Has(const std::string& key) const { return type == Type::kObject && object.count(key) > 0; }
  // The member `key` (a null value when absent).
  const JsonValue& operator[](const std::string& key) const {
    static const JsonValue kNull;
    auto it = object.find(key);
    return it == object.end() ? kNull : it->second;
  }
};

class JsonParser {
 public:
  static std::optional<JsonValue> Parse(const std::string& text) {
    JsonParser p(text);
    JsonValue v;
    if (!p.Value(&v)) return std::nullopt;
    p.Space();
    if (p.i_ != p.s_.size()) return std::nullopt;
    return v;
  }

 private:
  explicit JsonParser(const std::string& s) : s_(s) {}
  void Space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (i_ >= s_.size()) return false;
      c = s_[i_++];
      switch (c) {
        case '"':
        case '\\':
        case '/':
          *out += c;
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          const long code = std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16);
          i_ += 4;
          *out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default:
          return false;
      }
    }
    return Eat('"');
  }
  bool Value(JsonValue* v) {
    Space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v->type = JsonValue::Type::kObject;
      if (Eat('}')) return true;
      do {
        std::string key;
        JsonValue member;
        Space();
        if (!String(&key) || !Eat(':') || !Value(&member)) return false;
        v->object[key] = std::move(member);
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++i_;
      v->type = JsonValue::Type::kArray;
      if (Eat(']')) return true;
      do {
        JsonValue item;
        if (!Value(&item)) return false;
        v->array.push_back(std::move(item));
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      v->type = JsonValue::Type::kString;
      return String(&v->string);
    }
    if (Literal("true")) {
      v->type = JsonValue::Type::kBool;
      v->boolean = true;
      return true;
    }
    if (Literal("false")) {
      v->type = JsonValue::Type::kBool;
      return true;
    }
    if (Literal("null")) return true;
    const char* start = s_.c_str() + i_;
    char* end = nullptr;
    v->number = std::strtod(start, &end);
    if (end == start) return false;
    i_ += static_cast<size_t>(end - start);
    v->type = JsonValue::Type::kNumber;
    return true;
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace rill::testing

#endif  // RILL_TESTS_TESTING_JSON_VALUE_H_
