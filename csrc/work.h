// The work every op does, described without torch or CUDA types, so that the planner
// (plan.cpp), the chooser (choose.cpp) and the kernels (cuda/*.cu) share one vocabulary.
//
//   Dim      one dim of a permute: its size and its strides in the input and the output
//   Problem  a batch of (M, N) matrices, the form the tile kernels and the seed ladder take
//   BoxPlan  a box of up to kMaxBox dims staged through shared memory (the box kernel)
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CUTE_TRANSPOSE_HD __host__ __device__
#else
#define CUTE_TRANSPOSE_HD
#endif

namespace cute_transpose {

// Dims of a permute after merging; a permute with more takes ATen's strided copy.
constexpr int kMaxDims = 8;

// The Interleave kernel takes a side of 2 .. kMaxChannels elements (of at most 128 bytes), in
// 16-byte vectors up to kMaxVectorChannels.
constexpr int kMaxChannels = 16, kMaxVectorChannels = 8;

// The Stage kernel (cuda/stage.cu) takes a short side of 2 .. kStageMaxChannels elements.
constexpr int kStageMaxChannels = 8;

// Two facts of the Interleave kernel's one-element-per-access mode (cuda/interleave_element.cuh)
// that the chooser shares.
//
// Pixels per lane: K = 16 / E (as in vector mode) while a warp's run of 32 * K pixels of C
// elements stays within 4 KiB.
constexpr CUTE_TRANSPOSE_HD int element_pixels_per_lane(int channels, int element_size) {
  int const k = 16 / element_size > 1 ? 16 / element_size : 1, fit = 128 / (channels * element_size);
  return fit >= k ? k : fit;
}

// The channels the mode moves per pixel when unpacking C channels from pixels `pixel_stride`
// elements apart. A gap between pixels shorter than a 32-byte sector is read with the pixels:
// then every sector holds channels of some pixel, so DRAM moves the same bytes either way, and
// the run read is dense -- S = pixel_stride channels, of which the first C are written -- which
// the kernel walks with constant offsets. Otherwise C (and the gaps are skipped, at 64-bit
// arithmetic per access: 0.42-0.73 of clone where the dense run reaches 0.91-0.97 on the H100).
constexpr CUTE_TRANSPOSE_HD int64_t element_run_channels(int64_t channels, int64_t pixel_stride, int element_size,
                                                         bool pack) {
  bool const read_gaps = !pack && pixel_stride > channels && pixel_stride <= kMaxChannels &&
                         pixel_stride * element_size <= 128 && (pixel_stride - channels) * element_size < 32;
  return read_gaps ? pixel_stride : channels;
}

// Whether the mode skips the gaps between pixels: they lie further apart than C, and too far to
// be read with them.
constexpr CUTE_TRANSPOSE_HD bool element_skips_gaps(int64_t channels, int64_t pixel_stride, int element_size, bool pack) {
  return element_run_channels(channels, pixel_stride, element_size, pack) != pixel_stride;
}

// One dim of the work, in elements. `out` is the output's stride (the output is contiguous).
struct Dim {
  int64_t size = 1, in = 0, out = 0;
};

// Where a batch index lands in the input and in the output, in elements.
struct Offsets {
  int64_t in = 0, out = 0;
};

// The dims a kernel loops over whole matrices, outermost first. Each has its own input and
// output stride, so a batch can be any view (a permuted or sliced one) without a copy.
struct Batch {
  static constexpr int kMaxRank = 6;
  int rank = 0;       // 0: a single matrix
  int64_t count = 1;  // product of the sizes
  int64_t size[kMaxRank] = {}, in_stride[kMaxRank] = {}, out_stride[kMaxRank] = {};

