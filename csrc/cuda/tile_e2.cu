// The Tile kernel for 2-byte elements (tile_transpose.cuh).
#include "tile_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_tile_e2(Problem const& p, int width, TileShape shape, cudaStream_t stream) {
  return launch_tile_for<uint16_t>(p, width, shape, stream);
}

}  // namespace cute_transpose
