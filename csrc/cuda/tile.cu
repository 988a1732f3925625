// The Tile kernel's entry point: one instantiation file per element size (tile_e<E>.cu).
#include "tile_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_tile(Problem const& p, int width, TileShape shape, cudaStream_t stream) {
  switch (p.element_size) {
    case 1: return launch_tile_e1(p, width, shape, stream);
    case 2: return launch_tile_e2(p, width, shape, stream);
    case 4: return launch_tile_e4(p, width, shape, stream);
    case 8: return launch_tile_e8(p, width, shape, stream);
    case 16: return launch_tile_e16(p, width, shape, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cute_transpose
