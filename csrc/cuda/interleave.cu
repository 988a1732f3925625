// The Interleave kernel's entry point (interleave.cuh): one instantiation file per element size
// (interleave_e<E>.cu).
#include "interleave.cuh"

namespace cute_transpose {

cudaError_t launch_interleave(Problem const& p, int channels, bool pack, int width, cudaStream_t stream) {
  switch (p.element_size) {
    case 1: return launch_interleave_e1(p, channels, pack, width, stream);
    case 2: return launch_interleave_e2(p, channels, pack, width, stream);
    case 4: return launch_interleave_e4(p, channels, pack, width, stream);
    case 8: return launch_interleave_e8(p, channels, pack, width, stream);
    case 16: return launch_interleave_e16(p, channels, pack, width, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cute_transpose
