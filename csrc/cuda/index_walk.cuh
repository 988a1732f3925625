// Output order -> input offset, for the kernels that walk the (contiguous) output in order
// (strided_copy.cu, gather.cu, lanes.cu). The dims are listed innermost first, each with its size
// and its input stride (in the kernel's own units: vectors or elements). An index splits into
// coordinates by precomputed fast dividers -- cutlass::FastDivmod for Index = int (under
// kIntWalkLimit indices), FastDivmodU64 for uint64_t --, and a walk can go on from there
// one step at a time like an odometer, with no division.
#pragma once

#include <cutlass/fast_math.h>

#include "tiling.cuh"

namespace cute_transpose {

// 32-bit indices (Index = int) only below this many: the kernels walk in grid-sized steps, and
// a thread's next index (its index + the step, under twice the total) must stay below 2^31 too,
// or it wraps negative and passes the loop's bound (an illegal address on the H100 at 2^30 + 2).
constexpr uint64_t kIntWalkLimit = uint64_t(1) << 30;

template <class Index>
struct IndexWalk {
  using Divider = cute::conditional_t<cute::is_same_v<Index, int>, cutlass::FastDivmod, cutlass::FastDivmodU64>;
  static constexpr int kMaxRank = Batch::kMaxRank + 2;
  int rank = 0;
  Divider divider[kMaxRank];
  Index size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  void add(int64_t n, int64_t in_stride) {
    divider[rank] = Divider(Index(n));
    size[rank] = Index(n);
    stride[rank++] = in_stride;
  }

  // The coordinates of index i (each below its dim's size), and its input offset.
  CUTE_DEVICE int64_t start(Index i, Index (&coord)[kMaxRank]) const {
    int64_t offset = 0;
    CUTE_UNROLL
    for (int d = 0; d < kMaxRank; ++d) {
      coord[d] = 0;
      if (d < rank) {
        coord[d] = i;  // the outermost dim needs no division: i < its size
        if (d + 1 < rank) i = divider[d].divmod(coord[d], i);
        offset += int64_t(coord[d]) * stride[d];
      }
    }
    return offset;
  }

  // The input offset of index i.
  CUTE_DEVICE int64_t operator()(Index i) const {
    Index coord[kMaxRank];
    return start(i, coord);
  }

  // The input offset of index i for a walk of exactly two dims: one division, no loop (the
  // lanes kernel's 2-D walks, lanes.cu).
  CUTE_DEVICE int64_t offset_of_two(Index i) const {
    Index inner;
    Index const outer = divider[0].divmod(inner, i);
    return int64_t(inner) * stride[0] + int64_t(outer) * stride[1];
  }

  // The next index in output order: the innermost coordinate moves on, carrying outward.
  CUTE_DEVICE void step(Index (&coord)[kMaxRank], int64_t& offset) const {
    CUTE_UNROLL
    for (int d = 0; d < kMaxRank; ++d) {
      if (d >= rank) break;
      offset += stride[d];
      if (++coord[d] < size[d]) break;
      offset -= int64_t(size[d]) * stride[d];
      coord[d] = 0;
    }
  }
};

// Which stretches of the output each block takes, for the same kernels (in the kernel's units:
// vectors, or elements). In the plain order block b takes units [b * per_block, total), walking
// on in grid-sized steps. Where the runs that lie side by side in the input land far apart in
// the output, the neighbours-together order sees the output as (outer, n, slice): n the size of
// the dim whose input stride is least (the dim that holds the input's next run) and slice its
// output stride. Block b takes stretch b / n of slice b % n, one stretch only; blocks launched
// together then read neighbouring runs together (docs/PERFORMANCE.md, "Neighbouring runs read
// together").
struct BlockOrder {
  int n = 1;  // 1: the plain order
  int64_t slice = 0;
  cutlass::FastDivmod by_n, by_stretches;  // block -> (stretch index, slice); stretch index -> (outer, stretch)
  uint64_t blocks = 0;                     // the grid (neighbours together)

  // This block's walk: units [first, last) in steps of `step`, `per_block` units at a time. The
  // kernels are built once per order (Together): the plain one runs the plain loop alone, which
  // the order's arithmetic in the same kernel had slowed by up to 4% (docs/PERFORMANCE.md).
  template <bool Together, class Index>
  CUTE_DEVICE void span(Index per_block, Index total, Index& first, Index& last, Index& step) const {
    if constexpr (!Together) {
      first = Index(blockIdx.x) * per_block;
      last = total;
      step = Index(gridDim.x) * per_block;
    } else {
      int j, r;
      int const o = by_stretches.divmod(r, by_n.divmod(j, int(blockIdx.x)));
      Index const start = (Index(o) * n + j) * Index(slice);  // the slice's first unit
      first = start + Index(r) * per_block;
      last = cute::min(first + per_block, start + Index(slice));
      step = last;  // one stretch
    }
  }
};

// The neighbours-together order for a walk over `total` units (`unit` elements each) of the
// output (batch..., M, N) of `p`, in stretches of `per_block` units; the plain order where no
// dim holds the input's next run, or where its slice is shorter than a stretch or does not
// split into whole units.
inline BlockOrder neighbours_together(Problem const& p, int64_t unit, uint64_t per_block, uint64_t total) {
  BlockOrder o;
  auto const [size, in, out] = next_run(p);
  if (size < 2 || out % unit != 0 || uint64_t(out / unit) < per_block) return o;
  uint64_t const slice = uint64_t(out / unit), stretches = (slice + per_block - 1) / per_block;
  uint64_t const blocks = total / (uint64_t(size) * slice) * uint64_t(size) * stretches;
  if (blocks >= uint64_t(INT_MAX) || size >= INT_MAX) return o;
  o.n = int(size);
  o.slice = int64_t(slice);
  o.by_n = cutlass::FastDivmod(int(size));
  o.by_stretches = cutlass::FastDivmod(int(stretches));
  o.blocks = blocks;
  return o;
}

}  // namespace cute_transpose
