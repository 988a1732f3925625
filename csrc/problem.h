// The work every op does, described without torch types so that CUDA files need no torch headers.
#pragma once

#include <cstdint>

namespace cute_transpose {

// A batch of matrices. The input is (batch, rows, cols) with arbitrary strides, counted in
// elements; the output is a new contiguous tensor: (batch, cols, rows) for a transpose,
// (batch, rows, cols) for the `copy` op. Kernels move bits, so only the element size matters.
struct Problem {
  void const* src;
  void* dst;
  int64_t batch, rows, cols;
  int64_t batch_stride, row_stride, col_stride;
  int element_size;  // 1, 2, 4, 8 or 16 bytes
};

}  // namespace cute_transpose
