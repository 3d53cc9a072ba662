#ifndef RILL_IO_IDX_READER_H_
#define RILL_IO_IDX_READER_H_

// Reading IDX files (the MNIST / Fashion-MNIST container, LeCun's format):
//
//   byte 0, 1   zero
//   byte 2      element type (0x08 unsigned byte, 0x09 signed byte,
//               0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64)
//   byte 3      number of dimensions, n
//   n x u32     the dimensions, big-endian
//   payload     the elements, row-major, nothing after them
//
// Only 0x08 is supported (every MNIST-family file); 1 to 4 dimensions, each
// at least 1.
// The file may be gzip-compressed or not: zlib's gzread reads both.
//
//   RILL_ASSIGN_OR_RETURN(io::IdxArray labels, io::ReadIdx(dir + "/train-labels-idx1-ubyte.gz"));
//   // labels.dims == {60000}, labels.data.size() == 60000

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rill::io {

// The contents of one IDX file of unsigned bytes. A value type.
struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  // the payload, row-major; the product of dims bytes
};

// The most dimensions ReadIdx accepts.
inline constexpr int kMaxIdxDims = 4;

// Reads the IDX file at `path`, gzip-compressed or not. The file is
// untrusted (base/untrusted_file.h): what its header claims is checked
// before anything is allocated for it. Every error names the file and what
// is wrong with it:
//   NotFound          no such file;
//   PermissionDenied  it cannot be opened for reading;
//   InvalidArgument   not a regular file (a directory, a device, a pipe);
//                     wrong magic (first two bytes not zero); an element
//                     type other than 0x08; 0 or more than 4 dimensions; a
//                     dimension of 0 (naming it); dimensions whose product
//                     overflows 63 bits; an uncompressed file shorter than
//                     the payload its dimensions claim (CheckFitsInFile);
//   ResourceExhausted a payload larger than the cap on what one file may
//                     make Rill allocate (FileAllocationCap, naming it and
//                     RILL_MAX_FILE_BYTES): a gzip bomb fails here, before
//                     it is inflated;
//   DataLoss          a truncated header or gzip payload, bytes after the
//                     payload, a corrupt or truncated gzip stream (zlib's
//                     gzerror), a read error.
// The payload is read in chunks, so a gzip file that claims more than it
// inflates to fails with DataLoss after what it holds, not with an
// allocation of the claimed size.
// Thread-safe (no shared state).
absl::StatusOr<IdxArray> ReadIdx(const std::string& path);

}  // namespace rill::io

#endif  // RILL_IO_IDX_READER_H_
