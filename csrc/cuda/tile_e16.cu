// The Tile kernel for 16-byte elements (tile_transpose.cuh).
#include "tile_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_tile_e16(Problem const& p, int width, TileShape shape, cudaStream_t stream) {
  return launch_tile_for<cute::uint128_t>(p, width, shape, stream);
}

}  // namespace cute_transpose
