// CUDA implementations: argument checks, device guard, the current stream, one launch, and a
// launch check -- written once for every op. No host synchronisation.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <string_view>

#include "cuda/launch.h"
#include "glue.h"
#include "variants.h"

namespace cute_transpose {
namespace {

using Launcher = cudaError_t (*)(Problem const&, cudaStream_t);

at::Tensor run_cuda(at::Tensor const& x, Kind kind, char const* name, Launcher launch, bool single_batch = false) {
  c10::cuda::CUDAGuard guard(x.device());
  Prepared r = prepare(x, kind, name, single_batch);
  if (r.empty()) return r.out;
  C10_CUDA_CHECK(launch(r.problem, c10::cuda::getCurrentCUDAStream()));
  return r.out;
}

// The TMA variant's extra preconditions, each with its own message.
void check_tma(at::Tensor const& x) {
  c10::cuda::CUDAGuard guard(x.device());
  int const device = x.device().index();
  int major = 0, minor = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  TORCH_CHECK(major >= 9, "cute_transpose.tma needs an sm_90 (Hopper) or newer GPU for TMA; device ",
              device, " is sm_", major, minor, ". Use cute_transpose.swizzled instead.");
  int const arch = tma_kernel_arch(x.element_size());
  TORCH_CHECK(arch >= 90, "cute_transpose.tma: this build has no sm_90 code for the TMA kernel "
              "(rebuild with TORCH_CUDA_ARCH_LIST containing 9.0a or 9.0)");
  if (x.dim() < 2 || x.numel() == 0) return;  // prepare() reports rank errors; nothing to store
  int64_t const rows = x.size(-2), cols = x.size(-1), esize = x.element_size();
  TORCH_CHECK((rows * esize) % 16 == 0, "cute_transpose.tma: TMA needs the output's row pitch to be a "
              "multiple of 16 bytes, but M * element_size = ", rows, " * ", esize, " = ", rows * esize,
              " bytes (input shape ", x.sizes(), "). Use cute_transpose.swizzled for this shape.");
  int64_t const batch = x.numel() / (rows * cols);
  TORCH_CHECK(rows < (int64_t(1) << 31) && cols < (int64_t(1) << 31) && batch < (int64_t(1) << 31),
              "cute_transpose.tma: TMA coordinates are 32-bit; every dim must be below 2^31, got ",
              x.sizes());
}

// TMA describes the output with one batch dim: leading dims that do not merge are copied first.
#define CUTE_TRANSPOSE_CUDA_FN(name)                                                       \
  at::Tensor name##_cuda(at::Tensor const& x) {                                            \
    constexpr bool kTma = std::string_view(#name) == "tma";                                \
    if constexpr (kTma) check_tma(x);                                                      \
    return run_cuda(x, Kind::Transpose, #name, &launch_##name, /*single_batch=*/kTma);     \
  }
CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_CUDA_FN)
#undef CUTE_TRANSPOSE_CUDA_FN

at::Tensor copy_cuda(at::Tensor const& x) { return run_cuda(x, Kind::Copy, "copy", &launch_copy); }

// The kernel choice of `transpose` and `permute`, fixed rules from the benchmark
// (docs/PERFORMANCE.md). The copy route takes the vectorized strided row copy. The transpose
// route takes the vectorized tile transpose wherever sizes, strides and alignment allow vectors of
// two or more elements (or whole 8- and 16-byte elements) -- with two dims per tile side when a
// side is short (Plan::split) --; otherwise `padded`, the fastest seed kernel on such shapes.
struct RunCuda {
  c10::cuda::CUDAGuard guard(at::Tensor const& out) const { return c10::cuda::CUDAGuard(out.device()); }
  void operator()(Plan const& plan) const {
    Problem const& p = plan.problem;
    cudaStream_t const stream = c10::cuda::getCurrentCUDAStream();
    if (plan.route == Kind::Copy) {
      C10_CUDA_CHECK(launch_strided_copy(p, stream));
    } else if (int const W = plan.split ? split_vectorized_width(*plan.split) : 0) {
      C10_CUDA_CHECK(launch_split_transpose(*plan.split, W, stream));
    } else if (int const V = vectorized_width(p)) {
      C10_CUDA_CHECK(launch_vectorized(p, V, stream));
    } else {
      C10_CUDA_CHECK(launch_padded(p, stream));
    }
  }
};
using CudaOps = PlanOps<RunCuda>;

std::tuple<at::Tensor, at::Tensor, at::Tensor> smem_access_map(c10::string_view variant, int64_t element_size) {
  TORCH_CHECK(element_size == 1 || element_size == 2 || element_size == 4 || element_size == 8 || element_size == 16,
              "cute_transpose._smem_access_map: element size must be 1, 2, 4, 8 or 16 bytes, got ", element_size);
  SmemAccessMap map;
#define CUTE_TRANSPOSE_PICK(name) \
  if (variant == #name) map = smem_access_map_##name(static_cast<int>(element_size));
  CUTE_TRANSPOSE_SMEM_VARIANTS(CUTE_TRANSPOSE_PICK)
#undef CUTE_TRANSPOSE_PICK
  TORCH_CHECK(!map.tile.empty(), "cute_transpose._smem_access_map: '", variant,
              "' is not a shared-memory seed variant (bank_conflict_read, bank_conflict_write, padded, swizzled)");
  auto as_tensor = [](std::vector<int64_t> const& v, int64_t cols) {
    return at::tensor(v, at::kLong).view({-1, cols});
  };
  return {as_tensor(map.store, 32), as_tensor(map.load, 32), as_tensor(map.tile, map.cols)};
}

}  // namespace

// Host-side analysis, no tensors in: one kernel for every dispatch key.
TORCH_LIBRARY_FRAGMENT(cute_transpose, m) {
  m.def("_smem_access_map(str variant, int element_size) -> (Tensor, Tensor, Tensor)", &smem_access_map);
}

TORCH_LIBRARY_IMPL(cute_transpose, CUDA, m) {
#define CUTE_TRANSPOSE_IMPL(name) m.impl(#name, &name##_cuda);
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_IMPL)
#undef CUTE_TRANSPOSE_IMPL
  m.impl("copy", &copy_cuda);
  m.impl("transpose", &CudaOps::transpose);
  m.impl("transpose.out", &CudaOps::transpose_out);
  m.impl("permute", &CudaOps::permute);
  m.impl("permute.out", &CudaOps::permute_out);
}

}  // namespace cute_transpose