  // Offsets of batch index b (0 <= b < count). The loop is unrolled over the fixed maximum
  // rank, so the arrays are indexed by constants and stay in registers on the GPU; a rank-1
  // batch costs one multiply-add per side and no division.
  CUTE_TRANSPOSE_HD Offsets operator()(int64_t b) const {
    Offsets o;
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < rank) {
        int64_t const i = d == 0 ? b : b % size[d];
        if (d > 0) b /= size[d];
        o.in += i * in_stride[d];
        o.out += i * out_stride[d];
      }
    }
    return o;
  }
};

// A batch of (M, N) matrices. Element (b, m, n) is read at
//   src + Batch(b).in  + m * row_stride     + n * col_stride
// and written at
//   dst + Batch(b).out + m * out_row_stride + n * out_col_stride.
// In a transpose, m is the output's innermost dim (out_row_stride 1) and n the input's tightest
// (col_stride 1 for a contiguous input); in a copy, n is innermost on both sides.
// Strides are in elements; kernels move bits, so only the element size matters.
struct Problem {
  void const* src;
  void* dst;
  int64_t rows, cols;
  int64_t row_stride, col_stride;
  int64_t out_row_stride, out_col_stride;
  Batch batch;
  int element_size;  // 1, 2, 4, 8 or 16 bytes
  // The tile kernels' walk: m-tiles fastest (consecutive blocks write consecutive runs of the
  // same output rows) instead of n-tiles fastest (consecutive blocks read consecutive runs of
  // the same input rows).
  bool m_first = false;
  // The kernel's loads ask the caches to keep the input's lines (evict_last: load_evict_last in
  // cuda/tiling.cuh, or the TMA loads' cache hint), so that the L2 writes the output's dirty
  // lines back first: set for work much larger than the L2 (keeps_inputs, choose.cpp).
  bool keep_inputs = false;
};

// The Stage kernel's direction: planes out (M, the short side, of 2 .. kStageMaxChannels
// planes) or else interleaved out (N the short side).
inline bool stage_planes_out(Problem const& p) { return p.rows <= kStageMaxChannels; }

// For the kernels that walk a (batch..., M, N) output in order (rows, gather): the dim, M or a
// batch dim, that holds the input's next run -- the least nonzero input stride among the dims
// of two or more -- with its size and strides (size 1 where there is none).
inline Dim next_run(Problem const& p) {
  auto const reach = [](int64_t s) { return s < 0 ? -s : s; };
  Dim next{p.rows, p.row_stride, p.out_row_stride};
  if (next.size < 2 || next.in == 0) next = Dim{};
  for (int d = 0; d < p.batch.rank; ++d)
    if (p.batch.size[d] > 1 && p.batch.in_stride[d] != 0 && (next.size < 2 || reach(p.batch.in_stride[d]) < reach(next.in)))
      next = Dim{p.batch.size[d], p.batch.in_stride[d], p.batch.out_stride[d]};
  return next;
}

// The Interleave kernel's vector mode runs as is when every plane, every batch offset and both
// tensors start on a 16-byte boundary (pack: planes -> interleaved, m the planes; unpack: n the
// channels, m the pixels); otherwise uint8 realigns (cuda/interleave_realigned.cuh) and wider
// elements move one element per access (choose.cpp, interleave_width).
inline bool interleave_vectors_aligned(Problem const& p, bool pack) {
  int64_t const K = 16 / p.element_size;
  bool ok = (pack ? p.row_stride : p.out_col_stride) % K == 0 && reinterpret_cast<uintptr_t>(p.src) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(p.dst) % 16 == 0;
  for (int d = 0; d < p.batch.rank; ++d) ok = ok && p.batch.in_stride[d] % K == 0 && p.batch.out_stride[d] % K == 0;
  return ok;
}

// Whether the Interleave kernel, given `width`-byte accesses, runs its vector mode as is: the
// accesses are wider than the element (16-byte elements move one per access, in element mode)
// and the vectors are aligned (interleave_vectors_aligned).
inline bool interleave_runs_aligned_vectors(Problem const& p, int width, bool pack) {
  return width > p.element_size && interleave_vectors_aligned(p, pack);
}

