// Naive transposes: global memory only, each thread moves its elements straight from the input
// tile to the output tile (direct_copy.cuh). One of the two global accesses must be strided; the
// thread layout decides which:
//   naive_coalesced_read   threads along rows     -> reads coalesce, writes stride by M
//   naive_coalesced_write  threads down columns   -> writes coalesce, reads stride by the row pitch
// The two launchers differ in one word: the thread layout they pass.
#include "direct_copy.cuh"
#include "launch.h"

namespace cute_transpose {

cudaError_t launch_naive_coalesced_read(Problem const& p, cudaStream_t s) {
  return launch_direct_copy<RowThreads, /*kTranspose=*/true>(p, s);
}
cudaError_t launch_naive_coalesced_write(Problem const& p, cudaStream_t s) {
  return launch_direct_copy<ColumnThreads, /*kTranspose=*/true>(p, s);
}

}  // namespace cute_transpose
