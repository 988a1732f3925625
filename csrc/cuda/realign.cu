// The Realign kernel: a transpose whose rows lie off the 16-byte grid -- odd sizes such as
// 9973 x 10007, offset views -- moving every global access of a tile's interior as an aligned
// 16-byte vector on both sides, where the Tile kernel falls back to one or two elements per
// access (and the padded seed kernel to one).
//
// Aligned vectors of an output row begin where the row's own offset from the 16-byte grid puts
// them, and that offset differs from row to row. So a tile is cut along m' = m + d_n, where
// d_n is the number of elements of output row n before its first aligned vector: tile t covers
// m' in [t * BM, (t + 1) * BM) of every output row, which is BM / V whole aligned vectors of
// each (V = 16 / E elements), except at the two ends of a whole row. In input rows that is
// m in [t * BM - d_n, (t + 1) * BM - d_n): the tile stages the V - 1 input rows above its own.
//
//   1. global -> shared: each staged input row's BN elements (256 bytes) are covered by the
//      aligned 16-byte vectors around them -- one more than 256 / 16 when the row starts inside
//      a vector --, copied as they are by cp.async (no registers; all of a tile's loads in flight
//      at once). Then each row is shifted into place, by the half-warp that owns it: element n
//      at byte n * E of the row (funnel shifts across neighbouring vectors).
//   2. shared -> global: each thread gathers the V elements of one aligned vector of an output
//      row from V staged rows and stores it whole; a warp stores 8 consecutive vectors of each
//      of 4 output rows. A vector that an output row shares with the matrix's edge is stored
//      element by element, its own elements only.
//   2'. where every output row starts on the 16-byte grid (d_n = 0: a transposed offset view, or
//      input rows of any length into output rows of whole vectors), the tile stages no extra
//      rows and phase 2 is the Tile kernel's: each thread transposes a V x V block of staged
//      elements in registers and stores V whole vectors, instead of gathering V elements per
//      vector from shared memory.
//
// Shared memory: staged row r's 16 vectors are permuted by r / V, since the 8 threads of a warp
// that read one output row read staged rows V apart; for 1- and 2-byte elements the words inside
// each vector are rotated by r as well, since the 4 threads that read neighbouring output rows
// read different staged rows (the output rows' offsets differ). A model of the reads over random
// strides and offsets: unpermuted, 4- to 32-way bank conflicts (8-byte to 1-byte elements);
// permuted, none for 4- and 8-byte elements, 2-way for 2-byte, 4-way for 1-byte; rotated too,
// 1.8-way and 1.6-way.
#include <cute/arch/copy_sm80.hpp>

#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace realign_detail {

constexpr int kThreads = realign_tile(1).threads;

// kAligned: every output row starts on the 16-byte grid (d_n = 0), so a tile stages its own rows only.
template <class T, bool kAligned>
struct Geometry {
  static constexpr int E = sizeof(T), V = 16 / E;
  static constexpr int BM = realign_tile(E).bm;  // elements of an output row a tile writes (along m')
  static constexpr int BN = realign_tile(E).bn;  // elements of an input row a tile reads (along n): 256 bytes
  static constexpr int kAbove = kAligned ? 0 : V - 1;  // staged rows above the tile's own
  static constexpr int kRows = BM + kAbove;
  static constexpr int kVectors = 256 / 16 + 1;  // aligned vectors that cover 256 bytes anywhere
  static constexpr int kPitch = 16 * kVectors;   // bytes per staged row
};

// cp.async of the `bytes` (1..16) bytes at `from` into the 16 at `to`, the rest zero-filled:
// the vector that crosses the input's end reads only the input's bytes.
CUTE_DEVICE void copy_async(unsigned char* to, unsigned char const* from, int bytes) {
  using Vector = cute::uint128_t;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800  // no cp.async: an ordinary load and store
  Words<16> v{};
  for (int i = 0; i < bytes; ++i) v.word[i / 4] |= uint32_t(from[i]) << (8 * (i % 4));
  *reinterpret_cast<Words<16>*>(to) = v;
#else
  if (bytes == 16) {
    cute::SM80_CP_ASYNC_CACHEGLOBAL<Vector>::copy(*reinterpret_cast<Vector const*>(from),
                                                  *reinterpret_cast<Vector*>(to));
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(cute::cast_smem_ptr_to_uint(to)), "l"(from),
                 "r"(bytes));
  }
#endif
}

