// The Lanes kernel: any permute, written in the output's order the way ATen's strided copy writes
// it -- lane i of a block on output element i, one element per access -- but with each thread's
// two loads issued before either store, loads through the read-only path, and the index split
// into coordinates by precomputed fast dividers (IndexWalk, index_walk.cuh), 32-bit ones below
// 2^30 elements. On small work a call's time is a few memory round trips rather than bandwidth.
// Over 71 small 2-D transposes with a side of 2-8 elements on the H100 (the sweep's short cells
// and random ones; kernel time from a profiler trace, L2 flushed), this kernel took 0.77 of ATen's
// copy's time (geomean, 0.99 x at the most) and 0.73 of gather's, whose 16-byte stores leave
// fewer threads, each with more loads in a row (docs/PERFORMANCE.md, "Small work in lanes").
//
// What it is for: small 2-D transposes that no tile, row or interleave kernel takes, which ATen's
// copy ran before (choose.cpp, small_lanes).
#include "index_walk.cuh"
#include "launch.h"

namespace cute_transpose {
namespace {

// Items elements per thread, Threads apart: a block covers Threads * Items consecutive output
// elements, lanes on consecutive elements, and the grid covers the output once. TwoDims: the
// walk has exactly two dims (one division an element, no loop over dims).
template <class T, class Index, bool TwoDims, int Threads, int Items>
__global__ void __launch_bounds__(Threads)
    lanes(T const* __restrict__ src, T* __restrict__ dst, IndexWalk<Index> walk, Index total) {
  Index const base = Index(blockIdx.x) * (Threads * Items) + Index(threadIdx.x);
  T v[Items];
  CUTE_UNROLL
  for (int k = 0; k < Items; ++k) {
    Index const i = base + k * Threads;
    if (i < total) v[k] = src[TwoDims ? walk.offset_of_two(i) : walk(i)];
  }
  CUTE_UNROLL
  for (int k = 0; k < Items; ++k)
    if (base + k * Threads < total) dst[base + k * Threads] = v[k];
}

// 256 threads of two elements each: of 1, 2, 4 or 8 elements a thread in blocks of 128 or 256, in
// a standalone probe of this form over 74 small 2-D transposes, this ran fastest (4 x 128: 1.01 x
// its time, 2 x 128: 1.07 x, 1 x 128: 1.21 x; in blocks of 128, two elements loaded and stored in
// turn: 1.02 x the same loaded first).
template <class T, class Index>
cudaError_t launch_lanes_with(Problem const& p, uint64_t total, cudaStream_t stream) {
  constexpr int kThreads = 256, kItems = 2;
  IndexWalk<Index> walk;  // dims innermost first: n, m, then the batch dims from the innermost out
  walk.add(p.cols, p.col_stride);
  walk.add(p.rows, p.row_stride);
  for (int d = p.batch.rank - 1; d >= 0; --d) walk.add(p.batch.size[d], p.batch.in_stride[d]);
  uint64_t const blocks = (total + kThreads * kItems - 1) / (kThreads * kItems);
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;  // 2^40 elements: more than any GPU holds
  auto const kernel =
      walk.rank == 2 ? lanes<T, Index, true, kThreads, kItems> : lanes<T, Index, false, kThreads, kItems>;
  kernel<<<unsigned(blocks), kThreads, 0, stream>>>(static_cast<T const*>(p.src), static_cast<T*>(p.dst), walk,
                                                    Index(total));
  return cudaGetLastError();
}

}  // namespace

// The chooser (choose.cpp) checked that the output is the contiguous (batch..., M, N) tensor.
cudaError_t launch_lanes(Problem const& p, cudaStream_t stream) {
  uint64_t const total = uint64_t(p.batch.count) * p.rows * p.cols;
  if (total == 0) return cudaSuccess;
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    if (total < kIntWalkLimit) return launch_lanes_with<T, int>(p, total, stream);
    return launch_lanes_with<T, uint64_t>(p, total, stream);
  });
}

}  // namespace cute_transpose
