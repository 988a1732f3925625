// The Interleave kernel for 4-byte elements (interleave.cuh).
#include "interleave.cuh"

namespace cute_transpose {

cudaError_t launch_interleave_e4(Problem const& p, int channels, bool pack, int width, cudaStream_t stream) {
  return launch_interleave_for<uint32_t>(p, channels, pack, width, stream);
}

}  // namespace cute_transpose
