// Padded shared memory: rows of bN + 1 elements. Walking down a column now steps bN + 1
// elements, which shifts each row by one bank, so a warp's column access touches 32 banks.
// Conflict-free for 4-, 8- and 16-byte elements; for 1- and 2-byte elements several elements
// share a word and a one-element pad is not enough (2-way for 2 bytes, 4-way for 1 byte).
#include "launch.h"
#include "smem_transpose.cuh"

namespace cute_transpose {
namespace {

template <class T>
struct PaddedSmem {  // (bM,bN):(bN+1,1)
  using type = cute::Layout<typename SeedTile<T>::Shape,
                            cute::Stride<cute::Int<SeedTile<T>::BN::value + 1>, cute::_1>>;
};

}  // namespace

cudaError_t launch_padded(Problem const& p, cudaStream_t s) { return launch_smem_transpose<PaddedSmem>(p, s); }

SmemAccessMap smem_access_map_padded(int element_size) { return smem_access_map<PaddedSmem>(element_size); }

}  // namespace cute_transpose
