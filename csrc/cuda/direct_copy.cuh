// Global memory only: each thread moves its elements of a tile straight from the input to the
// output. With the output viewed transposed, this is the naive transpose; with the output in the
// input's own layout, it is the plain copy that marks the seed kernels' ceiling.
#pragma once

#include "tiling.cuh"

namespace cute_transpose {

template <class T, class Threads, bool kTranspose>
__global__ void __launch_bounds__(SeedTile<T>::kThreads) direct_copy(Problem p) {
  using namespace cute;
  using Tile = typename SeedTile<T>::Shape;
  for_each_tile<T>(p, Tile{}, [&](TileCoord const& tile, auto const& gIn, auto const& cTile) {  // (bM,bN)
    auto const mOut = [&] {
      if constexpr (kTranspose) return transposed_output_matrix<T>(p, tile.at);  // (M,N) : (1,M)
      else return copy_output_matrix<T>(p, tile.at);                             // (M,N) : (N,1)
    }();
    Tensor gOut = local_tile(mOut, Tile{}, make_coord(tile.m, tile.n));  // (bM,bN)
    copy_tile_part(local_partition(gIn, Threads{}, threadIdx.x),     // (bM/tM,bN/tN)
                   local_partition(gOut, Threads{}, threadIdx.x),    // (bM/tM,bN/tN)
                   local_partition(cTile, Threads{}, threadIdx.x),   // (bM/tM,bN/tN)
                   make_shape(p.rows, p.cols), tile.interior);
  });
}

// Launches direct_copy with ThreadsOf<T>::type for the problem's element size.
template <template <class> class ThreadsOf, bool kTranspose>
cudaError_t launch_direct_copy(Problem const& p, cudaStream_t stream) {
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    using Tile = SeedTile<T>;
    return launch_over_tiles(direct_copy<T, typename ThreadsOf<T>::type, kTranspose>, p, Tile::BM::value,
                             Tile::BN::value, Tile::kThreads, stream);
  });
}

template <class T> struct RowThreads { using type = typename SeedTile<T>::AlongRows; };
template <class T> struct ColumnThreads { using type = typename SeedTile<T>::DownColumns; };

}  // namespace cute_transpose