// Element k (of E bytes, k < V) of a vector being gathered.
template <int E, class T>
CUTE_DEVICE void put(Words<16>& v, int k, T x) {
  if constexpr (E == 8) {
    v.word[2 * k] = uint32_t(x);
    v.word[2 * k + 1] = uint32_t(x >> 32);
  } else if constexpr (E == 4) {
    v.word[k] = x;
  } else {
    v.word[k * E / 4] |= uint32_t(x) << (8 * E * (k % (4 / E)));
  }
}

// Element k (k < V) of a vector: the inverse of put.
template <class T>
CUTE_DEVICE T element_of(Words<16> const& v, int k) {
  constexpr int E = sizeof(T);
  if constexpr (E == 8) return T(v.word[2 * k]) | (T(v.word[2 * k + 1]) << 32);
  else if constexpr (E == 4) return T(v.word[k]);
  else return T(v.word[k * E / 4] >> (8 * E * (k % (4 / E))));
}

// Where vector i and element byte b of staged row r lie, from the row's start: vector i at
// position i ^ ((r / V) % 8), its words rotated by rotation(r).
template <int E>
CUTE_DEVICE int rotation(int r) {
  return E == 1 ? (r + (r >> 2)) % 4 : E == 2 ? r % 4 : 0;
}
template <int E>
CUTE_DEVICE int vector_at(int r, int i) {
  return 16 * (i ^ ((r / (16 / E)) % 8));
}
template <int E>
CUTE_DEVICE int staged_at(int r, int b) {
  return vector_at<E>(r, b / 16) + 4 * ((b / 4 + rotation<E>(r)) % 4) + b % 4;
}

// Word w of v moved to word (w + k) % 4.
CUTE_DEVICE Words<16> rotate_words(Words<16> const& v, int k) {
  auto by = [&](auto K) {
    Words<16> out;
    CUTE_UNROLL
    for (int w = 0; w < 4; ++w) out.word[(w + decltype(K)::value) % 4] = v.word[w];
    return out;
  };
  switch (k) {
    case 0: return v;
    case 1: return by(cute::Int<1>{});
    case 2: return by(cute::Int<2>{});
    default: return by(cute::Int<3>{});
  }
}

