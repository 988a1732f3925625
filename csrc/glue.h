// Torch-side glue shared by the CPU and CUDA registrations: argument checks and allocation.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/WrapDimMinimal.h>

#include "problem.h"

namespace cute_transpose {

enum class Kind { Transpose, Copy };

struct Prepared {
  at::Tensor out;    // the new contiguous result
  at::Tensor input;  // keeps alive the (batch, rows, cols) view or copy that `problem` reads
  Problem problem;
  bool empty() const { return out.numel() == 0; }
};

// Checks `x` (rank >= 2, strided, a supported element size), allocates the result and describes
// the work as a batch of matrices. The last two dims are always read through their own strides;
// leading dims are merged into one batch dim, which copies only when they cannot be merged
// (e.g. a permuted batch), exactly as x.reshape(-1, M, N) would.
Prepared prepare(at::Tensor const& x, Kind kind, char const* op);

// transpose(x, dim0, dim1): swapping the last two dims (either order) is what `last_two(x)`
// computes; any other pair, equal dims of a tensor of any rank included, takes ATen's strided
// copy for now. The result is always a new contiguous tensor.
template <class LastTwo>
at::Tensor transpose_dims(at::Tensor const& x, int64_t dim0, int64_t dim1, LastTwo&& last_two) {
  int64_t const rank = x.dim();
  dim0 = c10::maybe_wrap_dim(dim0, rank);
  dim1 = c10::maybe_wrap_dim(dim1, rank);
  if (dim0 != dim1 && std::min(dim0, dim1) == rank - 2 && std::max(dim0, dim1) == rank - 1) return last_two(x);
  auto transposed = x.transpose(dim0, dim1);
  return at::empty(transposed.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous)).copy_(transposed);
}

// The cache-blocked CPU implementation every op shares.
void run_cpu(Problem const& p, Kind kind);

}  // namespace cute_transpose
