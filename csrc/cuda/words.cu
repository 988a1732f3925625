// The Words kernel: transposes of 1- and 2-byte elements whose rows lie off the 16-byte grid --
// odd sizes such as 1000 x 3001 uint8, where no vector fits and every global access moves one
// element. The padded seed kernel and the lean kernel move them one element at a time through
// shared memory as well, a shared-memory store and load per element (4-way bank-conflicted in
// padded for 1-byte elements). Here shared memory holds 4-byte words:
//
//   1. each thread loads K = 4 / E elements of one input column n from K consecutive rows (m)
//      -- one element per access, a warp's lanes on 32 consecutive n, so each load instruction
//      reads a run of the input row -- and packs them into one word, which is K consecutive
//      elements of output row n: sT(n, g) holds output elements m = g K .. g K + K - 1. Where
//      the tile lies wholly inside the matrix, all of a thread's loads are issued unpredicated
//      before its first shared-memory store (the edge tiles check each element);
//   2. each thread reads one word of sT, K elements of an output row, and stores them one
//      element per access (a warp's lanes on consecutive words of one output row).
//
// The tile is 128 bytes of each output row (BM = 128 / E elements, G = 32 words) by BN input
// columns (64, or 32 in the Narrow shape the chooser runs): each shared-memory access moves 4
// bytes, and sT's rows are padded by one word, so that phase 1's stores down a column of words
// (lanes on 32 consecutive n) fall in 32 banks, and phase 2's loads along a row do too. Input
// rows are unit-stride (n consecutive in memory; the chooser refuses others).
//
// The loops are written as plainly as they can be -- 64-bit offsets from the tile's corner, one
// accumulator per word, phase 2 in one loop with the edge tests inside -- because the compiler's
// schedule depends on it: on an H200 an earlier form of the same accesses (32-bit offsets, index
// lambdas, separate loops for whole and edge tiles in phase 2) ran 5-10% slower on uint8
// (docs/PERFORMANCE.md, "Words: 1- and 2-byte elements off the grid").
#include <cute/tensor.hpp>

#include "launch.h"
#include "small_grid.cuh"

namespace cute_transpose {
namespace {

template <class T_, TileShape Shape>
struct WordsTile {
  using T = T_;
  static constexpr int E = sizeof(T), K = 4 / E;  // elements per 4-byte word
  static constexpr TileDims kDims = words_tile(E, Shape);
  static constexpr int BM = kDims.bm, BN = kDims.bn, kThreads = kDims.threads;
  static constexpr int G = BM / K;                      // words per output row of the tile
  static constexpr int kWords = BN * G / kThreads;      // words per thread
  static_assert(E <= 2 && G == 32 && (BN * G) % kThreads == 0);
  // sT(n, g): word g of output row n; rows G + 1 words apart.
  using Smem = cute::Layout<cute::Shape<cute::Int<BN>, cute::Int<G>>, cute::Stride<cute::Int<G + 1>, cute::_1>>;  // (BN,G)
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads) words_transpose(SmallGrid const a) {
  using namespace cute;
  using T = typename Cfg::T;
  constexpr int E = Cfg::E, K = Cfg::K, BM = Cfg::BM, BN = Cfg::BN, G = Cfg::G, kThreads = Cfg::kThreads;
  __shared__ uint32_t smem[cosize_v<typename Cfg::Smem>];
  Tensor sT = make_tensor(make_smem_ptr(smem), typename Cfg::Smem{});  // (BN,G)

  int m0, n0, in_at, out_at;
  a.tile(BM, BN, m0, n0, in_at, out_at);
  T const* src = static_cast<T const*>(a.src) + in_at;
  T* dst = static_cast<T*>(a.dst) + out_at;
  int const rows = a.rows - m0, cols = a.cols - n0;  // what is left of the matrix from the tile's corner
  bool const whole = rows >= BM && cols >= BN;

  //
  // 1. K input rows -> one word of an output row: word i of this thread is sT(n, g), item
  //    threadIdx.x + i * kThreads of the (BN, G) tile, n fastest
  //
  uint32_t word[Cfg::kWords];
  if (whole) {
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kWords; ++i) {
      int const item = threadIdx.x + i * kThreads, n = item % BN, g = item / BN;
      T const* column = src + n;
      uint32_t w = 0;
      CUTE_UNROLL
      for (int j = 0; j < K; ++j) w |= uint32_t(__ldg(column + int64_t(g * K + j) * a.row_stride)) << (8 * E * j);
      word[i] = w;
    }
  } else {
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kWords; ++i) {
      int const item = threadIdx.x + i * kThreads, n = item % BN, g = item / BN;
      T const* column = src + n;
      uint32_t w = 0;
      CUTE_UNROLL
      for (int j = 0; j < K; ++j) {
        int const m = g * K + j;
        uint32_t const e = n < cols && m < rows ? uint32_t(column[int64_t(m) * a.row_stride]) : 0u;
        w |= e << (8 * E * j);
      }
      word[i] = w;
    }
  }
  CUTE_UNROLL
  for (int i = 0; i < Cfg::kWords; ++i) {
    int const item = threadIdx.x + i * kThreads;
    sT(item % BN, item / BN) = word[i];
  }
  __syncthreads();

  //
  // 2. words of sT -> output rows: word i of this thread is sT(n, g), K elements of output row n
  //    from m = g K, item threadIdx.x + i * kThreads of the tile, g fastest
  //
  CUTE_UNROLL
  for (int i = 0; i < Cfg::kWords; ++i) {
    int const item = threadIdx.x + i * kThreads, n = item / G, g = item % G;
    uint32_t const w = sT(n, g);
    T* to = dst + int64_t(n) * a.out_col_stride + g * K;
    if (n < cols) {
      if (whole) {
        CUTE_UNROLL
        for (int j = 0; j < K; ++j) to[j] = T(w >> (8 * E * j));
      } else {
        CUTE_UNROLL
        for (int j = 0; j < K; ++j)
          if (g * K + j < rows) to[j] = T(w >> (8 * E * j));
      }
    }
  }
}

template <class T, TileShape Shape>
cudaError_t launch_words_shape(SmallGrid const& a, int batch, cudaStream_t stream) {
  using Cfg = WordsTile<T, Shape>;
  return a.launch_slabs(batch, [&](SmallGrid const& slab, int matrices) {
    words_transpose<Cfg><<<slab.grid(Cfg::BM, Cfg::BN, matrices), Cfg::kThreads, 0, stream>>>(slab);
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t launch_words(Problem const& p, TileShape shape, cudaStream_t stream) {
  TileDims const t = words_tile(p.element_size, shape);
  if ((p.element_size != 1 && p.element_size != 2) || (p.col_stride != 1 && p.cols != 1) || !SmallGrid::launchable(p, t.bm, t.bn))
    return cudaErrorInvalidValue;
  SmallGrid const a(p);
  int const batch = int(p.batch.count);
  auto const run = [&](auto e) -> cudaError_t {
    using T = decltype(e);
    if (shape == TileShape::Narrow) return launch_words_shape<T, TileShape::Narrow>(a, batch, stream);
    if (shape == TileShape::Square) return launch_words_shape<T, TileShape::Square>(a, batch, stream);
    return cudaErrorInvalidValue;
  };
  return p.element_size == 1 ? run(uint8_t{}) : run(uint16_t{});
}

}  // namespace cute_transpose
