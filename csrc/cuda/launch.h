// Kernel launchers, one per kernel, each in its own .cu file. They run what the chooser decided
// (csrc/choose.h), enqueue on `stream` and return the launch status; the torch glue
// (csrc/cuda_ops.cpp) checks it. No torch types here.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "tile_config.h"
#include "variants.h"
#include "work.h"

namespace cute_transpose {

// The seed ladder and the seed copy: the (M, N) matrices of a Problem, any strides.
#define CUTE_TRANSPOSE_DECLARE_LAUNCH(name, ...) cudaError_t launch_##name(Problem const& p, cudaStream_t stream);
CUTE_TRANSPOSE_FOR_EACH_SEED(CUTE_TRANSPOSE_DECLARE_LAUNCH)
CUTE_TRANSPOSE_DECLARE_LAUNCH(copy)
#undef CUTE_TRANSPOSE_DECLARE_LAUNCH

// The ladder's TMA variant (tma.cu), also a candidate of the chooser: `width`-byte loads (0:
// element-wise), the output tile stored by TMA.
cudaError_t launch_tma(Problem const& p, int width, cudaStream_t stream);

// The ladder's pipelined variant (pipelined.cu), also a candidate of the chooser: TMA loads into
// a ring of shared-memory stages, 16-byte vectors on both sides.
cudaError_t launch_pipelined(Problem const& p, cudaStream_t stream);

// Makes the device's primary context current in the calling thread, which encoding a TMA
// descriptor needs (tma.cu).
cudaError_t bind_current_context();

// The vectorized tile transpose (tile_*.cu): `width`-byte vectors on both sides, `shape` tiles.
cudaError_t launch_tile(Problem const& p, int width, TileShape shape, cudaStream_t stream);

// The tile transpose of rows off the 16-byte grid (realign.cu): aligned 16-byte vectors on both
// sides, the input's through cp.async, elements of 1-8 bytes.
cudaError_t launch_realign(Problem const& p, cudaStream_t stream);

// The lean transpose (lean_transpose.cu; small work, and where the table ranks it): one tile
// per block, 32-bit offsets, up to three batch dims; `in_width`- and `out_width`-byte vectors
// (16, or the element size); `shape` one of kLeanShapes (tile_config.h).
cudaError_t launch_lean(Problem const& p, int in_width, int out_width, TileShape shape, cudaStream_t stream);

// The transpose of 1- and 2-byte elements off the grid (words.cu): one element per global access,
// 4-byte words in shared memory, one tile per block; `shape` one of kWordsShapes (tile_config.h).
cudaError_t launch_words(Problem const& p, TileShape shape, cudaStream_t stream);

// The tile transpose with two dims on each short side (split_transpose.cu), in tiles of one of
// the Tile kernel's first five shapes (kTileShapes).
cudaError_t launch_split(SplitProblem const& s, int width, TileShape shape, cudaStream_t stream);

// The copy route (strided_copy.cu): rows of the contiguous (batch..., M, N) output copied in
// `width`-byte vectors (or single elements), 16-byte ones in blocks of at most `max_threads`
// threads (0: the kernel's own choice); `together`: blocks in the neighbours-together order
// (BlockOrder, index_walk.cuh).
cudaError_t launch_rows(Problem const& p, int width, int max_threads, bool together, cudaStream_t stream);

// Any permute, the output in order (gather.cu): `width`-byte stores (16: the output starts on a
// 16-byte boundary), every element read on its own; `together` as for launch_rows.
cudaError_t launch_gather(Problem const& p, int width, bool together, cudaStream_t stream);

// Output rows that each repeat one input element (fill.cu): the contiguous (batch..., M, N) output
// of a Problem whose input reads N with stride 0, as a flat run of aligned 16-byte stores, each
// row's element loaded once by each warp that writes the row, or with `lanes` by each lane.
cudaError_t launch_fill(Problem const& p, bool lanes, cudaStream_t stream);

// Any permute, the output in order (lanes.cu): one element per access, lanes on consecutive
// elements, each thread's loads before its stores.
cudaError_t launch_lanes(Problem const& p, cudaStream_t stream);

// A (batch..., M, N) output with M or N of 2 .. kStageMaxChannels elements, any input strides
// (stage.cu): 128 pixels a block staged through shared memory.
cudaError_t launch_stage(Problem const& p, cudaStream_t stream);

// One side of `channels` elements, interleaved (interleave.cuh): `pack` moves the planes (rows
// of the Problem's m) into the interleaved output, or else the interleaved input (n) into planes,
// in 16-byte vectors (width 16) or one element per access (width = the element size).
cudaError_t launch_interleave(Problem const& p, int channels, bool pack, int width, cudaStream_t stream);

// Any permute as boxes staged through shared memory (box_transpose.cu).
cudaError_t launch_box(BoxPlan const& b, cudaStream_t stream);

// Where a shared-memory variant touches shared memory, for bank analysis (cute_transpose.banks):
// the byte address that each lane of warp 0 accesses at each step of phase 1 (the store; none
// for pipelined, whose stages TMA writes) and of phase 2 (the load; 16-byte accesses for
// pipelined, one element for the seeds), and the byte address of every (m, n) of the tile.
// Evaluated from the kernel's own layouts (smem_transpose.cuh, pipelined.cu).
struct SmemAccessMap {
  int element_size = 0, rows = 0, cols = 0;
  std::vector<int64_t> store, load;  // (steps, 32), row-major
  std::vector<int64_t> tile;         // (rows, cols), row-major
};
#define CUTE_TRANSPOSE_SMEM_VARIANTS(X) X(bank_conflict_read) X(bank_conflict_write) X(padded) X(swizzled) X(pipelined)
#define CUTE_TRANSPOSE_DECLARE_MAP(name) SmemAccessMap smem_access_map_##name(int element_size);
CUTE_TRANSPOSE_SMEM_VARIANTS(CUTE_TRANSPOSE_DECLARE_MAP)
#undef CUTE_TRANSPOSE_DECLARE_MAP

// The SM architecture (e.g. 90) of the TMA kernel the runtime would load on the current device
// for this element size, or 0 when that binary has no sm_90 code (so the kernel body is empty).
int tma_kernel_arch(int element_size);

}  // namespace cute_transpose
