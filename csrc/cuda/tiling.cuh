// What every kernel shares: element types by size, global-memory views of a Problem, the tile
// geometry of the seed variants, the walk over tiles, guarded copies with their loads issued
// first, and the predicated per-thread tile copy.
#pragma once

#include <cute/tensor.hpp>

#include <climits>
#include <type_traits>

#include "work.h"

namespace cute_transpose {

// Kernels move bits, so a dtype is just its size: bool/uint8/float8 -> uint8_t, ...,
// complex128 -> a 16-byte word. Calls f(T{}) with the unsigned type of that size.
template <class F>
cudaError_t with_element_type(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    case 16: return f(cute::uint128_t{});
  }
  return cudaErrorInvalidValue;
}

// A short side's length made a template argument, for the kernels that unroll over it
// (interleave, stage): calls f(std::integral_constant<int, C>{}) for C == count, of 2 .. kMax.
template <int kMax, int C = 2, class F>
cudaError_t with_channel_count(int count, F&& f) {
  if (count == C) return f(std::integral_constant<int, C>{});
  if constexpr (C < kMax) return with_channel_count<kMax, C + 1>(count, f);
  return cudaErrorInvalidValue;
}

//
// Global views of one matrix of the batch, at the batch offsets `at` (Batch::operator()). Every
// view is indexed in the input's coordinates (m, n), so one tile coordinate and one predicate
// serve both the read and the write side.
//

template <class T>
CUTE_HOST_DEVICE auto input_matrix(Problem const& p, Offsets at) {  // (M,N) : (sM,sN), any strides
  return cute::make_tensor(cute::make_gmem_ptr(static_cast<T const*>(p.src) + at.in),
                           cute::make_layout(cute::make_shape(p.rows, p.cols),
                                             cute::make_stride(p.row_stride, p.col_stride)));
}

template <class T>
CUTE_HOST_DEVICE auto transposed_output_matrix(Problem const& p, Offsets at) {  // (M,N) : (1,oN)
  // The output's m is contiguous: element (m, n) lands at n * out_col_stride + m (out_col_stride
  // is M for the transpose variants' (..., N, M) output).
  return cute::make_tensor(cute::make_gmem_ptr(static_cast<T*>(p.dst) + at.out),
                           cute::make_layout(cute::make_shape(p.rows, p.cols),
                                             cute::make_stride(cute::Int<1>{}, p.out_col_stride)));
}

template <class T>
CUTE_HOST_DEVICE auto copy_output_matrix(Problem const& p, Offsets at) {  // (M,N) : (oM,1)
  return cute::make_tensor(cute::make_gmem_ptr(static_cast<T*>(p.dst) + at.out),
                           cute::make_layout(cute::make_shape(p.rows, p.cols),
                                             cute::make_stride(p.out_row_stride, cute::Int<1>{})));
}

//
// The seed variants' tile: (bM, bN) = (64, one 128-byte line of elements), 256 threads.
//

template <class T>
struct SeedTile {
  static constexpr int kLine = 128 / int(sizeof(T));  // elements in a 128-byte line
  static constexpr int kRowThreads = kLine < 32 ? kLine : 32;
  using BM = cute::Int<64>;
  using BN = cute::Int<kLine>;
  using Shape = cute::Shape<BM, BN>;
  static constexpr int kThreads = 256;

  // Threads walking along rows: consecutive threads take consecutive n, i.e. the input's
  // contiguous direction -- reads of the input coalesce.
  using AlongRows = cute::Layout<cute::Shape<cute::Int<kThreads / kRowThreads>, cute::Int<kRowThreads>>,
                                 cute::Stride<cute::Int<kRowThreads>, cute::_1>>;
  // Threads walking down columns: consecutive threads take consecutive m, i.e. the output's
  // contiguous direction -- writes of the transposed output coalesce.
  using DownColumns = cute::Layout<cute::Shape<cute::_32, cute::Int<kThreads / 32>>,
                                   cute::Stride<cute::_1, cute::_32>>;
};

//
// The walk over tiles: n-tiles fastest, then m-tiles, then the batch. A 1-D grid of up to
// 2^31-1 blocks loops over the tiles, so no shape exceeds the grid limits.
//

struct TileCoord {
  int64_t m, n, b;     // tile indices
  Offsets at;          // the batch offsets of matrix b
  bool interior;       // the whole tile lies inside the matrix: no predicates needed
};

