// The Tile kernel for 8-byte elements (tile_transpose.cuh).
#include "tile_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_tile_e8(Problem const& p, int width, TileShape shape, cudaStream_t stream) {
  return launch_tile_for<uint64_t>(p, width, shape, stream);
}

}  // namespace cute_transpose
