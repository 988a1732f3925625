// Torch-side glue shared by the CPU and CUDA registrations: argument checks and allocation.
#pragma once

#include <ATen/core/Tensor.h>

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

// The cache-blocked CPU implementation every op shares.
void run_cpu(Problem const& p, Kind kind);

}  // namespace cute_transpose
