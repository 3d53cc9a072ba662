#ifndef RILL_TOOLS_JSON_WRITER_H_
#define RILL_TOOLS_JSON_WRITER_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace rill::tools {

// Writes one JSON document into a string, indented, with the commas and
// string escapes taken care of. The caller nests Begin/End calls correctly;
// Key() precedes each member of an object.
//
//   JsonWriter j;
//   j.BeginObject(); j.Key("devices"); j.Int(2); j.Key("name"); j.String("host"); j.EndObject();
//   std::fputs(j.str().c_str(), stdout);
//
// Thread-compatible.
class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key) {
    Separate();
    Quote(key);
    out_ += ": ";
    after_key_ = true;
  }
  void String(std::string_view value) {
    Separate();
    Quote(value);
  }
  void Int(int64_t value) {
    Separate();
    out_ += std::to_string(value);
  }
  // Nine significant digits; null for NaN and infinities, which JSON cannot
  // hold.
  void Double(double value) {
    Separate();
    if (!std::isfinite(value)) {
      out_ += "null";
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", value);
    out_ += buf;
  }
  void Bool(bool value) {
    Separate();
    out_ += value ? "true" : "false";
  }
  void Null() {
    Separate();
    out_ += "null";
  }
  // Key and value in one call.
  void Member(std::string_view key, std::string_view value) {
    Key(key);
    String(value);
  }
  void Member(std::string_view key, const char* value) {
    Key(key);
    String(value);
  }
  void Member(std::string_view key, int64_t value) {
    Key(key);
    Int(value);
  }
  void Member(std::string_view key, int value) {
    Key(key);
    Int(value);
  }
  void Member(std::string_view key, bool value) {
    Key(key);
    Bool(value);
  }
  void Member(std::string_view key, double value) {
    Key(key);
    Double(value);
  }

  // The document, with a final newline once everything is closed.
  std::string str() const { return out_ + "\n"; }

 private:
  void Open(char c) {
    Separate();
    out_ += c;
    first_.push_back(true);
  }
  void Close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) Newline();
    out_ += c;
  }
  // Before a value or key: a comma unless first, and a new indented line
  // unless the value follows its key.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    Newline();
  }
  void Newline() {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }
  void Quote(std::string_view s) {
    out_ += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\t':
          out_ += "\\t";
          break;
        case '\r':
          out_ += "\\r";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += static_cast<char>(c);
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;  // Per open container: nothing written in it yet.
  bool after_key_ = false;
};

}  // namespace rill::tools

#endif  // RILL_TOOLS_JSON_WRITER_H_