// The output's rows (n) and matrices all start on the 16-byte grid: the Realign kernel then
// writes each output row's aligned vectors from m = 0 (cuda/realign.cu).
inline bool output_rows_aligned(Problem const& p) {
  bool ok = (p.out_col_stride * p.element_size) % 16 == 0 && reinterpret_cast<uintptr_t>(p.dst) % 16 == 0;
  for (int d = 0; d < p.batch.rank; ++d) ok = ok && (p.batch.out_stride[d] * p.element_size) % 16 == 0;
  return ok;
}

// The Split kernel's work (cuda/split_transpose.cu): a transpose whose m or n dim is shorter
// than a tile takes a second, outer dim on that side, so that a tile holds several small
// matrices side by side. Side index i is then (i % inner, i / inner): offsets
// inner_stride * (i % inner) + outer.{in,out} * (i / inner), where inner is the Problem's rows
// (for m) or cols (for n). The Problem's batch excludes the two outer dims.
struct Outer {
  int64_t size = 1, in_stride = 0, out_stride = 0;
};

struct SplitProblem {
  Problem problem;
  Outer m, n;
};

// The box kernel's work (cuda/box_transpose.cu): the permute's dims split into a box of up to
// kMaxBox dims, staged whole through shared memory, and the outer dims walked between boxes.
// A box dim is taken whole (tile == size) or in chunks of `tile`; a chunked dim also appears
// among the outer dims, as its chunk count. Each side (input, output) reads the box in its own
// memory order, innermost first (in_order / out_order), in vectors of vin / vout elements.
// Shared memory holds the box in the input's order, with `smem` strides (a pad after the
// input's contiguous run keeps the output side's column walks off a single bank).
struct BoxPlan {
  static constexpr int kMaxBox = 6;
  static constexpr int kMaxOuter = kMaxDims;
  int rank = 0;
  int64_t size[kMaxBox] = {}, tile[kMaxBox] = {}, in[kMaxBox] = {}, out[kMaxBox] = {};
  int64_t smem[kMaxBox] = {};
  int in_order[kMaxBox] = {}, out_order[kMaxBox] = {};
  int vin = 1, vout = 1;
  int64_t volume = 1;      // elements in a whole box
  int64_t smem_elems = 0;  // shared memory, in elements (the box and its pads)
  // The outer dims, outermost first: sizes and the offsets one step moves on each side.
  // chunk_of[k] is the box dim whose chunk index outer dim k counts, or -1.
  int outer_rank = 0;
  int64_t outer_size[kMaxOuter] = {}, outer_in[kMaxOuter] = {}, outer_out[kMaxOuter] = {};
  int chunk_of[kMaxOuter] = {};
  int64_t boxes = 1;  // product of the outer sizes
  void const* src = nullptr;
  void* dst = nullptr;
  int element_size = 0;

  // Where each side has at most kKeptVectors vectors (the kernel's threads times the vectors a
  // thread keeps) and no output vector wraps its innermost dim, a block works out where each of
  // its vectors lies once and keeps it for every box no edge cuts short (box_transpose.cuh).
  static constexpr int64_t kKeptVectors = 1024;
  bool keeps_positions() const {
    return volume / vin <= kKeptVectors && volume / vout <= kKeptVectors && tile[out_order[0]] % vout == 0;
  }

  // How many of a side's innermost box dims (order: in_order or out_order, global: in or out)
  // form its run, one stretch of memory: the innermost if unit-stride, then each next one whose
  // stride chains on from a whole dim before it (0 if the innermost is not unit-stride).
  int run_dims(int const* order, int64_t const* global) const {
    if (rank == 0 || global[order[0]] != 1) return 0;
    int n = 1;
    while (n < rank && tile[order[n - 1]] == size[order[n - 1]] &&
           global[order[n]] == global[order[n - 1]] * size[order[n - 1]])
      ++n;
    return n;
  }
};

}  // namespace cute_transpose
