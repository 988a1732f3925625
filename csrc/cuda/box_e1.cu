// The Box kernel for 1-byte elements (box_transpose.cuh).
#include "box_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_box_e1(BoxPlan const& b, cudaStream_t stream) { return launch_box_for<uint8_t>(b, stream); }

}  // namespace cute_transpose
