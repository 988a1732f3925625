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
// The kernels below run this body.
template <class Cfg, bool kPrefetch>
CUTE_DEVICE void tile_transpose_body(Problem const& p) {
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

template <class Cfg, bool kPrefetch>
__global__ void __launch_bounds__(Cfg::kThreads) tile_transpose(Problem p) {
  tile_transpose_body<Cfg, kPrefetch>(p);
}

// The one-tile kernel, capped at 64 registers a thread (four blocks of 256 threads per SM), for
// vectors of one or two elements under 16 bytes. There a thread stores 16-64 V x V blocks, each
// at its own 64-bit address, and left to itself the compiler kept them all live: 128-255
// registers, one or two blocks per SM (Nsight Compute, float32 rows not 16-byte aligned: 232
// registers, 12% occupancy, 34% of DRAM bandwidth). Capped, with no spills, on the H100 (ratio
// to clone): float32 8192^2 one element into its storage 0.67 -> 0.93, bfloat16 0.58 -> 0.89,
// float64 8191^2 0.77 -> 0.82, a rank-5 float32 slice 0.45 -> 0.82; on the tuning grids' shapes
// of these widths (`bench/tune.py --retime ... --remeasure tile`) geomean x1.31 on 4-byte
// elements, x1.05 on 1-byte ones, x1.00 on 2- and 8-byte ones. Not capped: 16-byte elements
// (capped, x0.94 on their tuning shapes), the prefetching variant (capped, it spilled), 16-element
// vectors (uint8, 210-225 registers; capped at 128, large matrices lost 0.01-0.04), and every
// other configuration: even a minimum of one block per SM, which should change nothing, let the
// compiler take 114 registers instead of 64 for float32 in 16-byte vectors, and the tile kernel
// ran at 0.65-0.97 of its speed across the sweep (geomeans by configuration).
template <class Cfg>
constexpr bool tile_capped = Cfg::V <= 2 && sizeof(typename Cfg::T) < 16;

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1024 / Cfg::kThreads) tile_transpose_capped(Problem p) {
  tile_transpose_body<Cfg, false>(p);
}

template <class T, int W, TileShape S>
using TileConfig = VecTile<T, W, tile_dims(sizeof(T), W, S).bm, tile_dims(sizeof(T), W, S).bn,
                           tile_dims(sizeof(T), W, S).threads>;

// The kernel of one configuration: one tile per block, or a persistent grid with prefetch below
// kPersistentBelowWaves waves (tile_config.h). The tile lives in dynamic shared memory, since
// Large tiles of 1-byte elements take 64 KiB, over the 48 KiB that static shared memory allows.
template <class Cfg>
cudaError_t launch_tile_kernel(Problem const& p, cudaStream_t stream) {
  constexpr int kSmemBytes = Cfg::BM * Cfg::CN * int(sizeof(typename Cfg::Vec));
  auto const persistent = tile_transpose<Cfg, true>;
  auto const one_tile = [] {
    if constexpr (tile_capped<Cfg>) return tile_transpose_capped<Cfg>;
    else return tile_transpose<Cfg, false>;
  }();
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

template <class T, int W, TileShape S>
cudaError_t launch_tile_config(Problem const& p, cudaStream_t stream) {
  return launch_keeping_inputs<TileConfig<T, W, S>, W>(
      p.keep_inputs, [&](auto cfg) { return launch_tile_kernel<decltype(cfg)>(p, stream); });
}

// Calls f(std::integral_constant<TileShape, shape>{}) where shape is one of the five shapes the
// chooser scores (kTileShapes: the Tile and Split kernels take them); cudaErrorInvalidValue for
// any other.
template <class F>
cudaError_t with_scored_shape(TileShape shape, F&& f) {
  using S = TileShape;
  switch (shape) {
    case S::Square: return f(std::integral_constant<S, S::Square>{});
    case S::Tall: return f(std::integral_constant<S, S::Tall>{});
    case S::Wide: return f(std::integral_constant<S, S::Wide>{});
    case S::Narrow: return f(std::integral_constant<S, S::Narrow>{});
    case S::Short: return f(std::integral_constant<S, S::Short>{});
    default: return cudaErrorInvalidValue;
  }
}

// Calls f(cute::Int<W>{}) for the vector width W that the chooser picked for elements of type T
// (tile_width, split_width: 16 bytes, 4 bytes for elements under 4 bytes, or one element);
// cudaErrorInvalidValue for any other.
template <class T, class F>
cudaError_t with_tile_width(int width, F&& f) {
  constexpr int E = sizeof(T);
  if (width == 16) return f(cute::Int<16>{});
  if constexpr (E < 4) if (width == 4) return f(cute::Int<4>{});
  if constexpr (E < 16) if (width == E) return f(cute::Int<E>{});
  return cudaErrorInvalidValue;
}

// The widths the chooser picks among (16 bytes, 4 bytes, one element), and every shape, for one
// element type.
template <class T>
cudaError_t launch_tile_for(Problem const& p, int width, TileShape shape, cudaStream_t stream) {
  auto with_shape = [&](auto w) -> cudaError_t {
    constexpr int W = decltype(w)::value;
    switch (shape) {
      case TileShape::Large: return launch_tile_config<T, W, TileShape::Large>(p, stream);
      case TileShape::Column:
        if constexpr (W == int(sizeof(T))) return launch_tile_config<T, W, TileShape::Column>(p, stream);
        else return cudaErrorInvalidValue;
      case TileShape::Small:
        if constexpr (W == small_tile_width(sizeof(T), W)) return launch_tile_config<T, W, TileShape::Small>(p, stream);
        else return cudaErrorInvalidValue;
      default:
        return with_scored_shape(shape, [&](auto tile) { return launch_tile_config<T, W, decltype(tile)::value>(p, stream); });
    }
  };
  return with_tile_width<T>(width, with_shape);
}

cudaError_t launch_tile_e1(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e2(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e4(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e8(Problem const& p, int width, TileShape shape, cudaStream_t stream);
cudaError_t launch_tile_e16(Problem const& p, int width, TileShape shape, cudaStream_t stream);

}  // namespace cute_transpose
