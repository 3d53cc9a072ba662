#include "rill/platform/opencl/opencl_kernel.h"

#include <string>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rill/base/slow_notice.h"
#include "rill/base/status_macros.h"
#include "rill/platform/opencl/opencl_status.h"

namespace rill {
namespace {

std::string BuildLog(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
      CL_SUCCESS) {
    return "(no build log)";
  }
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// Bytes of a built-in OpenCL C scalar or vector type by its name ("int",
// "ulong", "float4"; a 3-vector is as large as a 4-vector), or 0.
size_t BuiltinTypeSize(absl::string_view type) {
  static constexpr std::pair<absl::string_view, size_t> kScalars[] = {
      {"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2}, {"half", 2},   {"int", 4},
      {"uint", 4}, {"float", 4}, {"long", 8},  {"ulong", 8},  {"double", 8},
  };
  size_t digits = type.size();
  while (digits > 0 && absl::ascii_isdigit(static_cast<unsigned char>(type[digits - 1]))) --digits;
  size_t lanes = 1;
  if (digits < type.size()) {
    if (!absl::SimpleAtoi(type.substr(digits), &lanes)) return 0;
    if (lanes != 2 && lanes != 3 && lanes != 4 && lanes != 8 && lanes != 16) return 0;
    if (lanes == 3) lanes = 4;
  }
  const absl::string_view scalar = type.substr(0, digits);
  for (const auto& [name, size] : kScalars) {
    if (scalar == name) return size * lanes;
  }
  return 0;
}

// Parameter `index` of `kernel` as its program declares it; kUnknown when
// the program has no argument info (CL_KERNEL_ARG_INFO_NOT_AVAILABLE: built
// without -cl-kernel-arg-info) or the query fails otherwise.
OpenClParam ReadParam(cl_kernel kernel, cl_uint index) {
  OpenClParam param;
  cl_kernel_arg_address_qualifier address = 0;
  if (clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(address), &address,
                         nullptr) != CL_SUCCESS) {
    return param;
  }
  std::string type;
  size_t length = 0;
  if (clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_NAME, 0, nullptr, &length) ==
      CL_SUCCESS) {
    type.resize(length);
    if (clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_NAME, length, type.data(), nullptr) !=
        CL_SUCCESS) {
      type.clear();
    }
    while (!type.empty() && type.back() == '\0') type.pop_back();
  }
  switch (address) {
    case CL_KERNEL_ARG_ADDRESS_GLOBAL:
      param.kind = OpenClParam::Kind::kBuffer;
      param.type = absl::StrCat("__global ", type);
      break;
    case CL_KERNEL_ARG_ADDRESS_CONSTANT:
      param.kind = OpenClParam::Kind::kBuffer;
      param.type = absl::StrCat("__constant ", type);
      break;
    case CL_KERNEL_ARG_ADDRESS_LOCAL:
      param.kind = OpenClParam::Kind::kLocal;
      param.type = absl::StrCat("__local ", type);
      break;
    default:  // CL_KERNEL_ARG_ADDRESS_PRIVATE: by value.
      param.kind = OpenClParam::Kind::kValue;
      param.size = BuiltinTypeSize(type);
      param.type = std::move(type);
      break;
  }
  return param;
}

