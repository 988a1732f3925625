// The Box kernel for 16-byte elements (box_transpose.cuh).
#include "box_transpose.cuh"

namespace cute_transpose {

cudaError_t launch_box_e16(BoxPlan const& b, cudaStream_t stream) { return launch_box_for<cute::uint128_t>(b, stream); }

}  // namespace cute_transpose
