// Kernel launchers: one per op, each in its own .cu file. They enqueue on `stream` and return
// the launch status; the torch glue (csrc/cuda_ops.cpp) checks it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "problem.h"
#include "variants.h"

namespace cute_transpose {

#define CUTE_TRANSPOSE_DECLARE_LAUNCH(name) cudaError_t launch_##name(Problem const& p, cudaStream_t stream);
CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_DECLARE_LAUNCH)
CUTE_TRANSPOSE_DECLARE_LAUNCH(copy)
#undef CUTE_TRANSPOSE_DECLARE_LAUNCH

// The `transpose` op's fast kernel. vectorized_width() is the widest access (16, 8 or 4 bytes)
// that the problem's sizes, strides and alignment allow and that holds two or more elements (or
// one 8- or 16-byte element); 0 when there is none: then the caller uses another kernel.
// launch_vectorized() takes that width.
int vectorized_width(Problem const& p);
cudaError_t launch_vectorized(Problem const& p, int width, cudaStream_t stream);

// The `permute` op's copy route (strided_copy.cu): a Problem whose output is the contiguous
// (batch..., M, N) tensor -- rows keep their order -- copied in the widest vectors that the
// strides and alignment allow, scalars otherwise.
cudaError_t launch_strided_copy(Problem const& p, cudaStream_t stream);

// The `permute` op's kernel for short m or n dims (split_transpose.cu): the vectorized tile
// transpose with two dims per tile side. split_vectorized_width() is as vectorized_width(), 0 when
// the split problem cannot move in vectors or would not pay (then the caller runs the plain
// Problem).
int split_vectorized_width(SplitProblem const& s);
cudaError_t launch_split_transpose(SplitProblem const& s, int width, cudaStream_t stream);

// Where a shared-memory seed variant touches shared memory, for bank analysis
// (cute_transpose.banks): the byte address that each lane of warp 0 accesses at each step of
// phase 1 (the store) and of phase 2 (the load), and the byte address of every (m, n) of the
// tile. Evaluated from the kernel's own layouts (smem_transpose.cuh).
struct SmemAccessMap {
  int element_size = 0, rows = 0, cols = 0;
  std::vector<int64_t> store, load;  // (steps, 32), row-major
  std::vector<int64_t> tile;         // (rows, cols), row-major
};
#define CUTE_TRANSPOSE_SMEM_VARIANTS(X) X(bank_conflict_read) X(bank_conflict_write) X(padded) X(swizzled)
#define CUTE_TRANSPOSE_DECLARE_MAP(name) SmemAccessMap smem_access_map_##name(int element_size);
CUTE_TRANSPOSE_SMEM_VARIANTS(CUTE_TRANSPOSE_DECLARE_MAP)
#undef CUTE_TRANSPOSE_DECLARE_MAP

// The SM architecture (e.g. 90) of the TMA kernel the runtime would load on the current device
// for this element size, or 0 when that binary has no sm_90 code (so the kernel body is empty).
int tma_kernel_arch(int element_size);

}  // namespace cute_transpose
