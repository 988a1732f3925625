// The shared-memory transpose shared by bank_conflict_read/write, padded and swizzled. They
// differ only in SmemLayout, the (bM,bN) -> offset map of the tile in shared memory:
//   1. threads along rows read the input tile (coalesced) and store it to shared memory;
//   2. threads down columns load it back and write the output tile (coalesced).
// Both global accesses coalesce; whether the shared-memory side conflicts depends on where
// SmemLayout sends a warp's 32 addresses in each phase.
#pragma once

#include "launch.h"
#include "tiling.cuh"

namespace cute_transpose {

template <class T, class SmemLayout>
__global__ void __launch_bounds__(SeedTile<T>::kThreads) smem_transpose(Problem p) {
  using namespace cute;
  using Tile = typename SeedTile<T>::Shape;
  using AlongRows = typename SeedTile<T>::AlongRows;
  using DownColumns = typename SeedTile<T>::DownColumns;
  CUTE_STATIC_ASSERT_V(shape(SmemLayout{}) == Tile{});

  Tensor sTile = make_tensor(make_smem_ptr(shared_tile<T, cosize_v<SmemLayout>, 128>()),  // (bM,bN)
                             SmemLayout{});
  auto const extent = make_shape(p.rows, p.cols);

  for_each_tile<T>(p, Tile{}, [&](TileCoord const& tile, auto const& gIn, auto const& cTile) {  // (bM,bN)
    Tensor gOut = local_tile(transposed_output_matrix<T>(p, tile.at), Tile{},                  // (bM,bN)
                             make_coord(tile.m, tile.n));

    //
    // 1. global -> shared, threads along rows
    //
    Tensor tIn_g = local_partition(gIn, AlongRows{}, threadIdx.x);    // (bM/tM,bN/tN)
    Tensor tIn_s = local_partition(sTile, AlongRows{}, threadIdx.x);  // (bM/tM,bN/tN)
    Tensor tIn_c = local_partition(cTile, AlongRows{}, threadIdx.x);  // (bM/tM,bN/tN)
    copy_tile_part(tIn_g, tIn_s, tIn_c, extent, tile.interior);
    __syncthreads();

    //
    // 2. shared -> global, threads down columns
    //
    Tensor tOut_s = local_partition(sTile, DownColumns{}, threadIdx.x);  // (bM/32,bN/8)
    Tensor tOut_g = local_partition(gOut, DownColumns{}, threadIdx.x);   // (bM/32,bN/8)
    Tensor tOut_c = local_partition(cTile, DownColumns{}, threadIdx.x);  // (bM/32,bN/8)
    copy_tile_part(tOut_s, tOut_g, tOut_c, extent, tile.interior);
    __syncthreads();  // the next tile reuses sTile
  });
}

// Launches smem_transpose with the layout SmemLayoutOf<T>::type for the problem's element size.
template <template <class> class SmemLayoutOf>
cudaError_t launch_smem_transpose(Problem const& p, cudaStream_t stream) {
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    using Tile = SeedTile<T>;
    return launch_over_tiles(smem_transpose<T, typename SmemLayoutOf<T>::type>, p, Tile::BM::value,
                             Tile::BN::value, Tile::kThreads, stream);
  });
}

// Where the kernel above touches shared memory (SmemAccessMap, launch.h), computed on the host
// from the same SmemLayout and thread partitions as the kernel.
template <template <class> class SmemLayoutOf>
SmemAccessMap smem_access_map(int element_size) {
  using namespace cute;
  SmemAccessMap map;
  with_element_type(element_size, [&](auto t) {
    using T = decltype(t);
    using Tile = typename SeedTile<T>::Shape;
    using Smem = typename SmemLayoutOf<T>::type;
    auto const bytes = [](auto coord) { return int64_t(Smem{}(coord)) * int64_t(sizeof(T)); };
    auto const warp = [&](auto threads, std::vector<int64_t>& out) {
      int const steps = size(local_partition(make_identity_tensor(Tile{}), threads, 0));
      out.assign(size_t(steps) * 32, 0);
      for (int lane = 0; lane < 32; ++lane) {
        Tensor coords = local_partition(make_identity_tensor(Tile{}), threads, lane);
        for (int i = 0; i < steps; ++i) out[size_t(i) * 32 + lane] = bytes(coords(i));
      }
    };
    warp(typename SeedTile<T>::AlongRows{}, map.store);
    warp(typename SeedTile<T>::DownColumns{}, map.load);
    map.element_size = sizeof(T);
    map.rows = size<0>(Tile{});
    map.cols = size<1>(Tile{});
    for (int m = 0; m < map.rows; ++m)
      for (int n = 0; n < map.cols; ++n) map.tile.push_back(bytes(make_coord(m, n)));
    return cudaSuccess;
  });
  return map;
}

}  // namespace cute_transpose
