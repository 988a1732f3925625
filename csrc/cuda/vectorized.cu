// The `transpose` op's kernel: the vectorized shared-memory transpose (vector_tile.cuh),
// each tile's V x V blocks going straight from registers to global memory.
#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

using namespace cute;

// kPrefetch: a persistent block loads its next tile while it writes out the current one. That
// costs registers (occupancy), so it pays only when there are few tiles per resident block.
template <class Cfg, bool kPrefetch>
__global__ void __launch_bounds__(Cfg::kThreads) vectorized_transpose(Problem p) {
  using Vec = typename Cfg::Vec;
  using OutTile = Shape<Int<Cfg::BN>, Int<Cfg::CM>>;  // output tile, in vectors along m
  Tensor cOut = make_identity_tensor(make_shape(p.cols, p.rows / Cfg::V));           // (N,M/V)
  Tensor sTile = make_tensor(make_smem_ptr(shared_tile<Vec, Cfg::BM * Cfg::CN, 128>()),  // (BM,CN)
                             typename Cfg::Smem{});
  // With kPrefetch, phase 1 stages this thread's vectors in registers.
  Tensor tIn_s = local_partition(sTile, typename Cfg::LoadThreads{}, threadIdx.x);    // (BM/(T/CN),1)
  Tensor rIn = make_tensor<Vec>(shape(tIn_s));                                        // (BM/(T/CN),1)

  TileWalk walk(p, Cfg::BM, Cfg::BN);
  if (kPrefetch && blockIdx.x < walk.count) load_tile<Cfg>(p, walk(blockIdx.x, p.batch), rIn);
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk(t, p.batch);
    //
    // 1. global -> shared (with kPrefetch: registers -> shared, then prefetch the next tile)
    //
    if constexpr (kPrefetch) {
      copy(rIn, tIn_s);  // lanes outside the matrix hold stale data, which is never stored
    } else {
      load_tile<Cfg>(p, tile, tIn_s);
    }
    __syncthreads();
    if (kPrefetch && t + gridDim.x < walk.count) load_tile<Cfg>(p, walk(t + gridDim.x, p.batch), rIn);

    //
    // 2. shared -> registers -> transposed V x V blocks -> global
    //
    Tensor gOut = local_tile(output_vectors<Cfg>(p, tile.at), OutTile{}, make_coord(tile.n, tile.m));  // (BN,CM)
    Tensor cTile = local_tile(cOut, OutTile{}, make_coord(tile.n, tile.m));               // (BN,CM)
    transpose_blocks<Cfg>(sTile, [&](int n, int mv, Vec const& v) {
      if (tile.interior || elem_less(cTile(n, mv), shape(cOut))) gOut(n, mv) = v;
    });
    __syncthreads();  // the next tile reuses sTile
  }
}

// The launch rule: with many tiles per resident block (8 waves or more), one tile per block and
// no prefetch; with fewer, a persistent grid with prefetch, which also evens out the last wave.
template <class T, int W>
cudaError_t launch_with(Problem const& p, cudaStream_t stream) {
  using Cfg = typename FastConfig<T, W>::type;
  int64_t const tiles = TileWalk(p, Cfg::BM, Cfg::BN).count;
  static int const per_sm = blocks_per_sm(vectorized_transpose<Cfg, true>, Cfg::kThreads);  // asked once
  dim3 const resident = persistent_grid(per_sm, tiles);
  if (tiles >= 8 * int64_t(resident.x)) {
    vectorized_transpose<Cfg, false><<<TileWalk(p, Cfg::BM, Cfg::BN).grid(), Cfg::kThreads, 0, stream>>>(p);
  } else {
    vectorized_transpose<Cfg, true><<<resident, Cfg::kThreads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace

int vectorized_width(Problem const& p) {
  return widest_vector(p.element_size, [&](int W) { return fits_vectors(p, W); });
}

cudaError_t launch_vectorized(Problem const& p, int width, cudaStream_t stream) {
  return with_vector_width(p.element_size, width, [&](auto t, auto w) {
    return launch_with<decltype(t), decltype(w)::value>(p, stream);
  });
}

}  // namespace cute_transpose