template <class T, bool kAligned>
__global__ void __launch_bounds__(kThreads) realign_transpose(Problem p, unsigned char const* src_end) {
  using G = Geometry<T, kAligned>;
  constexpr int E = G::E, V = G::V;
  __shared__ alignas(16) unsigned char staged[G::kRows * G::kPitch];
  auto const* const src = static_cast<unsigned char const*>(p.src);
  T* const dst = static_cast<T*>(p.dst);
  int64_t const M = p.rows, N = p.cols;
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // (sIn * E) mod 16: how far each next input row's offset into its first vector moves.
  int const row_step = int((uint64_t(p.row_stride) * E) % 16);
  TileWalk const walk(M + G::kAbove, N, p.batch.count, G::BM, G::BN, p.m_first);  // tiles of (m', n)
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord const tile = walk(t, p.batch);
    int64_t const m_top = tile.m * G::BM - G::kAbove;  // the input row staged first
    int64_t const n0 = tile.n * G::BN;
    int const run = int(N - n0 < G::BN ? N - n0 : G::BN) * E;  // bytes of each staged row that are the tile's
    // The offset into its first vector of staged row r: s(0) + r * row_step, mod 16.
    int const s_top = int((reinterpret_cast<uintptr_t>(src) + uint64_t(tile.at.in + m_top * p.row_stride + n0) * E) % 16);
    auto const offset = [&](int r) { return (s_top + r * row_step) % 16; };
    auto const in_matrix = [&](int r) { return m_top + r >= 0 && m_top + r < M; };

    //
    // 1a. global -> shared: (kRows, kVectors) aligned vectors, those that hold some of the row
    //
    for (int i = threadIdx.x; i < G::kRows * G::kVectors; i += kThreads) {
      int const r = i / G::kVectors, h = i % G::kVectors, s = offset(r);
      if (!in_matrix(r) || 16 * h >= s + run) continue;
      unsigned char const* const from = src + (tile.at.in + (m_top + r) * p.row_stride + n0) * E - s + 16 * h;
      copy_async(staged + r * G::kPitch + 16 * h, from, from + 16 <= src_end ? 16 : int(src_end - from));
    }
    cute::cp_async_fence();
    cute::cp_async_wait<0>();
    __syncthreads();

    //
    // 1b. each staged row shifted into place by a half-warp, lane h writing its vector h
    //
    for (int r0 = 0; r0 < G::kRows; r0 += kThreads / 16) {  // every lane of a warp takes every step
      int const r = r0 + threadIdx.x / 16, h = threadIdx.x % 16;
      bool const mine = r < G::kRows && in_matrix(r);
      unsigned char* const row = staged + r * G::kPitch;
      int const s = offset(r);
      Words<16> const here = mine ? *reinterpret_cast<Words<16> const*>(row + 16 * h) : Words<16>{};
      Words<16> next = shuffle_down(here, 1, 16);
      if (h == 15 && mine) next = *reinterpret_cast<Words<16> const*>(row + 16 * 16);
      Words<16> const placed = rotate_words(shift_bytes(here, next, s), kAligned ? 0 : rotation<E>(r));
      __syncwarp();
      if (mine) *reinterpret_cast<Words<16>*>(row + vector_at<E>(r, h)) = placed;
    }
    __syncthreads();

    if constexpr (kAligned) {
      //
      // 2'. aligned output rows: each thread takes a V x V block -- V staged rows by one vector --
      //     and transposes it in registers (as the Tile kernel does); consecutive threads take
      //     consecutive blocks down the tile, so a warp writes runs of each output row
      //
      constexpr int CM = G::BM / V, CN = G::BN / V;
      for (int b = threadIdx.x; b < CM * CN; b += kThreads) {
        int const c = b % CM, h = b / CM;
        if (n0 + h * V >= N) continue;
        int64_t const m0 = tile.m * G::BM + c * V;
        Words<16> rows[V];
        CUTE_UNROLL
        for (int k = 0; k < V; ++k)
          rows[k] = *reinterpret_cast<Words<16> const*>(staged + (c * V + k) * G::kPitch + vector_at<E>(c * V + k, h));
        CUTE_UNROLL
        for (int j = 0; j < V; ++j) {  // each column stored as soon as it is built (registers)
          if (n0 + h * V + j >= N) break;
          Words<16> const column = transposed_column<T, V>(rows, j);
          T* const out_row = dst + tile.at.out + (n0 + h * V + j) * p.out_col_stride;
          if (m0 + V <= M) {
            store_vector(out_row + m0, column);
          } else {
            CUTE_UNROLL
            for (int k = 0; k < V; ++k)
              if (m0 + k < M) out_row[m0 + k] = element_of<T>(column, k);
          }
        }
      }
      __syncthreads();  // the next tile reuses the stage
      continue;
    }

    //
    // 2. shared -> global: (BN, BM / V) output vectors; a warp takes 4 output rows x 8 vectors
    //
    constexpr int kItems = (G::BN / 4) * (G::BM / V / 8);
    for (int item = warp; item < kItems; item += kThreads / 32) {
      int const n = (item % (G::BN / 4)) * 4 + lane % 4;  // output row within the tile
      int const c = (item / (G::BN / 4)) * 8 + lane / 4;  // vector within its run
      if (n0 + n >= N) continue;
      T* const out_row = dst + tile.at.out + (n0 + n) * p.out_col_stride;
      int const d = int(reinterpret_cast<uintptr_t>(out_row) % 16) / E;  // elements before its first aligned vector
      int64_t const m0 = tile.m * G::BM + c * V - d;                     // the vector's first element
      int const r0 = c * V - d + V - 1;                                  // its staged row
      auto const element = [&](int k) {
        return *reinterpret_cast<T const*>(staged + (r0 + k) * G::kPitch + staged_at<E>(r0 + k, n * E));
      };
      if (m0 >= 0 && m0 + V <= M) {
        Words<16> v{};
        CUTE_UNROLL
        for (int k = 0; k < V; ++k) put<E>(v, k, element(k));
        store_vector(out_row + m0, v);
      } else {
        for (int k = 0; k < V; ++k)
          if (m0 + k >= 0 && m0 + k < M) out_row[m0 + k] = element(k);
      }
    }
    __syncthreads();  // the next tile reuses the stage
  }
}

}  // namespace realign_detail

cudaError_t launch_realign(Problem const& p, cudaStream_t stream) {
  using namespace realign_detail;
  return with_element_type(p.element_size, [&](auto element) -> cudaError_t {
    using T = decltype(element);
    if constexpr (sizeof(T) > 8) {
      return cudaErrorInvalidValue;  // 16-byte elements are whole vectors: the Tile kernel's
    } else {
      auto const launch = [&](auto aligned) {
        using G = Geometry<T, decltype(aligned)::value>;
        TileWalk const walk(p.rows + G::kAbove, p.cols, p.batch.count, G::BM, G::BN, p.m_first);
        realign_transpose<T, decltype(aligned)::value><<<walk.grid(), kThreads, 0, stream>>>(p, input_end(p));
        return cudaGetLastError();
      };
      return output_rows_aligned(p) ? launch(cute::true_type{}) : launch(cute::false_type{});
    }
  });
}

}  // namespace cute_transpose
