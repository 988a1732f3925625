// The planner: every op -- the seed ladder, `copy`, `transpose`, `permute` and the out= forms --
// describes its work here, as the dims of a permute after simplification (a Plan). The chooser
// (choose.h) then picks the kernel; the kernels take the forms derived at the bottom.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "work.h"

namespace cute_transpose {

// Whole multiples: of v elements, and of `bytes` bytes from address 0.
inline bool divisible(int64_t x, int64_t v) { return x % v == 0; }
inline bool aligned(void const* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % uint64_t(bytes) == 0; }

// x.permute(perm) written into a contiguous `out`, as dims listed in the output's order
// (outermost first, so dims[rank - 1] is the output's innermost dim). Size-1 dims are dropped and
// neighbours whose strides chain in both tensors are merged, the way x.view would; a short
// innermost dim that stays innermost may become part of a wider element (element_size).
//
//   m  the output's innermost dim (rank - 1);
//   n  the input's tightest other dim (smallest nonzero input stride), or -1 when m itself is
//      at least as tight as every other dim: the copy route, where rows keep their order.
// A LastTwoDims plan (below) instead keeps x's last two dims unmerged as m (dim -2) and n (-1).
struct Plan {
  void const* src = nullptr;
  void* dst = nullptr;
  int element_size = 0;
  int64_t elements = 0;  // x.numel(), in x's own elements (before any widening)
  int rank = 0;
  Dim dims[kMaxDims];
  int m = 0, n = -1;
  bool copy_route() const { return n < 0; }
  int64_t numel() const;
};

// How the planner may simplify. The seed ladder and `copy` keep x's last two dims as their
// (M, N) matrix -- the kernels are lessons about that matrix -- and merge only the batch dims.
enum class Shape { Permute, LastTwoDims };

// std::nullopt when more than kMaxDims dims remain after merging (the caller copies with ATen).
std::optional<Plan> plan_permute(at::Tensor const& x, at::IntArrayRef perm, at::Tensor const& out,
                                 Shape shape = Shape::Permute);

//
// The forms the kernels take. Each returns std::nullopt when the plan does not fit it.
//

// The dims (outermost first) as a Batch; at most Batch::kMaxRank of them.
Batch make_batch(std::vector<Dim> const& dims);

// A batch of (M, N) matrices with M = dims[m] and N = dims[n] (a unit dim on the copy route)
// and the other dims as the batch (at most Batch::kMaxRank of them).
std::optional<Problem> matrix_problem(Plan const& plan);

// The output as rows, on either route: N = the output's innermost dim (on the transpose route
// its input stride is not 1), M = the next one out, the rest the batch.
std::optional<Problem> output_rows_problem(Plan const& plan);

// The copy route as rows: output_rows_problem where rows keep their order.
std::optional<Problem> rows_problem(Plan const& plan);

}  // namespace cute_transpose
