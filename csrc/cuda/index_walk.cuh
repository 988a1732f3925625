// Output order -> input offset, for the kernels that walk the (contiguous) output in order
// (strided_copy.cu, gather.cu). The dims are listed innermost first, each with its size and its
// input stride (in the kernel's own units: vectors or elements). An index splits into
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

}  // namespace cute_transpose
