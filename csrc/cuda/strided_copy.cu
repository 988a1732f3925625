// The Rows kernel, for the copy route: the output's innermost dim is also the input's tightest,
// so no element changes its place within a row -- the op is a batched strided copy of rows. Threads
// walk the output in order (it is contiguous), each moving W-byte vectors: the output offset of
// vector i is i, and its input offset comes from splitting i into (n / V, m, batch...) with
// precomputed fast dividers -- 32-bit ones when the tensor has fewer than 2^30 vectors.
#include "index_walk.cuh"
#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

// Items vectors per thread in flight: all loads, then all stores. A block moves Threads * Items
// consecutive vectors per step, over the stretches `order` gives it (Together: in the
// neighbours-together order).
template <class Vec, class Index, int Threads, int Items, bool Together>
__global__ void __launch_bounds__(Threads)
    strided_copy(Vec const* src, Vec* dst, IndexWalk<Index> walk, BlockOrder order, Index total) {
  Index first, last, step;
  order.span<Together>(Index(Threads * Items), total, first, last, step);
  for (Index base = first + Index(threadIdx.x); base < last; base += step) {
    Vec v[Items];
    CUTE_UNROLL
    for (int k = 0; k < Items; ++k)
      if (base + k * Threads < last) v[k] = src[walk(base + k * Threads)];
    CUTE_UNROLL
    for (int k = 0; k < Items; ++k)
      if (base + k * Threads < last) dst[base + k * Threads] = v[k];
  }
}

// `total`: the vectors to copy, (batch..., M, N / V).
template <class Vec, class Index, int Threads, int Items>
cudaError_t launch_rows_with(Problem const& p, uint64_t total, bool together, cudaStream_t stream) {
  int64_t const V = int64_t(sizeof(Vec)) / p.element_size;  // elements per vector
  IndexWalk<Index> walk;  // dims innermost first: n / V, m, then the batch dims from the innermost out
  walk.add(p.cols / V, p.col_stride);  // V > 1 only where col_stride is 1
  walk.add(p.rows, p.row_stride / V);
  for (int d = p.batch.rank - 1; d >= 0; --d) walk.add(p.batch.size[d], p.batch.in_stride[d] / V);
  BlockOrder const order = together ? neighbours_together(p, V, Threads * Items, total) : BlockOrder{};
  uint64_t const blocks = order.n > 1 ? order.blocks : (total + Threads * Items - 1) / (Threads * Items);
  auto const kernel =
      order.n > 1 ? strided_copy<Vec, Index, Threads, Items, true> : strided_copy<Vec, Index, Threads, Items, false>;
  kernel<<<unsigned(blocks < INT_MAX ? blocks : INT_MAX), Threads, 0, stream>>>(
      static_cast<Vec const*>(p.src), static_cast<Vec*>(p.dst), walk, order, Index(total));
  return cudaGetLastError();
}

// 16-byte vectors: 512 threads of two each; narrower ones: 256 threads of four. Measured on the
// H100 over 29 copy-route permutes (ratio to clone; docs/PERFORMANCE.md, "The rows kernel"):
// with 16-byte vectors, 512 x 2 ran -0.4% to +2.6% against 256 x 4 (geomean +1.1%; complex128
// rows 0.979-1.004 -> 0.992-1.019, where ATen's copy ran 0.985-1.011); with 8-byte or narrower
// accesses it lost 1.5-7% (a float32 stepped slice 0.676 -> 0.628). 32-bit indices against
// 64-bit ones: -0.3% to +0.8%, geomean +0.2%.
//
// On the H200, 16-byte vectors run blocks of 128 x 2 (Device::rows_threads, choose.cpp's
// device_rules): large row copies ran 0.959-0.974 -> 0.985-1.000 of clone there.
//
// Small copies take smaller blocks, so that every SM gets some: the first of 256 x 2, 128 x 2
// and 128 x 1 that makes kRowsBlocksPerSm blocks per SM, or else the last. A copy of 96K
// vectors (BERT-base heads, (8, 128, 12, 64) float16) made 96 blocks of 512 x 2 for 132 SMs.
// On the H100 (docs/PERFORMANCE.md, "Small row copies"), over 171 copy-route shapes of 2^14-2^27
// elements, the 53 shapes this rule changes ran 1.07 x faster (geomean), 41 more than 3% faster,
// 3 more than 3% slower; where the default made 2-16 blocks per SM, 256 x 2 and 128 x 2 ran
// 1.001 x and 1.006 x, from 16 up 0.978 x and 0.982 x.
constexpr int kRowsBlocksPerSm = 2;

// `max_threads` (Device::rows_threads; 0: no cap) caps 16-byte vectors' blocks: the ladder
// above starts at the first block that fits under it.
template <class Vec>
cudaError_t launch_rows_of(Problem const& p, int max_threads, bool together, cudaStream_t stream) {
  constexpr bool kWide = sizeof(Vec) == 16;
  constexpr int kThreads = kWide ? 512 : 256, kItems = kWide ? 2 : 4;
  int const cap = kWide && max_threads > 0 ? max_threads : kThreads;
  uint64_t const total = uint64_t(p.batch.count) * p.rows * (p.cols / (int64_t(sizeof(Vec)) / p.element_size));
  if (total >= kIntWalkLimit) return launch_rows_with<Vec, uint64_t, kThreads, kItems>(p, total, together, stream);
  uint64_t const blocks = uint64_t(kRowsBlocksPerSm) * sm_count();  // the fewest for a full launch
  if (cap >= kThreads && total >= blocks * kThreads * kItems)
    return launch_rows_with<Vec, int, kThreads, kItems>(p, total, together, stream);
  if (cap >= 256 && total >= blocks * 256 * 2) return launch_rows_with<Vec, int, 256, 2>(p, total, together, stream);
  if (total >= blocks * 128 * 2) return launch_rows_with<Vec, int, 128, 2>(p, total, together, stream);
  return launch_rows_with<Vec, int, 128, 1>(p, total, together, stream);
}

}  // namespace

// The chooser (choose.cpp) checked that the rows move in `width`-byte vectors and that the
// output is the contiguous (batch..., M, N) tensor.
cudaError_t launch_rows(Problem const& p, int width, int max_threads, bool together, cudaStream_t stream) {
  if (width > p.element_size) {
    switch (width) {
      case 16: return launch_rows_of<Words<16>>(p, max_threads, together, stream);
      case 8: return launch_rows_of<Words<8>>(p, max_threads, together, stream);
      case 4: return launch_rows_of<Words<4>>(p, max_threads, together, stream);
    }
  }
  return with_element_type(p.element_size,
                           [&](auto t) { return launch_rows_of<decltype(t)>(p, max_threads, together, stream); });
}

}  // namespace cute_transpose