// InvalidArgument when `arg` cannot be argument `index` of `kernel`.
absl::Status CheckArg(const OpenClKernelCore& kernel, size_t index, const KernelArg& arg) {
  const OpenClParam& param = kernel.params()[index];
  auto refuse = [&](absl::string_view declared_size, absl::string_view got) {
    return absl::InvalidArgumentError(absl::StrCat("argument ", index, " of kernel \"",
                                                   kernel.name(), "\" is `", param.type, "`",
                                                   declared_size, ", got ", got));
  };
  switch (param.kind) {
    case OpenClParam::Kind::kUnknown:
      return absl::OkStatus();
    case OpenClParam::Kind::kBuffer:
      if (arg.is_memory) return absl::OkStatus();
      return refuse("",
                    absl::StrCat("a value of ", arg.bytes.size(), " bytes (pass device memory)"));
    case OpenClParam::Kind::kLocal:
      return refuse("",
                    "an argument: a launch cannot size local memory; declare the __local array "
                    "inside the kernel instead");
    case OpenClParam::Kind::kValue: {
      const std::string declared_size =
          param.size != 0 ? absl::StrCat(" (", param.size, " bytes)") : std::string(" (by value)");
      if (arg.is_memory) return refuse(declared_size, "a buffer");
      if (param.size != 0 && arg.bytes.size() != param.size) {
        return refuse(declared_size, absl::StrCat(arg.bytes.size(), " bytes"));
      }
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

}  // namespace

OpenClProgramCache::~OpenClProgramCache() {
  MutexLock lock(&mu_);
  for (auto& [key, program] : programs_) clReleaseProgram(program);
}

int64_t OpenClProgramCache::size() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(programs_.size());
}

absl::StatusOr<cl_program> OpenClProgramCache::GetOrBuild(const std::string& source,
                                                          const std::string& options,
                                                          const std::string& what) {
  // The key is the text itself (hashed by the map), so a collision cannot
  // hand out the wrong program.
  std::string key = absl::StrCat(options, "\n", source);
  // Held across the build: two threads loading the same source build once.
  MutexLock lock(&mu_);
  if (auto it = programs_.find(key); it != programs_.end()) {
    clRetainProgram(it->second);
    return it->second;
  }
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int error = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &text, &length, &error);
  RILL_RETURN_IF_ERROR(ClStatus(error, absl::StrCat("clCreateProgramWithSource(", what, ")")));
  {
    SlowWorkNotice notice(
        absl::StrCat("compiling the OpenCL program of ", what,
                     " (first use; the driver's kernel cache, ~/.cache/pocl for PoCL, "
                     "makes later runs fast)..."));
    error = clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
  }
  if (error != CL_SUCCESS) {
    absl::Status status = ClStatus(error, absl::StrCat("clBuildProgram(", what, ")"));
    std::string log = BuildLog(program, device_);
    clReleaseProgram(program);
    return absl::Status(status.code(), absl::StrCat(status.message(), "; build log:\n", log));
  }
  programs_.emplace(std::move(key), program);
  clRetainProgram(program);
  return program;
}

OpenClArgs& OpenClArgs::operator=(OpenClArgs&& other) noexcept {
  if (this != &other) {
    Release();
    args_ = std::move(other.args_);
    other.args_.clear();
  }
  return *this;
}

void OpenClArgs::Release() {
  for (OpenClArg& arg : args_) {
    if (arg.memory != nullptr) clReleaseMemObject(arg.memory);
    arg.memory = nullptr;
  }
}

absl::StatusOr<std::shared_ptr<OpenClKernelCore>> OpenClKernelCore::Create(
    cl_program program, const std::string& name) {
  cl_int error = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name.c_str(), &error);
  if (error == CL_INVALID_KERNEL_NAME) {  // NotFound, as an unknown name is on the other backends.
    return absl::NotFoundError(
        absl::StrCat("no kernel named \"", name,
                     "\" in the OpenCL program (clCreateKernel: CL_INVALID_KERNEL_NAME)"));
  }
  RILL_RETURN_IF_ERROR(ClStatus(error, absl::StrCat("clCreateKernel(\"", name, "\")")));
  cl_uint num_args = 0;
  error = clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof(num_args), &num_args, nullptr);
  if (error != CL_SUCCESS) {
    clReleaseKernel(kernel);
    return ClStatus(error, "clGetKernelInfo(CL_KERNEL_NUM_ARGS)");
  }
  std::vector<OpenClParam> params;
  params.reserve(num_args);
  for (cl_uint i = 0; i < num_args; ++i) params.push_back(ReadParam(kernel, i));
  return std::shared_ptr<OpenClKernelCore>(new OpenClKernelCore(kernel, name, std::move(params)));
}

