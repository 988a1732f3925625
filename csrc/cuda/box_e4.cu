// The Box kernel for 4-byte elements (box_transpose.cuh).
#include "box_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_box_e4(BoxPlan const& b, cudaStream_t stream) { return launch_box_for<uint32_t>(b, stream); }

}  // namespace cute_transpose
