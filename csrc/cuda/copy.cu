// JustCopy: the seed kernels' ceiling. The same tiles, threads and predicates as the naive
// transpose (direct_copy.cuh), but the output keeps the input's shape, so reads and writes both
// coalesce. It moves scalar elements like the seed kernels do; torch's clone, with wide vector
// accesses, is the device's ceiling.
#include "direct_copy.cuh"
#include "launch.h"

namespace cute_transpose {

cudaError_t launch_copy(Problem const& p, cudaStream_t s) { return launch_direct_copy<RowThreads, /*kTranspose=*/false>(p, s); }

}  // namespace cute_transpose