struct TileWalk {
  int64_t rows, cols, tile_m, tile_n, tiles_m, tiles_n, count;
  bool m_first;  // Problem::m_first

  CUTE_HOST_DEVICE TileWalk(int64_t rows_, int64_t cols_, int64_t matrices, int64_t bm, int64_t bn,
                            bool m_first_ = false)
      : rows(rows_), cols(cols_), tile_m(bm), tile_n(bn),
        tiles_m((rows_ + bm - 1) / bm), tiles_n((cols_ + bn - 1) / bn),
        count(matrices * tiles_m * tiles_n), m_first(m_first_) {}
  CUTE_HOST_DEVICE TileWalk(Problem const& p, int64_t bm, int64_t bn)
      : TileWalk(p.rows, p.cols, p.batch.count, bm, bn, p.m_first) {}

  CUTE_HOST_DEVICE TileCoord operator()(int64_t t, Batch const& batch) const {
    TileCoord c;
    if (m_first) {
      c.m = t % tiles_m;
      c.n = (t / tiles_m) % tiles_n;
    } else {
      c.n = t % tiles_n;
      c.m = (t / tiles_n) % tiles_m;
    }
    c.b = t / (tiles_n * tiles_m);
    c.at = batch(c.b);
    c.interior = (c.m + 1) * tile_m <= rows && (c.n + 1) * tile_n <= cols;
    return c;
  }

  dim3 grid() const { return dim3(static_cast<unsigned>(count < INT_MAX ? count : INT_MAX)); }
};

// Runs body(tile, gIn, cTile) for every (bM,bN) tile this block owns, where gIn is the input
// tile and cTile holds each element's (m, n) in the matrix. Tiles are walked n-fastest; a block
// loops when there are more tiles than blocks.
template <class T, class TileShape, class Body>
CUTE_DEVICE void for_each_tile(Problem const& p, TileShape tile_shape, Body&& body) {
  using namespace cute;
  Tensor cIn = make_identity_tensor(make_shape(p.rows, p.cols));  // (M,N) -> (m,n)
  TileWalk walk(p, size<0>(tile_shape), size<1>(tile_shape));
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk(t, p.batch);
    Tensor mIn = input_matrix<T>(p, tile.at);                                            // (M,N)
    body(tile, local_tile(mIn, tile_shape, make_coord(tile.m, tile.n)),                  // (bM,bN)
         local_tile(cIn, tile_shape, make_coord(tile.m, tile.n)));                       // (bM,bN)
  }
}

// A thread's kCount guarded copies as loads, then stores: each group of up to kGroup loads is
// issued before any of its stores. Written as one loop, `if (ok(i)) store(i, load(i))`, each load
// sits behind its own branch, which the compiler does not move above the store before it; the
// SASS of such loops runs load, store, load, store, and a thread has one load in flight at a time.
// On an H200 (docs/PERFORMANCE.md, "Loads in flight"), with the loads grouped: the split kernel's
// TTC rank-6 transposes ran 0.86-0.92 of clone against 0.69-0.73, the lean kernel's uint8 (127,
// 97, 127) permuted (2, 0, 1) 1.02 against 0.64. `ok` is asked again before each store, so a value
// is stored only where it was loaded. Groups of 16 by default: a load's value holds registers
// until its store.
constexpr int kLoadsInFlight = 16;

template <int kCount, int kGroup = (kCount < kLoadsInFlight ? kCount : kLoadsInFlight), class Ok, class Load,
          class Store>
CUTE_DEVICE void loads_then_stores(Ok const& ok, Load const& load, Store const& store) {
  using Value = cute::remove_cvref_t<decltype(load(0))>;
  CUTE_UNROLL
  for (int i0 = 0; i0 < kCount; i0 += kGroup) {
    Value v[kGroup];
    CUTE_UNROLL
    for (int i = i0; i < i0 + kGroup && i < kCount; ++i)
      if (ok(i)) v[i - i0] = load(i);
    CUTE_UNROLL
    for (int i = i0; i < i0 + kGroup && i < kCount; ++i)
      if (ok(i)) store(i, v[i - i0]);
  }
}

