#include "platform/opencl/opencl_kernel.h"

#include <string>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "platform/opencl/opencl_status.h"

namespace rill {
namespace {

std::string BuildLog(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) {
    return "(no build log)";
  }
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
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
  error = clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
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

void ReleaseArgs(std::vector<OpenClArg>& args) {
  for (OpenClArg& arg : args) {
    if (arg.memory != nullptr) clReleaseMemObject(arg.memory);
    arg.memory = nullptr;
  }
}

absl::StatusOr<std::shared_ptr<OpenClKernelCore>> OpenClKernelCore::Create(
    cl_program program, const std::string& name) {
  cl_int error = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name.c_str(), &error);
  RILL_RETURN_IF_ERROR(ClStatus(error, absl::StrCat("clCreateKernel(\"", name, "\")")));
  cl_uint num_args = 0;
  error = clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof(num_args), &num_args, nullptr);
  if (error != CL_SUCCESS) {
    clReleaseKernel(kernel);
    return ClStatus(error, "clGetKernelInfo(CL_KERNEL_NUM_ARGS)");
  }
  return std::shared_ptr<OpenClKernelCore>(new OpenClKernelCore(kernel, name, num_args));
}

OpenClKernelCore::~OpenClKernelCore() { clReleaseKernel(kernel_); }

absl::StatusOr<cl_event> OpenClKernelCore::Enqueue(cl_command_queue queue, const ThreadDim& threads,
                                               const BlockDim& blocks,
                                               const std::vector<OpenClArg>& args) const {
  const size_t local[3] = {static_cast<size_t>(threads.x), static_cast<size_t>(threads.y),
                           static_cast<size_t>(threads.z)};
  const size_t global[3] = {local[0] * static_cast<size_t>(blocks.x),
                            local[1] * static_cast<size_t>(blocks.y),
                            local[2] * static_cast<size_t>(blocks.z)};
  MutexLock lock(&mu_);
  for (size_t i = 0; i < args.size(); ++i) {
    const OpenClArg& arg = args[i];
    const cl_int error = arg.memory != nullptr
                             ? clSetKernelArg(kernel_, static_cast<cl_uint>(i), sizeof(cl_mem), &arg.memory)
                             : clSetKernelArg(kernel_, static_cast<cl_uint>(i), arg.bytes.size(),
                                              arg.bytes.data());
    if (error != CL_SUCCESS) {
      return ClStatus(error, absl::StrCat("clSetKernelArg(\"", name_, "\", argument ", i, ", ",
                                          arg.memory != nullptr ? sizeof(cl_mem) : arg.bytes.size(),
                                          " bytes)"));
    }
  }
  cl_event event = nullptr;
  RILL_RETURN_IF_ERROR(ClStatus(
      clEnqueueNDRangeKernel(queue, kernel_, 3, nullptr, global, local, 0, nullptr, &event),
      absl::StrCat("clEnqueueNDRangeKernel(\"", name_, "\", global=(", global[0], ", ", global[1],
                   ", ", global[2], "), local=(", local[0], ", ", local[1], ", ", local[2], "))")));
  return event;
}

absl::StatusOr<std::vector<OpenClArg>> ResolveArgs(const OpenClKernelCore& kernel, const KernelArgs& args,
                                                   uint64_t base_align) {
  if (args.size() != kernel.num_args()) {
    return absl::InvalidArgumentError(absl::StrCat("kernel \"", kernel.name(), "\" takes ",
                                                   kernel.num_args(), " argument(s), got ",
                                                   args.size()));
  }
  std::vector<OpenClArg> out(args.size());
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
      ReleaseArgs(out);
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " of kernel \"", kernel.name(), "\" is a view at byte offset ",
          arg.memory.offset(), ", which is not a multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN (",
          base_align, " bytes): OpenCL kernels see sub-buffers, which must start aligned; "
          "pass the whole buffer and the offset as a separate argument instead"));
    }
    cl_buffer_region region{static_cast<size_t>(arg.memory.offset()),
                            static_cast<size_t>(arg.memory.size())};
    cl_int error = CL_SUCCESS;
    out[i].memory = clCreateSubBuffer(base, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region,
                                      &error);
    if (error != CL_SUCCESS) {
      out[i].memory = nullptr;
      ReleaseArgs(out);
      return ClStatus(error, absl::StrCat("clCreateSubBuffer(argument ", i, ", offset ",
                                          region.origin, ", size ", region.size, ")"));
    }
  }
  return out;
}

}  // namespace rill
