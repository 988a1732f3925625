// Torch-side glue shared by the CPU and CUDA registrations: argument checks, allocation, and the
// description of the work as a Problem.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "problem.h"

namespace cute_transpose {

enum class Kind { Transpose, Copy };

struct Prepared {
  at::Tensor out;    // the contiguous result
  at::Tensor input;  // keeps alive what `problem` reads (x itself, or a copy of it; see prepare)
  Problem problem{};
  bool empty() const { return out.numel() == 0; }
};

// For the seed variants and `copy`: checks `x` (rank >= 2, strided, a supported element size),
// allocates the result ((..., N, M) for a transpose, x's shape for a copy) and describes the
// work as a batch of (M, N) matrices: the last two dims, read through their own strides, and the
// leading dims as a Batch, read through theirs (merged where the strides allow). Nothing is
// copied first, except when the leading dims do not fit a Batch (more than Batch::kMaxRank
// unmergeable dims), or when `single_batch` asks for one batch dim (TMA) and they do not merge:
// then x.reshape(-1, M, N) copies them.
Prepared prepare(at::Tensor const& x, Kind kind, char const* op, bool single_batch = false);

// x.permute(dims).contiguous() as a Problem, written into `out` (contiguous, of the permuted
// shape). Output dims are listed innermost last; size-1 dims are dropped and neighbours whose
// input strides chain are merged. Then one of two routes:
//   Copy       the output's innermost dim is also the input's tightest one (stride 1 for a
//              contiguous input): rows of it are copied as they are, batched over the rest;
//   Transpose  otherwise: a tiled transpose between the output's innermost dim (m) and the
//              input's tightest other dim (n), batched over the rest.
// std::nullopt when the merged dims still do not fit a Problem (more than Batch::kMaxRank + 2
// of them): the caller then copies with ATen.
//
// Small dims: when the transpose route's m or n is shorter than a tile (kSplitBelow elements),
// `split` also describes the work with a second dim on each short side (SplitProblem): the
// remaining dim with the smallest output stride joins m, the one with the smallest input stride
// joins n. A GPU kernel that can take it fills its tiles; `problem` stays valid for every other.
constexpr int64_t kSplitBelow = 128;
struct Plan {
  Kind route;
  Problem problem;
  std::optional<SplitProblem> split;
};
std::optional<Plan> plan_permute(at::Tensor const& x, at::IntArrayRef dims, at::Tensor const& out);

// Checks for permute/transpose arguments, and for a preallocated `out` (contiguous, of `sizes`,
// x's dtype and device, not overlapping x). Each error names the op.
std::vector<int64_t> checked_permutation(at::Tensor const& x, at::IntArrayRef dims, char const* op);
std::vector<int64_t> transpose_permutation(at::Tensor const& x, int64_t dim0, int64_t dim1, char const* op);
void check_out(at::Tensor const& x, at::Tensor const& out, at::IntArrayRef sizes, char const* op);
std::vector<int64_t> permuted_sizes(at::Tensor const& x, at::IntArrayRef perm);

// The `permute` and `transpose` ops and their out= forms, written once for every device: Run
// executes a Plan on that device (after Run::guard(out), which selects the device). Empty
// results launch nothing; plans that do not fit a Problem take ATen's strided copy.
template <class Run>
at::Tensor& permute_into(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out, Run&& run) {
  if (out.numel() == 0) return out;
  [[maybe_unused]] auto const guard = run.guard(out);
  if (auto plan = plan_permute(x, perm, out)) {
    run(*plan);
  } else {
    out.copy_(x.permute(perm));
  }
  return out;
}

template <class Run>
at::Tensor permute_new(at::Tensor const& x, std::vector<int64_t> const& perm, Run&& run) {
  at::Tensor out = at::empty(permuted_sizes(x, perm), x.options().memory_format(at::MemoryFormat::Contiguous));
  return permute_into(x, perm, out, run);
}

template <class Run>
at::Tensor& permute_out(at::Tensor const& x, std::vector<int64_t> const& perm, at::Tensor& out, char const* op,
                        Run&& run) {
  check_out(x, out, permuted_sizes(x, perm), op);
  return permute_into(x, perm, out, run);
}

// The four ops for one device, as functions the TORCH_LIBRARY_IMPL blocks register.
template <class Run>
struct PlanOps {
  static at::Tensor permute(at::Tensor const& x, at::IntArrayRef dims) {
    return permute_new(x, checked_permutation(x, dims, "permute"), Run{});
  }
  static at::Tensor& permute_out(at::Tensor const& x, at::IntArrayRef dims, at::Tensor& out) {
    return cute_transpose::permute_out(x, checked_permutation(x, dims, "permute"), out, "permute", Run{});
  }
  static at::Tensor transpose(at::Tensor const& x, int64_t dim0, int64_t dim1) {
    return permute_new(x, transpose_permutation(x, dim0, dim1, "transpose"), Run{});
  }
  static at::Tensor& transpose_out(at::Tensor const& x, int64_t dim0, int64_t dim1, at::Tensor& out) {
    return cute_transpose::permute_out(x, transpose_permutation(x, dim0, dim1, "transpose"), out, "transpose", Run{});
  }
};

// The cache-blocked CPU implementation every op shares.
void run_cpu(Problem const& p);

}  // namespace cute_transpose