// A global load that asks both caches to keep the line: an L1 evict_last priority and an L2
// evict_last policy (what Triton emits for eviction_policy="evict_last"). The input
// lines then outlast the output's dirty lines in the L2, which stream out to memory first.
template <class T>
CUTE_DEVICE T load_evict_last(T const* from) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  return *from;  // no L2 cache policies before sm_80
#else
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  uint32_t w[4] = {0, 0, 0, 0};
  if constexpr (sizeof(T) == 16) {
    asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "l"(from), "l"(policy));
  } else if constexpr (sizeof(T) == 8) {
    asm("ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(w[0]), "=r"(w[1]) : "l"(from), "l"(policy));
  } else if constexpr (sizeof(T) == 4) {
    asm("ld.global.L1::evict_last.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(w[0]) : "l"(from), "l"(policy));
  } else if constexpr (sizeof(T) == 2) {
    asm("ld.global.L1::evict_last.L2::cache_hint.u16 %0, [%1], %2;" : "=r"(w[0]) : "l"(from), "l"(policy));
  } else {
    asm("ld.global.L1::evict_last.L2::cache_hint.u8 %0, [%1], %2;" : "=r"(w[0]) : "l"(from), "l"(policy));
  }
  T v;
  memcpy(&v, w, sizeof(T));
  return v;
#endif
}

// A configuration's input load: load_evict_last where it keeps its input lines (kKeep,
// KeepInputs in vector_tile.cuh), else a plain load.
template <bool kKeep, class T>
CUTE_DEVICE T load_input(T const* from) {
  if constexpr (kKeep) return load_evict_last(from);
  else return *from;
}

// Copies this thread's part of a tile. `coord` holds each element's (m, n) in the matrix;
// elements outside `extent` are skipped, unless the tile is interior. With kKeep, the source is
// global memory read through load_evict_last.
template <bool kKeep = false, class Src, class Dst, class Coord, class Extent>
CUTE_DEVICE void copy_tile_part(Src const& src, Dst&& dst, Coord const& coord, Extent const& extent,
                                bool interior) {
  auto const load = [&](int i) {
    if constexpr (kKeep) return load_evict_last(&src(i));
    else return src(i);
  };
  if (interior) {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(src); ++i) dst(i) = load(i);
  } else {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(src); ++i)
      if (cute::elem_less(coord(i), extent)) dst(i) = load(i);
  }
}

// The block's statically sized shared tile of N elements of T. Raw bytes, because T (such as
// the 16-byte word) may have a constructor, which __shared__ variables cannot run. Each
// (T, N, Align, Id) is one buffer: a kernel that needs two buffers gives them different Ids.
template <class T, int N, int Align, int Id = 0>
CUTE_DEVICE T* shared_tile() {
  __shared__ alignas(Align) unsigned char bytes[N * sizeof(T)];
  return reinterpret_cast<T*>(bytes);
}

// One past the input's last byte (strides are non-negative).
inline unsigned char const* input_end(Problem const& p) {
  int64_t last = (p.rows - 1) * p.row_stride + (p.cols - 1) * p.col_stride;
  for (int d = 0; d < p.batch.rank; ++d) last += (p.batch.size[d] - 1) * p.batch.in_stride[d];
  return static_cast<unsigned char const*>(p.src) + (last + 1) * p.element_size;
}

// How many blocks of `kernel` fit on one SM at once, with `smem` bytes of dynamic shared memory.
template <class Kernel>
int blocks_per_sm(Kernel kernel, int threads, size_t smem = 0) {
  int per_sm = 1;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
  return per_sm > 0 ? per_sm : 1;
}

// The current GPU's SM count.
inline int sm_count() {
  int device = 0, sms = 1;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms;
}

// The largest grid whose blocks are all resident at once (at most one block per tile).
inline dim3 persistent_grid(int blocks_per_sm, int64_t tiles) {
  int64_t const resident = int64_t(sm_count()) * blocks_per_sm;
  return dim3(static_cast<unsigned>(tiles < resident ? tiles : resident));
}

// Launches kernel<<<one block per tile (looping past 2^31-1), threads>>> on `stream`.
template <class Kernel>
cudaError_t launch_over_tiles(Kernel kernel, Problem const& p, int64_t bm, int64_t bn, int threads,
                              cudaStream_t stream) {
  kernel<<<TileWalk(p, bm, bn).grid(), threads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace cute_transpose
