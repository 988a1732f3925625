// CUDA implementations: the device guard, the current stream, the chooser's pick (choose.h)
// launched, and a launch check -- written once for every op. No host synchronisation (but for
// the first call of a shape with autotuning on, autotune.h).
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <mutex>
#include <unordered_map>

#include "autotune.h"
#include "cuda/launch.h"
#include "ops.h"
#include "variants.h"

namespace cute_transpose {
namespace {

// The current device as the chooser sees it (choose.h, Device), asked once per device.
Device device_info() {
  static std::mutex mutex;
  static std::unordered_map<int, Device> known;
  int index = 0;
  C10_CUDA_CHECK(cudaGetDevice(&index));
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(index);
  if (it == known.end()) {
    cudaDeviceProp prop{};
    C10_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
    int const arch = 10 * prop.major + prop.minor;
    it = known.emplace(index, device_rules(arch, arch >= 90 && tma_kernel_arch(4) >= 90, prop.name)).first;
  }
  return it->second;
}

void execute(Choice const& c, at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out) {
  cudaStream_t const stream = c10::cuda::getCurrentCUDAStream();
  switch (c.kernel) {
    case Kernel::Aten: return aten_permute_into(x, perm, out);
    case Kernel::Rows: C10_CUDA_CHECK(launch_rows(*c.problem, c.width, c.threads, c.together, stream)); return;
    case Kernel::Tile: C10_CUDA_CHECK(launch_tile(*c.problem, c.width, c.shape, stream)); return;
    case Kernel::Interleave: C10_CUDA_CHECK(launch_interleave(*c.problem, c.channels, c.pack, c.width, stream)); return;
    case Kernel::Box: C10_CUDA_CHECK(launch_box(*c.box, stream)); return;
    case Kernel::Tma: C10_CUDA_CHECK(launch_tma(*c.problem, c.width, stream)); return;
    case Kernel::Pipelined: C10_CUDA_CHECK(launch_pipelined(*c.problem, stream)); return;
    case Kernel::Split: C10_CUDA_CHECK(launch_split(*c.split, c.width, c.shape, stream)); return;
    case Kernel::Realign: C10_CUDA_CHECK(launch_realign(*c.problem, stream)); return;
    case Kernel::Gather: C10_CUDA_CHECK(launch_gather(*c.problem, c.width, c.together, stream)); return;
    case Kernel::Lean: C10_CUDA_CHECK(launch_lean(*c.problem, c.width, c.out_width, c.shape, stream)); return;
    case Kernel::Words: C10_CUDA_CHECK(launch_words(*c.problem, c.shape, stream)); return;
    case Kernel::Fill: C10_CUDA_CHECK(launch_fill(*c.problem, c.lanes, stream)); return;
    case Kernel::Lanes: C10_CUDA_CHECK(launch_lanes(*c.problem, stream)); return;
    case Kernel::Stage: C10_CUDA_CHECK(launch_stage(*c.problem, stream)); return;
    case Kernel::SeedCopy: C10_CUDA_CHECK(launch_copy(*c.problem, stream)); return;
#define CUTE_TRANSPOSE_SEED_CASE(name, kernel) \
  case Kernel::kernel: C10_CUDA_CHECK(launch_##name(*c.problem, stream)); return;
      CUTE_TRANSPOSE_FOR_EACH_SEED(CUTE_TRANSPOSE_SEED_CASE)
#undef CUTE_TRANSPOSE_SEED_CASE
  }
}

// The preconditions of the TMA variants (tma: the output's rows are stored by TMA; pipelined:
// the input's rows are loaded by TMA and both sides move in 16-byte vectors), each with its own
// message.
void check_tma(at::Tensor const& x, Kernel kernel) {
  Device const d = device_info();
  char const* const op = kernel_name(kernel);
  int const device = x.device().index();
  TORCH_CHECK(d.arch >= 90, "cute_transpose.", op, " needs an sm_90 (Hopper) or newer GPU for TMA; device ", device,
              " is sm_", d.arch, ". Use cute_transpose.swizzled instead.");
  TORCH_CHECK(d.tma, "cute_transpose.", op, ": this build has no sm_90 code for the TMA kernels "
              "(rebuild with TORCH_CUDA_ARCH_LIST containing 9.0a or 9.0)");
  if (x.numel() == 0) return;
  int64_t const rows = x.size(-2), cols = x.size(-1), esize = x.element_size();
  TORCH_CHECK((rows * esize) % 16 == 0, "cute_transpose.", op, ": TMA needs the output's row pitch to be a "
              "multiple of 16 bytes, but M * element_size = ", rows, " * ", esize, " = ", rows * esize,
              " bytes (input shape ", x.sizes(), "). Use cute_transpose.swizzled for this shape.");
  TORCH_CHECK(kernel != Kernel::Pipelined || (cols * esize) % 16 == 0, "cute_transpose.", op,
              ": TMA loads need the input's row pitch to be a multiple of 16 bytes, but N * element_size = ", cols,
              " * ", esize, " = ", cols * esize, " bytes (input shape ", x.sizes(),
              "). Use cute_transpose.swizzled for this shape.");
  int64_t const batch = x.numel() / (rows * cols);
  TORCH_CHECK(rows < (int64_t(1) << 31) && cols < (int64_t(1) << 31) && batch < (int64_t(1) << 31),
              "cute_transpose.", op, ": TMA coordinates are 32-bit; every dim must be below 2^31, got ", x.sizes());
}

struct RunCuda {
  static c10::cuda::CUDAGuard guard(at::Tensor const& out) { return c10::cuda::CUDAGuard(out.device()); }

  static void best(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out, Plan const& plan) {
    Device const device = device_info();
    if (!autotune_enabled()) return execute(choose(plan, device), x, perm, out);
    execute(autotune(plan, device, [&](Choice const& c) { execute(c, x, perm, out); }), x, perm, out);
  }

  static void forced(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out, Plan const& plan, Kernel kernel,
                     char const* op) {
    if (kernel == Kernel::Tma || kernel == Kernel::Pipelined) {
      check_tma(x, kernel);
      // Their TMA descriptors have one batch dim: batch dims that do not merge are copied first.
      if (plan.rank > 3) {
        at::Tensor const packed = x.contiguous();
        auto const flat = plan_permute(packed, perm, out, Shape::LastTwoDims);
        return forced(packed, perm, out, *flat, kernel, op);
      }
    }
    std::string why;
    auto const choice = force(plan, kernel, device_info(), &why);
    TORCH_CHECK(choice, "cute_transpose.", op, ": the ", kernel_name(kernel), " kernel cannot run this input: ", why);
    execute(*choice, x, perm, out);
  }
};
using CudaOps = PlanOps<RunCuda>;


// One named candidate of the chooser (a name parse_kernel_name takes: "split/tall",
// "rows/together", "fill/lanes", ...), wherever it can run the permute (tests and tuning run it
// also where the chooser would not offer it), or a clear error when it cannot.
at::Tensor permute_with_cuda(at::Tensor const& x, at::IntArrayRef dims, c10::string_view name) {
  auto const perm = checked_permutation(x, dims, "_permute_with");
  auto const named = parse_kernel_name(std::string(name));
  TORCH_CHECK(named && is_candidate(named->kernel), "cute_transpose._permute_with: unknown kernel '", name,
              "'; the candidates are ", c10::Join(", ", candidate_names()), ", ", named_forms());
  at::Tensor out = new_result(x, perm);
  if (out.numel() == 0) return out;
  c10::cuda::CUDAGuard guard(out.device());
  auto const plan = plan_permute(x, perm, out);
  TORCH_CHECK(plan || named->kernel == Kernel::Aten, "cute_transpose._permute_with: more than ", kMaxDims,
              " dims remain after merging; only 'aten' runs this permute");
  if (!plan) {
    aten_permute_into(x, perm, out);
    return out;
  }
  std::string why;
  auto choice = force_named(*plan, *named, device_info(), &why);  // also where choose() would not offer it
  TORCH_CHECK(choice, "cute_transpose._permute_with: the ", name, " kernel cannot run this permute: ", why);
  execute(*choice, x, perm, out);
  return out;
}

std::vector<std::string> smem_variants() {
#define CUTE_TRANSPOSE_NAME(name) #name,
  return {CUTE_TRANSPOSE_SMEM_VARIANTS(CUTE_TRANSPOSE_NAME)};
#undef CUTE_TRANSPOSE_NAME
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> smem_access_map(c10::string_view variant, int64_t element_size) {
  TORCH_CHECK(element_size == 1 || element_size == 2 || element_size == 4 || element_size == 8 || element_size == 16,
              "cute_transpose._smem_access_map: element size must be 1, 2, 4, 8 or 16 bytes, got ", element_size);
  SmemAccessMap map;
#define CUTE_TRANSPOSE_PICK(name) \
  if (variant == #name) map = smem_access_map_##name(static_cast<int>(element_size));
  CUTE_TRANSPOSE_SMEM_VARIANTS(CUTE_TRANSPOSE_PICK)
#undef CUTE_TRANSPOSE_PICK
  TORCH_CHECK(!map.tile.empty(), "cute_transpose._smem_access_map: '", variant,
              "' is not a shared-memory seed variant (", c10::Join(", ", smem_variants()), ")");
  auto as_tensor = [](std::vector<int64_t> const& v, int64_t cols) { return at::tensor(v, at::kLong).view({-1, cols}); };
  return {as_tensor(map.store, 32), as_tensor(map.load, 32), as_tensor(map.tile, map.cols)};
}

// dst[i] = src[i] for every index i of dim 0, by one cudaMemcpy2DAsync on the current stream:
// each row is contiguous, rows lie dst.stride(0) and src.stride(0) elements apart. The copy
// engine moves them, so no SM is taken: the distributed transpose pulls the blocks another GPU
// has transposed straight into its rows of the result with it, while its kernels run
// (python/cute_transpose/distributed.py). Either side may be a peer GPU's memory mapped here.
void copy_rows_cuda(at::Tensor& dst, at::Tensor const& src) {
  check_copy_rows(dst, src);
  if (dst.numel() == 0) return;
  size_t const esize = dst.element_size();
  c10::cuda::CUDAGuard guard(dst.device());
  C10_CUDA_CHECK(cudaMemcpy2DAsync(dst.mutable_data_ptr(), dst.stride(0) * esize, src.const_data_ptr(),
                                   src.stride(0) * esize, dst[0].numel() * esize, dst.size(0),
                                   cudaMemcpyDeviceToDevice, c10::cuda::getCurrentCUDAStream()));
}

}  // namespace

// Host-side analysis, no tensors in: one kernel for every dispatch key.
TORCH_LIBRARY_FRAGMENT(cute_transpose, m) {
  m.def("_smem_access_map(str variant, int element_size) -> (Tensor, Tensor, Tensor)", &smem_access_map);
  m.def("_smem_variants() -> str[]", &smem_variants);
}

TORCH_LIBRARY_IMPL(cute_transpose, CUDA, m) {
#define CUTE_TRANSPOSE_IMPL(name, kernel) m.impl(#name, &ladder_op<RunCuda, Kernel::kernel>);
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_IMPL)
  CUTE_TRANSPOSE_IMPL(copy, SeedCopy)
#undef CUTE_TRANSPOSE_IMPL
  m.impl("transpose", &CudaOps::transpose);
  m.impl("transpose.out", &CudaOps::transpose_out);
  m.impl("permute", &CudaOps::permute);
  m.impl("permute.out", &CudaOps::permute_out);
  m.impl("_permute_with", &permute_with_cuda);
  m.impl("_copy_rows_", &copy_rows_cuda);
}

}  // namespace cute_transpose
