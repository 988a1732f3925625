// The Box kernel for 8-byte elements (box_transpose.cuh).
#include "box_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_box_e8(BoxPlan const& b, cudaStream_t stream) { return launch_box_for<uint64_t>(b, stream); }

}  // namespace cute_transpose
