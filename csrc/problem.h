// The work every op does, described without torch types so that CUDA files need no torch headers.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CUTE_TRANSPOSE_HD __host__ __device__
#else
#define CUTE_TRANSPOSE_HD
#endif

namespace cute_transpose {

// Where a batch index lands in the input and in the output, in elements.
struct Offsets {
  int64_t in = 0, out = 0;
};

// The dims a kernel loops over whole matrices, outermost first. Each has its own input and
// output stride, so a batch can be any view (a permuted or sliced one) without a copy.
struct Batch {
  static constexpr int kMaxRank = 6;
  int rank = 0;  // 0: a single matrix
  int64_t count = 1;  // product of the sizes
  int64_t size[kMaxRank] = {}, in_stride[kMaxRank] = {}, out_stride[kMaxRank] = {};

  // Offsets of batch index b (0 <= b < count). The loop is unrolled over the fixed maximum
  // rank, so the arrays are indexed by constants and stay in registers on the GPU; a rank-1
  // batch costs one multiply-add per side and no division.
  CUTE_TRANSPOSE_HD Offsets operator()(int64_t b) const {
    Offsets o;
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < rank) {
        int64_t const i = d == 0 ? b : b % size[d];
        if (d > 0) b /= size[d];
        o.in += i * in_stride[d];
        o.out += i * out_stride[d];
      }
    }
    return o;
  }
};

// A batch of (M, N) matrices. Element (b, m, n) is read at
//   src + Batch(b).in  + m * row_stride     + n * col_stride
// and written at
//   dst + Batch(b).out + m * out_row_stride + n * out_col_stride.
// For the transpose variants the output is (batch..., N, M) contiguous, so out_row_stride is 1
// and out_col_stride is M; for a copy they are N and 1. `permute` plans other strides (plan.h).
// Strides are in elements; kernels move bits, so only the element size matters.
struct Problem {
  void const* src;
  void* dst;
  int64_t rows, cols;
  int64_t row_stride, col_stride;
  int64_t out_row_stride, out_col_stride;
  Batch batch;
  int element_size;  // 1, 2, 4, 8 or 16 bytes
};

// `permute` with small m or n dims (say 16 or 32 elements, less than a tile): each tile side
// takes a second, outer dim, so that a tile is full. Side index i is then (i % inner, i / inner):
// offsets inner_stride * (i % inner) + outer.{in,out}_stride * (i / inner), where inner is the
// Problem's rows (for m) or cols (for n) and inner_stride its stride.
struct Outer {
  int64_t size = 1, in_stride = 0, out_stride = 0;
};

struct SplitProblem {
  Problem problem;  // m and n are the inner dims; the batch excludes the two outer dims
  Outer m, n;
};

}  // namespace cute_transpose
