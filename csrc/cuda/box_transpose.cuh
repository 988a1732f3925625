// The Box kernel: any permute, for shapes the tile transpose handles badly -- dims of a few
// elements anywhere, short contiguous runs on either side, rows no vector fits. It is cuTT's
// "Packed" idea: the planner (box_plan.cpp) gathers the innermost dims of each side
// into a box of up to six dims -- e.g. (C = 3, 4096 pixels) of an NCHW -> NHWC uint8 image --
// so that each side reads the box in long contiguous runs. Per box:
//   1. threads walk the box in the input's memory order, one vector of VI elements each,
//      reading global memory in order, and drop the elements into shared memory, which holds
//      the box in that same order (with a pad after the input's contiguous run);
//   2. threads walk the box in the output's memory order, gather VO elements each from shared
//      memory, and write them as one vector.
// A linear index on either side becomes box coordinates by fast division (cutlass::FastDivmod)
// once per vector; within a vector the coordinates advance like an odometer.
#pragma once

#include <cutlass/fast_math.h>

#include "launch.h"
#include "tiling.cuh"
#include "vector_tile.cuh"

namespace cute_transpose {

constexpr int kBoxThreads = 256;
constexpr int kBoxLoadsInFlight = 2;  // slow path, phase 1: vectors a thread loads before it stores any

// One side's view of the box: its dims in that side's memory order, innermost first.
struct BoxSide {
  int rank = 0;
  int carries = 0;                       // dims past the innermost that a vector may step into
  cutlass::FastDivmod extent[BoxPlan::kMaxBox];
  int tile[BoxPlan::kMaxBox] = {};       // the extents again, for the odometer
  int box_dim[BoxPlan::kMaxBox] = {};    // which box dim each is (for the limits)
  int smem[BoxPlan::kMaxBox] = {};       // shared-memory stride, elements
  int64_t global[BoxPlan::kMaxBox] = {}; // this side's global stride, elements
};

struct BoxParams {
  BoxSide in, out;
  int64_t size[BoxPlan::kMaxBox] = {}, tile[BoxPlan::kMaxBox] = {};
  int outer_rank = 0;
  cutlass::FastDivmodU64 outer[BoxPlan::kMaxOuter];
  int64_t outer_in[BoxPlan::kMaxOuter] = {}, outer_out[BoxPlan::kMaxOuter] = {};
  int chunk_of[BoxPlan::kMaxOuter] = {};
  int64_t boxes = 0;
  int volume = 0;
  bool keep = false;  // BoxPlan::keeps_positions: the fast path below
  void const* src = nullptr;
  void* dst = nullptr;
};

// Where box t starts on each side, and how far each box dim reaches in it (less than its tile
// in the last chunk of a chunked dim).
struct BoxAt {
  Offsets at;
  int limit[BoxPlan::kMaxBox];
  bool whole = true;  // no dim is cut short
};

CUTE_DEVICE BoxAt locate_box(BoxParams const& p, int64_t t) {
  BoxAt b;
  CUTE_UNROLL
  for (int k = 0; k < BoxPlan::kMaxBox; ++k) b.limit[k] = int(p.tile[k]);
  uint64_t rest = uint64_t(t);
  CUTE_UNROLL
  for (int k = BoxPlan::kMaxOuter - 1; k >= 0; --k) {
    if (k < p.outer_rank) {
      uint64_t i = rest;  // the outermost dim needs no division
      if (k > 0) rest = p.outer[k].divmod(i, rest);
      b.at.in += int64_t(i) * p.outer_in[k];
      b.at.out += int64_t(i) * p.outer_out[k];
      int const d = p.chunk_of[k];
      if (d >= 0) {
        CUTE_UNROLL
        for (int j = 0; j < BoxPlan::kMaxBox; ++j)
          if (j == d) b.limit[j] = int(cute::min(p.tile[j], p.size[j] - int64_t(i) * p.tile[j]));
        b.whole = b.whole && (int64_t(i) + 1) * p.tile[d] <= p.size[d];
      }
    }
  }
  return b;
}

// The box's limits in a side's order (once per box).
struct SideLimits {
  int limit[BoxPlan::kMaxBox];
};

CUTE_DEVICE SideLimits whole_limits(BoxSide const& s) {
  SideLimits l;
  CUTE_UNROLL
  for (int d = 0; d < BoxPlan::kMaxBox; ++d) l.limit[d] = s.tile[d];
  return l;
}

CUTE_DEVICE SideLimits side_limits(BoxSide const& s, BoxAt const& box) {
  SideLimits l;
  CUTE_UNROLL
  for (int d = 0; d < BoxPlan::kMaxBox; ++d) {
    l.limit[d] = 0;
    CUTE_UNROLL
    for (int j = 0; j < BoxPlan::kMaxBox; ++j)
      if (j == s.box_dim[d]) l.limit[d] = box.limit[j];
  }
  return l;
}

// Linear index `index` of a side's walk -> its coordinates, global and shared offsets, and
// whether it lies inside the box's limits.
struct SidePos {
  int c[BoxPlan::kMaxBox];
  int64_t global = 0;
  int smem = 0;
  bool inside = true;
};

CUTE_DEVICE SidePos side_position(BoxSide const& s, SideLimits const& l, int index) {
  SidePos pos;
  CUTE_UNROLL
  for (int d = 0; d < BoxPlan::kMaxBox; ++d) {
    pos.c[d] = 0;
    if (d < s.rank) {
      int q = index, r = index;  // the side's outermost dim needs no division
      if (d + 1 < s.rank) s.extent[d](q, r, index);
      pos.c[d] = r;
      index = q;
      pos.global += int64_t(r) * s.global[d];
      pos.smem += r * s.smem[d];
      pos.inside = pos.inside && r < l.limit[d];
    }
  }
  return pos;
}

// Advances pos to the next element of the side's walk (shared offset only). A vector carries
// into at most s.carries further dims (none when it stays inside the innermost one).
CUTE_DEVICE void step(BoxSide const& s, SidePos& pos) {
  pos.smem += s.smem[0];
  if (s.carries == 0) return;
  ++pos.c[0];
  CUTE_UNROLL
  for (int d = 0; d + 1 < BoxPlan::kMaxBox; ++d) {
    if (d < s.carries && pos.c[d] == s.tile[d]) {
      pos.c[d] = 0;
      pos.smem += s.smem[d + 1] - s.tile[d] * s.smem[d];
      ++pos.c[d + 1];
    }
  }
}

// Drops a vector of the input into shared memory at element offset `at`: its elements are
// consecutive there (the input's contiguous run has no pad).
template <class T, class Vec>
CUTE_DEVICE void put(T* smem, int at, Vec const& v) {
  if constexpr (sizeof(Vec) >= 4) {
    uint32_t const* words = reinterpret_cast<uint32_t const*>(&v);
    uint32_t* s = reinterpret_cast<uint32_t*>(smem + at);
    CUTE_UNROLL
    for (int w = 0; w < int(sizeof(Vec)) / 4; ++w) s[w] = words[w];
  } else {
    T const* elems = reinterpret_cast<T const*>(&v);
    CUTE_UNROLL
    for (int k = 0; k < int(sizeof(Vec) / sizeof(T)); ++k) smem[at + k] = elems[k];
  }
}

// Gathers the output vector that starts at `pos` from shared memory.
template <class T, int VO, class Vec>
CUTE_DEVICE Vec gather(T const* smem, BoxSide const& out, SidePos pos) {
  T elems[VO];
  CUTE_UNROLL
  for (int k = 0; k < VO; ++k) {
    elems[k] = smem[pos.smem];
    if (k + 1 < VO) step(out, pos);
  }
  Vec v;
  memcpy(&v, elems, sizeof(v));
  return v;
}

// Vectors per thread and side whose positions a block keeps across boxes (the fast path).
constexpr int kBoxKept = 4;
static_assert(kBoxThreads * kBoxKept == BoxPlan::kKeptVectors);

template <class T, int VI, int VO>
__global__ void __launch_bounds__(kBoxThreads, 3) box_transpose(BoxParams const p) {
  using VecIn = VecOf<VI * int(sizeof(T))>;
  using VecOut = VecOf<VO * int(sizeof(T))>;
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  T* smem = reinterpret_cast<T*>(smem_bytes);
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  int const vectors_in = p.volume / VI, vectors_out = p.volume / VO;

  // Fast path: a vector's place inside a box is the same in every box, so where every thread
  // has at most kBoxKept vectors a side and output vectors stay in their innermost dim
  // (p.keep), the block works out its positions once and reuses them for every box that no
  // edge cuts short.
  bool const keep = p.keep;
  int64_t in_global[kBoxKept], out_global[kBoxKept];
  int in_smem[kBoxKept], out_smem[kBoxKept];
  if (keep) {
    SideLimits const in_whole = whole_limits(p.in), out_whole = whole_limits(p.out);
    CUTE_UNROLL
    for (int u = 0; u < kBoxKept; ++u) {
      SidePos const in = side_position(p.in, in_whole, (threadIdx.x + u * kBoxThreads) * VI);
      SidePos const out = side_position(p.out, out_whole, (threadIdx.x + u * kBoxThreads) * VO);
      in_global[u] = in.global;
      in_smem[u] = in.smem;
      out_global[u] = out.global;
      out_smem[u] = out.smem;
    }
  }

  for (int64_t t = blockIdx.x; t < p.boxes; t += gridDim.x) {
    BoxAt const box = locate_box(p, t);
    if (keep && box.whole) {
      VecIn reg[kBoxKept];
      CUTE_UNROLL
      for (int u = 0; u < kBoxKept; ++u)
        if (threadIdx.x + u * kBoxThreads < vectors_in)
          reg[u] = *reinterpret_cast<VecIn const*>(src + box.at.in + in_global[u]);
      CUTE_UNROLL
      for (int u = 0; u < kBoxKept; ++u)
        if (threadIdx.x + u * kBoxThreads < vectors_in) put(smem, in_smem[u], reg[u]);
      __syncthreads();
      CUTE_UNROLL
      for (int u = 0; u < kBoxKept; ++u) {
        if (threadIdx.x + u * kBoxThreads < vectors_out) {
          SidePos pos;
          pos.smem = out_smem[u];
          *reinterpret_cast<VecOut*>(dst + box.at.out + out_global[u]) = gather<T, VO, VecOut>(smem, p.out, pos);
        }
      }
      __syncthreads();  // the next box reuses shared memory
      continue;
    }

    SideLimits const in_limits = side_limits(p.in, box), out_limits = side_limits(p.out, box);
    //
    // 1. global -> shared, vectors along the input's memory order
    //
    for (int v0 = threadIdx.x; v0 < vectors_in; v0 += kBoxThreads * kBoxLoadsInFlight) {
      VecIn reg[kBoxLoadsInFlight];
      int at[kBoxLoadsInFlight];
      CUTE_UNROLL
      for (int u = 0; u < kBoxLoadsInFlight; ++u) {
        int const v = v0 + u * kBoxThreads;
        SidePos const pos = side_position(p.in, in_limits, v * VI);
        at[u] = v < vectors_in && pos.inside ? pos.smem : -1;
        if (at[u] >= 0) reg[u] = *reinterpret_cast<VecIn const*>(src + box.at.in + pos.global);
      }
      CUTE_UNROLL
      for (int u = 0; u < kBoxLoadsInFlight; ++u)
        if (at[u] >= 0) put(smem, at[u], reg[u]);
    }
    __syncthreads();

    //
    // 2. shared -> global, vectors along the output's memory order
    //
    for (int v = threadIdx.x; v < vectors_out; v += kBoxThreads) {
      SidePos const pos = side_position(p.out, out_limits, v * VO);
      if (pos.inside) *reinterpret_cast<VecOut*>(dst + box.at.out + pos.global) = gather<T, VO, VecOut>(smem, p.out, pos);
    }
    __syncthreads();  // the next box reuses shared memory
  }
}

BoxParams box_params(BoxPlan const& b);

template <class T>
cudaError_t launch_box_for(BoxPlan const& b, cudaStream_t stream) {
  BoxParams const params = box_params(b);
  int64_t const smem = b.smem_elems * int64_t(sizeof(T));
  dim3 const grid(unsigned(b.boxes < INT_MAX ? b.boxes : INT_MAX));
  constexpr int E = sizeof(T);
  auto launch = [&](auto vi, auto vo) {
    box_transpose<T, decltype(vi)::value, decltype(vo)::value><<<grid, kBoxThreads, smem, stream>>>(params);
    return cudaGetLastError();
  };
  // The chooser picks VI and VO among 16 bytes, 4 bytes and one element.
  auto with_vo = [&](auto vi) -> cudaError_t {
    if (b.vout * E == 16) return launch(vi, cute::Int<16 / E>{});
    if constexpr (E < 4) if (b.vout * E == 4) return launch(vi, cute::Int<4 / E>{});
    if (b.vout == 1) return launch(vi, cute::Int<1>{});
    return cudaErrorInvalidValue;
  };
  if (b.vin * E == 16) return with_vo(cute::Int<16 / E>{});
  if constexpr (E < 4) if (b.vin * E == 4) return with_vo(cute::Int<4 / E>{});
  if (b.vin == 1) return with_vo(cute::Int<1>{});
  return cudaErrorInvalidValue;
}

cudaError_t launch_box_e1(BoxPlan const& b, cudaStream_t stream);
cudaError_t launch_box_e2(BoxPlan const& b, cudaStream_t stream);
cudaError_t launch_box_e4(BoxPlan const& b, cudaStream_t stream);
cudaError_t launch_box_e8(BoxPlan const& b, cudaStream_t stream);
cudaError_t launch_box_e16(BoxPlan const& b, cudaStream_t stream);

}  // namespace cute_transpose
