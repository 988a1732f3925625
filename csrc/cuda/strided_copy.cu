// The Rows kernel, for the copy route: the output's innermost dim is also the input's tightest,
// so no element changes its place within a row -- the op is a batched strided copy of rows. Threads
// walk the output in order (it is contiguous), each moving W-byte vectors: the output offset of
// vector i is i, and its input offset comes from splitting i into (n / V, m, batch...) with
// precomputed fast dividers.
#include <cutlass/fast_math.h>

#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

// Vector index -> input offset, both in vectors. Dims innermost first: n / V, m, then the batch
// dims from the innermost out.
struct Gather {
  static constexpr int kMaxRank = Batch::kMaxRank + 2;
  int rank = 0;
  cutlass::FastDivmodU64 size[kMaxRank];
  int64_t stride[kMaxRank] = {};

  void add(int64_t n, int64_t in_stride) {
    size[rank] = cutlass::FastDivmodU64(uint64_t(n));
    stride[rank++] = in_stride;
  }

  CUTE_DEVICE int64_t operator()(uint64_t i) const {
    int64_t offset = 0;
    CUTE_UNROLL
    for (int d = 0; d < kMaxRank; ++d) {
      if (d < rank) {
        uint64_t coord = i;  // the outermost dim needs no division: i < its size
        if (d + 1 < rank) i = size[d].divmod(coord, i);
        offset += int64_t(coord) * stride[d];
      }
    }
    return offset;
  }
};

constexpr int kThreads = 256;
constexpr int kItems = 4;  // vectors per thread in flight: all loads, then all stores

template <class Vec>
__global__ void __launch_bounds__(kThreads) strided_copy(Vec const* src, Vec* dst, Gather gather, uint64_t total) {
  uint64_t const step = uint64_t(gridDim.x) * kThreads * kItems;
  for (uint64_t base = uint64_t(blockIdx.x) * kThreads * kItems + threadIdx.x; base < total; base += step) {
    Vec v[kItems];
    CUTE_UNROLL
    for (int k = 0; k < kItems; ++k)
      if (base + k * kThreads < total) v[k] = src[gather(base + k * kThreads)];
    CUTE_UNROLL
    for (int k = 0; k < kItems; ++k)
      if (base + k * kThreads < total) dst[base + k * kThreads] = v[k];
  }
}

template <class Vec>
cudaError_t launch_rows_of(Problem const& p, cudaStream_t stream) {
  int64_t const V = int64_t(sizeof(Vec)) / p.element_size;  // elements per vector
  Gather gather;
  gather.add(p.cols / V, p.col_stride);  // V > 1 only where col_stride is 1
  gather.add(p.rows, p.row_stride / V);
  for (int d = p.batch.rank - 1; d >= 0; --d) gather.add(p.batch.size[d], p.batch.in_stride[d] / V);
  uint64_t const total = uint64_t(p.batch.count) * p.rows * (p.cols / V);
  uint64_t const blocks = (total + kThreads * kItems - 1) / (kThreads * kItems);
  strided_copy<Vec><<<unsigned(blocks < INT_MAX ? blocks : INT_MAX), kThreads, 0, stream>>>(
      static_cast<Vec const*>(p.src), static_cast<Vec*>(p.dst), gather, total);
  return cudaGetLastError();
}

}  // namespace

// The chooser (choose.cpp) checked that the rows move in `width`-byte vectors and that the
// output is the contiguous (batch..., M, N) tensor.
cudaError_t launch_rows(Problem const& p, int width, cudaStream_t stream) {
  if (width > p.element_size) {
    switch (width) {
      case 16: return launch_rows_of<Words<16>>(p, stream);
      case 8: return launch_rows_of<Words<8>>(p, stream);
      case 4: return launch_rows_of<Words<4>>(p, stream);
    }
  }
  return with_element_type(p.element_size, [&](auto t) { return launch_rows_of<decltype(t)>(p, stream); });
}

}  // namespace cute_transpose
