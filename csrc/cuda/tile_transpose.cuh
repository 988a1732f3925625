// The Tile kernel: the vectorized shared-memory transpose (vector_tile.cuh), each tile's V x V
// blocks going straight from registers to global memory. The chooser picks the vector width W
// (16, 8, 4, 2 or 1 bytes) and the tile shape (tile_config.h); tile_e<E>.cu instantiate it for
// each element size, so the five compile in parallel.
#pragma once

#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {

// kPrefetch: a persistent block loads its next tile while it writes out the current one. That
// costs registers (occupancy), so it pays only when there are few tiles per resident block.
template <class Cfg, bool kPrefetch>
__global__ void __launch_bounds__(Cfg::kThreads) tile_transpose(Problem p) {
  using namespace cute;
  using Vec = typename Cfg::Vec;
  using OutTile = Shape<Int<Cfg::BN>, Int<Cfg::CM>>;  // output tile, in vectors along m
  Tensor cOut = make_identity_tensor(make_shape(p.cols, p.rows / Cfg::V));              // (N,M/V)
  extern __shared__ __align__(128) unsigned char tile_smem[];  // kSmemBytes, launch_tile_config
  Tensor sTile = make_tensor(make_smem_ptr(reinterpret_cast<Vec*>(tile_smem)), typename Cfg::Smem{});  // (BM,CN)
  // With kPrefetch, phase 1 stages this thread's vectors in registers.
  Tensor tIn_s = local_partition(sTile, typename Cfg::LoadThreads{}, threadIdx.x);     // (BM/(T/CN),1)
  Tensor rIn = make_tensor<Vec>(shape(tIn_s));                                         // (BM/(T/CN),1)

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
    Tensor cTile = local_tile(cOut, OutTile{}, make_coord(tile.n, tile.m));                // (BN,CM)
    transpose_blocks<Cfg>(sTile, [&](int n, int mv, Vec const& v) {
      if (tile.interior || elem_less(cTile(n, mv), shape(cOut))) gOut(n, mv) = v;
    });
    __syncthreads();  // the next tile reuses sTile
  }
}

template <class T, int W, TileShape S>
using TileConfig = VecTile<T, W, tile_dims(sizeof(T), W, S).bm, tile_dims(sizeof(T), W, S).bn,
                           tile_dims(sizeof(T), W, S).threads>;

// One tile per block, or a persistent grid with prefetch below kPersistentBelowWaves waves
// (tile_config.h). The tile lives in dynamic shared memory, since Large tiles of 1-byte elements
// take 64 KiB, over the 48 KiB that static shared memory allows.
template <class T, int W, TileShape S>
cudaError_t launch_tile_config(Problem const& p, cudaStream_t stream) {
  using Cfg = TileConfig<T, W, S>;
  constexpr int kSmemBytes = Cfg::BM * Cfg::CN * int(sizeof(typename Cfg::Vec));
  auto const one_tile = tile_transpose<Cfg, false>, persistent = tile_transpose<Cfg, true>;
  if constexpr (kSmemBytes > 48 * 1024) {  // the opt-in, per device
    for (auto kernel : {one_tile, persistent})
      if (cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
          err != cudaSuccess)
        return err;
  }
  TileWalk const walk(p, Cfg::BM, Cfg::BN);
  static int const per_sm = blocks_per_sm(persistent, Cfg::kThreads, kSmemBytes);  // asked once
  dim3 const resident = persistent_grid(per_sm, walk.count);
  if (walk.count >= kPersistentBelowWaves * int64_t(resident.x)) {
    one_tile<<<walk.grid(), Cfg::kThreads, kSmemBytes, stream>>>(p);
  } else {
    persistent<<<resident, Cfg::kThreads, kSmemBytes, stream>>>(p);
  }
  return cudaGetLastError();
}

// The widths the chooser picks among (16 bytes, 4 bytes, one element), and every shape, for one
// element type.
template <class T>
cudaError_t launch_tile_for(Problem const& p, int width, TileShape shape, cudaStream_t stream) {
  auto with_shape = [&](auto w) -> cudaError_t {
    constexpr int W = decltype(w)::value;
    switch (shape) {
      case TileShape::Tall: return launch_tile_config<T, W, TileShape::Tall>(p, stream);
      case TileShape::Wide: return launch_tile_config<T, W, TileShape::Wide>(p, stream);
      case TileShape::Narrow: return launch_tile_config<T, W, TileShape::Narrow>(p, stream);
      case TileShape::Short: return launch_tile_config<T, W, TileShape::Short>(p, stream);
      case TileShape::Large: return launch_tile_config<T, W, TileShape::Large>(p, stream);
      default: return launch_tile_config<T, W, TileShape::Square>(p, stream);
    }
  };
  constexpr int E = sizeof(T);
  if (width == 16) return with_shape(cute::Int<16>{});
  if constexpr (E < 4) if (width == 4) return with_shape(cute::Int<4>{});
  if constexpr (E < 16) if (width == E) return with_shape(cute::Int<E>{});
  return cudaErrorInvalidValue;
}

cudaError_t launch_tile_e1(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e2(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e4(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e8(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e16(Problem const& p, int width, TileShape shape, cudaStream_t stream);

}  // namespace cute_transpose
