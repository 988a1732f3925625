// The Gather kernel: any permute, written in the output's order with no tile. The output
// (contiguous) is cut into 16-byte vectors, one per thread and step; each element of a vector is
// read on its own, at the input offset of its coordinates. The first element's coordinates come
// from dividing its index by the dims' sizes; the next ones step through the dims like an
// odometer -- an add and a compare per element, a carry where a dim wraps (IndexWalk,
// index_walk.cuh). All of a thread's loads are issued before its stores. (Lanes on consecutive
// elements instead, as in ATen's copy, regrouped into vectors through shared memory, ran 0.90 x
// as fast on the H100 where consecutive output elements lie a few dozen bytes apart in the input:
// docs/PERFORMANCE.md, "Which lane loads which element".)
//
// What it is for: shapes a tile cannot fill. Where the output's innermost dim is a few elements,
// or the input is broadcast (a dim of input stride 0), a tile stages mostly nothing, while reads
// that land near each other are served by L1 and L2 and the writes still leave in full vectors.
// ATen's own strided copy also reads element by element, but writes one element per access and
// divides every element's index through every dim.
#include "index_walk.cuh"
#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

// Items vectors per thread in flight, over the stretches `order` gives the block (Together: in
// the neighbours-together order). Vec holds V = sizeof(Vec) / sizeof(T) elements; the output's
// last `total % V` elements (after the whole vectors) are written one by one by block 0.
template <class T, class Vec, class Index, int Threads, int Items, bool Together>
__global__ void __launch_bounds__(Threads)
    gather(T const* src, T* dst, IndexWalk<Index> walk, BlockOrder order, Index total) {
  constexpr int V = sizeof(Vec) / sizeof(T);
  constexpr int kMaxRank = IndexWalk<Index>::kMaxRank;
  Index const vectors = total / V;
  if (blockIdx.x == 0 && Index(threadIdx.x) < total - vectors * V) {
    Index coord[kMaxRank];
    Index const e = vectors * V + Index(threadIdx.x);
    dst[e] = src[walk.start(e, coord)];
  }
  Index first, last, step;
  order.span<Together>(Index(Threads * Items), vectors, first, last, step);
  for (Index base = first + Index(threadIdx.x); base < last; base += step) {
    Vec v[Items];
    CUTE_UNROLL
    for (int k = 0; k < Items; ++k) {
      Index const i = base + k * Threads;
      if (i < last) {
        Index coord[kMaxRank];
        int64_t at = walk.start(i * V, coord);
        T e[V];
        CUTE_UNROLL
        for (int j = 0; j < V; ++j) {
          e[j] = src[at];
          if (j + 1 < V) walk.step(coord, at);
        }
        memcpy(&v[k], e, sizeof(Vec));
      }
    }
    CUTE_UNROLL
    for (int k = 0; k < Items; ++k)
      if (base + k * Threads < last) reinterpret_cast<Vec*>(dst)[base + k * Threads] = v[k];
  }
}

template <class T, class Vec, class Index, int Items>
cudaError_t launch_gather_items(IndexWalk<Index> const& walk, Problem const& p, uint64_t total, bool together,
                                cudaStream_t stream) {
  constexpr int kThreads = 256, V = sizeof(Vec) / sizeof(T);
  uint64_t const per_block = uint64_t(kThreads) * Items * V;
  BlockOrder const order = together ? neighbours_together(p, V, kThreads * Items, total / V) : BlockOrder{};
  uint64_t const blocks = order.n > 1 ? order.blocks : std::max<uint64_t>(1, (total + per_block - 1) / per_block);
  auto const kernel =
      order.n > 1 ? gather<T, Vec, Index, kThreads, Items, true> : gather<T, Vec, Index, kThreads, Items, false>;
  kernel<<<unsigned(blocks < INT_MAX ? blocks : INT_MAX), kThreads, 0, stream>>>(
      static_cast<T const*>(p.src), static_cast<T*>(p.dst), walk, order, Index(total));
  return cudaGetLastError();
}

// 256 threads, each with 16 (4-byte and wider elements) or 32 (narrower) loads in flight; or
// one vector each where that would leave the GPU less than one full wave of threads: then a
// thread per vector keeps more loads in flight at once (a few megabytes of output).
template <class T, class Vec, class Index>
cudaError_t launch_gather_with(Problem const& p, uint64_t total, bool together, cudaStream_t stream) {
  constexpr int V = sizeof(Vec) / sizeof(T), kLoads = sizeof(T) >= 4 ? 16 : 32;
  constexpr int kItems = kLoads / V > 1 ? kLoads / V : 1;
  IndexWalk<Index> walk;
  walk.add(p.cols, p.col_stride);
  walk.add(p.rows, p.row_stride);
  for (int d = p.batch.rank - 1; d >= 0; --d) walk.add(p.batch.size[d], p.batch.in_stride[d]);
  uint64_t const wave = uint64_t(sm_count()) * 2048;  // threads resident at once (2048 per SM)
  if (kItems > 1 && total / V < wave * kItems)
    return launch_gather_items<T, Vec, Index, 1>(walk, p, total, together, stream);
  return launch_gather_items<T, Vec, Index, kItems>(walk, p, total, together, stream);
}

template <class T, class Vec>
cudaError_t launch_gather_of(Problem const& p, bool together, cudaStream_t stream) {
  uint64_t const total = uint64_t(p.batch.count) * p.rows * p.cols;
  // counted in elements (the index the walk starts from), which bounds the vectors too
  if (total < kIntWalkLimit) return launch_gather_with<T, Vec, int>(p, total, together, stream);
  return launch_gather_with<T, Vec, uint64_t>(p, total, together, stream);
}

}  // namespace

// The chooser (choose.cpp) checked that the output is the contiguous (batch..., M, N) tensor and
// that it starts on a 16-byte boundary (width 16).
cudaError_t launch_gather(Problem const& p, int width, bool together, cudaStream_t stream) {
  if (width != 16) return cudaErrorInvalidValue;
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    return launch_gather_of<T, cute::conditional_t<sizeof(T) < 16, Words<16>, T>>(p, together, stream);
  });
}

}  // namespace cute_transpose
