// rill:internal
#ifndef RILL_BASE_UNTRUSTED_FILE_H_
#define RILL_BASE_UNTRUSTED_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill {

// The untrusted-file policy. A file a user hands Rill (an ONNX model, IDX
// data, a checkpoint, the DNN algorithm cache) may be hostile: every reader
// goes through these helpers, so that
//   - a size the file claims is checked against the file's real length before
//     anything is allocated for it (CheckFitsInFile);
//   - what one file may make Rill allocate is capped, also for compressed
//     data that inflates past its length (FileBudget); past the cap the read
//     fails with ResourceExhausted naming the cap and how to raise it;
//   - a path that is not a regular file (a directory, /dev/zero, a pipe) is
//     refused before reading (ReadUntrustedFile);
//   - a malformed file is InvalidArgument naming the file and the defect.
//
// The cap defaults to kDefaultFileAllocationCap; the environment variable
// RILL_MAX_FILE_BYTES (a byte count, optionally with a K, M, G or T suffix
// of powers of 1024) or SetFileAllocationCap changes it.

inline constexpr uint64_t kDefaultFileAllocationCap = uint64_t{4} << 30;  // 4 GiB

// The cap on bytes one file may make Rill allocate. InvalidArgument when
// RILL_MAX_FILE_BYTES is set to something that is not a size.
absl::StatusOr<uint64_t> FileAllocationCap();

// Overrides the cap for this process (tests, tools that read big files);
// 0 goes back to the environment or the default. Thread-safe.
void SetFileAllocationCap(uint64_t bytes);

// Parses a RILL_MAX_FILE_BYTES value: "1048576", "512M", "8G".
// InvalidArgument naming the variable and the accepted forms.
absl::StatusOr<uint64_t> ParseFileAllocationCap(std::string_view text);

// InvalidArgument "<kind> '<file>': <what> claims <count> x <elem_size>
// bytes, but only <available> bytes of the file are left" when the claimed
// payload (overflow-checked) does not fit in what the file still holds.
absl::Status CheckFitsInFile(std::string_view kind, std::string_view file, std::string_view what,
                             uint64_t count, uint64_t elem_size, uint64_t available);

// Counts what one file makes Rill allocate against the cap.
// Thread-compatible: one reader owns it.
//
//   RILL_ASSIGN_OR_RETURN(FileBudget budget, FileBudget::Create("IDX file", path));
//   RILL_RETURN_IF_ERROR(budget.Take("the image payload", bytes));
class FileBudget {
 public:
  // A budget of FileAllocationCap() bytes.
  static absl::StatusOr<FileBudget> Create(std::string_view kind, std::string_view file);
  // A budget of `cap` bytes.
  FileBudget(std::string_view kind, std::string_view file, uint64_t cap);

  // Records `bytes` more; ResourceExhausted "<kind> '<file>' would make
  // Rill allocate <total> bytes (<what>), past the cap of <cap> bytes one
  // file may make it allocate (set RILL_MAX_FILE_BYTES or call
  // rill::SetFileAllocationCap to raise it)" when the total would pass it.
  absl::Status Take(std::string_view what, uint64_t bytes);

  uint64_t used() const { return used_; }
  uint64_t cap() const { return cap_; }

 private:
  std::string kind_;
  std::string file_;
  uint64_t cap_;
  uint64_t used_ = 0;
};

// Reads the whole of a regular file, for formats parsed from memory.
//   NotFound / PermissionDenied: it cannot be opened (errno's reason);
//   InvalidArgument: a directory, a device, a pipe, or `allow_empty` false
//     and the file is empty ("<kind> '<file>' is empty");
//   ResourceExhausted: longer than the cap.
absl::StatusOr<std::string> ReadUntrustedFile(std::string_view kind, std::string_view path,
                                              bool allow_empty = false);

// The length of a regular file, with the same refusals as ReadUntrustedFile
// except for the cap; for readers that stream the file themselves.
absl::StatusOr<uint64_t> UntrustedFileSize(std::string_view kind, std::string_view path);

}  // namespace rill

#endif  // RILL_BASE_UNTRUSTED_FILE_H_
