// The Interleave kernel for 8-byte elements (interleave.cuh).
#include "interleave.cuh"

namespace cute_transpose {

cudaError_t launch_interleave_e8(Problem const& p, int channels, bool pack, int width, cudaStream_t stream) {
  return launch_interleave_for<uint64_t>(p, channels, pack, width, stream);
}

}  // namespace cute_transpose
