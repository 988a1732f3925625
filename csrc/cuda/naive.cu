// Naive transposes: global memory only, each thread moves its elements straight from the input
// tile to the output tile. One of the two global accesses must be strided; the thread layout
// decides which:
//   naive_coalesced_read   threads along rows     -> reads coalesce, writes stride by M
//   naive_coalesced_write  threads down columns   -> writes coalesce, reads stride by the row pitch
// The two launchers differ in one line: the thread layout they pass.
#include "launch.h"
#include "tiling.cuh"

namespace cute_transpose {
namespace {

using namespace cute;

template <class T, class Threads>
__global__ void __launch_bounds__(SeedTile<T>::kThreads) naive_transpose(Problem p) {
  using Tile = typename SeedTile<T>::Shape;
  Tensor mIn = input_view<T>(p);                                    // (M,N,B)
  Tensor mOut = transposed_output_view<T>(p);                       // (M,N,B)
  Tensor cIn = make_identity_tensor(make_shape(p.rows, p.cols));    // (M,N) -> (m,n)

  TileWalk walk(p, size<0>(Tile{}), size<1>(Tile{}));
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk[t];
    Tensor gIn = local_tile(mIn(_, _, tile.b), Tile{}, make_coord(tile.m, tile.n));   // (bM,bN)
    Tensor gOut = local_tile(mOut(_, _, tile.b), Tile{}, make_coord(tile.m, tile.n)); // (bM,bN)
    Tensor cTile = local_tile(cIn, Tile{}, make_coord(tile.m, tile.n));                // (bM,bN)

    Tensor tIn = local_partition(gIn, Threads{}, threadIdx.x);    // (bM/tM,bN/tN)
    Tensor tOut = local_partition(gOut, Threads{}, threadIdx.x);  // (bM/tM,bN/tN)
    Tensor tC = local_partition(cTile, Threads{}, threadIdx.x);   // (bM/tM,bN/tN)
    copy_tile_part(tIn, tOut, tC, shape(cIn), tile.interior);
  }
}

template <template <class> class ThreadsOf>
cudaError_t launch_naive(Problem const& p, cudaStream_t stream) {
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    using Tile = SeedTile<T>;
    return launch_over_tiles(naive_transpose<T, typename ThreadsOf<T>::type>, p, Tile::BM::value,
                             Tile::BN::value, Tile::kThreads, stream);
  });
}

template <class T> struct RowThreads { using type = typename SeedTile<T>::AlongRows; };
template <class T> struct ColumnThreads { using type = typename SeedTile<T>::DownColumns; };

}  // namespace

cudaError_t launch_naive_coalesced_read(Problem const& p, cudaStream_t s) { return launch_naive<RowThreads>(p, s); }
cudaError_t launch_naive_coalesced_write(Problem const& p, cudaStream_t s) { return launch_naive<ColumnThreads>(p, s); }

}  // namespace cute_transpose