OpenClKernelCore::~OpenClKernelCore() { clReleaseKernel(kernel_); }

absl::StatusOr<cl_event> OpenClKernelCore::Enqueue(cl_command_queue queue, const ThreadDim& threads,
                                                   const BlockDim& blocks,
                                                   const OpenClArgs& args) const {
  const size_t local[3] = {static_cast<size_t>(threads.x), static_cast<size_t>(threads.y),
                           static_cast<size_t>(threads.z)};
  const size_t global[3] = {local[0] * static_cast<size_t>(blocks.x),
                            local[1] * static_cast<size_t>(blocks.y),
                            local[2] * static_cast<size_t>(blocks.z)};
  MutexLock lock(&mu_);
  for (size_t i = 0; i < args.size(); ++i) {
    const OpenClArg& arg = args[i];
    const cl_int error =
        arg.memory != nullptr
            ? clSetKernelArg(kernel_, static_cast<cl_uint>(i), sizeof(cl_mem), &arg.memory)
            : clSetKernelArg(kernel_, static_cast<cl_uint>(i), arg.bytes.size(), arg.bytes.data());
    if (error != CL_SUCCESS) {
      const std::string& type = params_[i].type;
      return ClStatus(error, absl::StrCat("clSetKernelArg(\"", name_, "\", argument ", i,
                                          type.empty() ? "" : absl::StrCat(" `", type, "`"), ", ",
                                          arg.memory != nullptr ? sizeof(cl_mem) : arg.bytes.size(),
                                          " bytes)"));
    }
  }
  cl_event event = nullptr;
  const cl_int error =
      clEnqueueNDRangeKernel(queue, kernel_, 3, nullptr, global, local, 0, nullptr, &event);
  if (error != CL_SUCCESS) {  // Built only on failure: this runs once per launch.
    return ClStatus(error, absl::StrCat("clEnqueueNDRangeKernel(\"", name_, "\", global=(",
                                        global[0], ", ", global[1], ", ", global[2], "), local=(",
                                        local[0], ", ", local[1], ", ", local[2], "))"));
  }
  return event;
}

absl::StatusOr<OpenClArgs> ResolveArgs(const OpenClKernelCore& kernel, const KernelArgs& args,
                                       uint64_t base_align) {
  if (args.size() != kernel.num_args()) {
    return absl::InvalidArgumentError(absl::StrCat("kernel \"", kernel.name(), "\" takes ",
                                                   kernel.num_args(), " argument(s), got ",
                                                   args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) RILL_RETURN_IF_ERROR(CheckArg(kernel, i, args[i]));
  OpenClArgs out(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    if (!arg.is_memory) {
      out[i].bytes = arg.bytes;
      continue;
    }
    cl_mem base = static_cast<cl_mem>(arg.memory.opaque());
    if (arg.memory.offset() == 0) {
      clRetainMemObject(base);
      out[i].memory = base;
      continue;
    }
    if (base_align == 0 || arg.memory.offset() % base_align != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " of kernel \"", kernel.name(), "\" is a view at byte offset ",
          arg.memory.offset(),
          ", which is not a multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN (", base_align,
          " bytes): OpenCL kernels see sub-buffers, which must start aligned; "
          "pass the whole buffer and the offset as a separate argument instead"));
    }
    cl_buffer_region region{static_cast<size_t>(arg.memory.offset()),
                            static_cast<size_t>(arg.memory.size())};
    cl_int error = CL_SUCCESS;
    out[i].memory =
        clCreateSubBuffer(base, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &error);
    if (error != CL_SUCCESS) {
      out[i].memory = nullptr;
      return ClStatus(error, absl::StrCat("clCreateSubBuffer(argument ", i, ", offset ",
                                          region.origin, ", size ", region.size, ")"));
    }
  }
  return out;
}

}  // namespace rill
