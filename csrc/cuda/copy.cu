// JustCopy: the ceiling. The same tiles, threads and predicates as the transposes, but the
// output keeps the input's shape, so reads and writes both coalesce. A transpose that matches
// this kernel's bandwidth has hidden its data movement completely.
#include "launch.h"
#include "tiling.cuh"

namespace cute_transpose {
namespace {

using namespace cute;

template <class T>
__global__ void __launch_bounds__(SeedTile<T>::kThreads) copy_kernel(Problem p) {
  using Tile = typename SeedTile<T>::Shape;
  using Threads = typename SeedTile<T>::AlongRows;
  Tensor mIn = input_view<T>(p);                                    // (M,N,B)
  Tensor mOut = copy_output_view<T>(p);                             // (M,N,B)
  Tensor cIn = make_identity_tensor(make_shape(p.rows, p.cols));    // (M,N) -> (m,n)

  TileWalk walk(p, size<0>(Tile{}), size<1>(Tile{}));
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk[t];
    Tensor gIn = local_tile(mIn(_, _, tile.b), Tile{}, make_coord(tile.m, tile.n));   // (bM,bN)
    Tensor gOut = local_tile(mOut(_, _, tile.b), Tile{}, make_coord(tile.m, tile.n)); // (bM,bN)
    Tensor cTile = local_tile(cIn, Tile{}, make_coord(tile.m, tile.n));                // (bM,bN)
    copy_tile_part(local_partition(gIn, Threads{}, threadIdx.x),     // (bM/tM,bN/tN)
                   local_partition(gOut, Threads{}, threadIdx.x),    // (bM/tM,bN/tN)
                   local_partition(cTile, Threads{}, threadIdx.x),   // (bM/tM,bN/tN)
                   shape(cIn), tile.interior);
  }
}

}  // namespace

cudaError_t launch_copy(Problem const& p, cudaStream_t stream) {
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    using Tile = SeedTile<T>;
    return launch_over_tiles(copy_kernel<T>, p, Tile::BM::value, Tile::BN::value, Tile::kThreads, stream);
  });
}

}  // namespace cute_transpose
