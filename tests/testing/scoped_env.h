#ifndef RILL_TESTS_TESTING_SCOPED_ENV_H_
#define RILL_TESTS_TESTING_SCOPED_ENV_H_

#include <cstdlib>
#include <optional>
#include <string>

namespace rill::testing {

// Sets (or, with nullptr, unsets) an environment variable for its scope and
// restores the old value after. Not thread-safe: the environment is global.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace rill::testing

#endif  // RILL_TESTS_TESTING_SCOPED_ENV_H_
