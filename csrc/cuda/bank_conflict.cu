// Shared memory without padding: the tile is stored row-major or column-major, so one of the
// two shared-memory phases walks a warp down a stride of 128 bytes (32 banks), and all 32
// threads of the warp hit the same bank: a 32-way conflict (for 4-byte elements).
//   bank_conflict_read   (bM,bN):(bN,1)  row-major: the store is contiguous, the load strided
//   bank_conflict_write  (bM,bN):(1,bM)  column-major: the store is strided, the load contiguous
#include "launch.h"
#include "smem_transpose.cuh"

namespace cute_transpose {
namespace {

template <class T>
struct RowMajorSmem {  // (bM,bN):(bN,1)
  using type = cute::Layout<typename SeedTile<T>::Shape, cute::Stride<typename SeedTile<T>::BN, cute::_1>>;
};

template <class T>
struct ColumnMajorSmem {  // (bM,bN):(1,bM)
  using type = cute::Layout<typename SeedTile<T>::Shape, cute::Stride<cute::_1, typename SeedTile<T>::BM>>;
};

}  // namespace

cudaError_t launch_bank_conflict_read(Problem const& p, cudaStream_t s) { return launch_smem_transpose<RowMajorSmem>(p, s); }
cudaError_t launch_bank_conflict_write(Problem const& p, cudaStream_t s) { return launch_smem_transpose<ColumnMajorSmem>(p, s); }

SmemAccessMap smem_access_map_bank_conflict_read(int element_size) { return smem_access_map<RowMajorSmem>(element_size); }
SmemAccessMap smem_access_map_bank_conflict_write(int element_size) { return smem_access_map<ColumnMajorSmem>(element_size); }

}  // namespace cute_transpose
