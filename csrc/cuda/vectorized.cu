// The fast path behind the `transpose` op: the swizzled shared-memory transpose with wide
// accesses. Each global load and store moves a W-byte vector (16 bytes where alignment allows,
// else 8 or 4) of V = W / sizeof(T) elements:
//   1. threads along rows load the (BM,BN) input tile as (BM, BN/V) vectors into shared memory;
//   2. each thread takes a V x V block of elements -- V vectors from V consecutive rows --,
//      transposes it in registers (byte permutes for 1- and 2-byte elements), and stores V
//      vectors to V consecutive output rows. Consecutive threads take consecutive blocks down
//      the tile's columns, so each output row is written in long contiguous runs.
// Shared memory is addressed in vectors and swizzled at vector granularity: Swizzle<B,0,log2 BN>
// XORs the block-row index (m / V) into the vector column, so the 128/W threads that share a
// shared-memory wavefront hit distinct banks in both phases (B = log2(128 / W)).
#include "launch.h"
#include "tiling.cuh"

namespace cute_transpose {
namespace {

using namespace cute;

// A W-byte vector as 32-bit words; its alignment lets the compiler emit one W-byte access.
template <int W>
struct alignas(W) Words {
  uint32_t word[W / 4];
};

constexpr int log2i(int x) { return x <= 1 ? 0 : 1 + log2i(x / 2); }

template <class T_, int W, int BM_, int BN_, int Threads>
struct VecTile {
  using T = T_;
  using Vec = Words<W>;
  static constexpr int kThreads = Threads;
  static constexpr int V = W / int(sizeof(T));  // elements per vector
  static constexpr int BM = BM_, BN = BN_;      // tile, in elements
  static constexpr int CN = BN / V;             // vectors in a tile row (input side)
  static constexpr int CM = BM / V;             // vectors in a tile column (output side)
  static constexpr int kSwizzleBits = log2i(128 / W);
  static_assert(V >= 1 && BM % V == 0 && BN % V == 0);
  static_assert(Threads % CN == 0 && BM % (Threads / CN) == 0, "load threads must tile (BM, CN)");
  static_assert(Threads % CM == 0 && CN % (Threads / CM) == 0, "store threads must tile (CM, CN)");
  static_assert(CN >= (1 << kSwizzleBits), "the swizzle needs that many vector columns");

  // Phase 1: threads along tile rows, one vector each per step: (Threads/CN, CN).
  using LoadThreads = Layout<Shape<Int<Threads / CN>, Int<CN>>, Stride<Int<CN>, _1>>;
  // Phase 2: threads over the (CM, CN) grid of V x V blocks, block rows fastest.
  using StoreThreads = Layout<Shape<Int<CM>, Int<Threads / CM>>, Stride<_1, Int<CM>>>;
  using Smem = decltype(composition(Swizzle<kSwizzleBits, 0, log2i(BN)>{},
                                    Layout<Shape<Int<BM>, Int<CN>>, Stride<Int<CN>, _1>>{}));  // (BM,CN)
};

// out[j] = column j of the V x V block whose rows are in[0..V): element k of out[j] is
// element j of in[k]. Elements of 4 bytes or more are whole words: only registers move.
template <class T, int V, class Vec>
CUTE_DEVICE void transpose_block(Vec const (&in)[V], Vec (&out)[V]) {
  constexpr int kWords = sizeof(Vec) / 4;
  if constexpr (sizeof(T) >= 4) {
    constexpr int kWordsPerElem = sizeof(T) / 4;
    CUTE_UNROLL
    for (int j = 0; j < V; ++j)
      CUTE_UNROLL
      for (int k = 0; k < V; ++k)
        CUTE_UNROLL
        for (int q = 0; q < kWordsPerElem; ++q)
          out[j].word[k * kWordsPerElem + q] = in[k].word[j * kWordsPerElem + q];
  } else if constexpr (sizeof(T) == 2) {
    // Output word w of column j: the halves j of rows 2w and 2w+1.
    CUTE_UNROLL
    for (int j = 0; j < V; ++j)
      CUTE_UNROLL
      for (int w = 0; w < kWords; ++w)
        out[j].word[w] = __byte_perm(in[2 * w].word[j / 2], in[2 * w + 1].word[j / 2], (j & 1) ? 0x7632 : 0x5410);
  } else {
    // Output word w of column j: the bytes j of rows 4w .. 4w+3, paired up, then joined.
    CUTE_UNROLL
    for (int j = 0; j < V; ++j) {
      uint32_t const pick = (j & 3) | ((4 + (j & 3)) << 4);  // byte j%4 of each operand
      CUTE_UNROLL
      for (int w = 0; w < kWords; ++w) {
        uint32_t const lo = __byte_perm(in[4 * w].word[j / 4], in[4 * w + 1].word[j / 4], pick);
        uint32_t const hi = __byte_perm(in[4 * w + 2].word[j / 4], in[4 * w + 3].word[j / 4], pick);
        out[j].word[w] = __byte_perm(lo, hi, 0x5410);
      }
    }
  }
}

// kPrefetch: a persistent block loads its next tile while it writes out the current one. That
// costs registers (occupancy), so it pays only when there are few tiles per resident block.
template <class Cfg, bool kPrefetch>
__global__ void __launch_bounds__(Cfg::kThreads) vectorized_transpose(Problem p) {
  using T = typename Cfg::T;
  using Vec = typename Cfg::Vec;
  constexpr int V = Cfg::V;
  using InTile = Shape<Int<Cfg::BM>, Int<Cfg::CN>>;   // input tile, in vectors along n
  using OutTile = Shape<Int<Cfg::BN>, Int<Cfg::CM>>;  // output tile, in vectors along m

  Tensor mIn = make_tensor(make_gmem_ptr(static_cast<Vec const*>(p.src)),            // (M,N/V,B)
                           make_layout(make_shape(p.rows, p.cols / V, p.batch),
                                       make_stride(p.row_stride / V, _1{}, p.batch_stride / V)));
  Tensor mOut = make_tensor(make_gmem_ptr(static_cast<Vec*>(p.dst)),                 // (N,M/V,B)
                            make_layout(make_shape(p.cols, p.rows / V, p.batch),
                                        make_stride(p.rows / V, _1{}, p.rows * p.cols / V)));
  Tensor cIn = make_identity_tensor(make_shape(p.rows, p.cols / V));                  // (M,N/V)
  Tensor cOut = make_identity_tensor(make_shape(p.cols, p.rows / V));                 // (N,M/V)
  Tensor sTile = make_tensor(make_smem_ptr(shared_tile<Vec, Cfg::BM * Cfg::CN, 128>()),  // (BM,CN)
                             typename Cfg::Smem{});
  // This thread's V x V blocks, as (block row, block column) in the (CM,CN) block grid.
  Tensor tBlocks = local_partition(make_identity_tensor(Shape<Int<Cfg::CM>, Int<Cfg::CN>>{}),
                                   typename Cfg::StoreThreads{}, threadIdx.x);        // (1,CN/(T/CM))

  //
  // 1. global -> shared: whole vectors, threads along rows. With kPrefetch they are staged in
  //    registers, so that the next tile's loads fly while this one is written out.
  //
  using LoadThreads = typename Cfg::LoadThreads;
  Tensor tIn_s = local_partition(sTile, LoadThreads{}, threadIdx.x);  // (BM/(T/CN),1)
  Tensor rIn = make_tensor<Vec>(shape(tIn_s));                         // (BM/(T/CN),1)
  TileWalk walk(p, Cfg::BM, Cfg::BN);
  auto load = [&](TileCoord const& tile, auto&& dst) {
    Tensor gIn = local_tile(mIn(_, _, tile.b), InTile{}, make_coord(tile.m, tile.n));  // (BM,CN)
    Tensor cInTile = local_tile(cIn, InTile{}, make_coord(tile.m, tile.n));             // (BM,CN)
    copy_tile_part(local_partition(gIn, LoadThreads{}, threadIdx.x), dst,
                   local_partition(cInTile, LoadThreads{}, threadIdx.x), shape(cIn), tile.interior);
  };

  if (kPrefetch && blockIdx.x < walk.count) load(walk[blockIdx.x], rIn);
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk[t];
    if constexpr (kPrefetch) {
      copy(rIn, tIn_s);  // lanes outside the matrix hold stale data, which is never stored
    } else {
      load(tile, tIn_s);
    }
    __syncthreads();
    if (kPrefetch && t + gridDim.x < walk.count) load(walk[t + gridDim.x], rIn);

    //
    // 2. shared -> registers -> transpose -> global, one V x V block at a time
    //
    Tensor gOut = local_tile(mOut(_, _, tile.b), OutTile{}, make_coord(tile.n, tile.m));  // (BN,CM)
    Tensor cOutTile = local_tile(cOut, OutTile{}, make_coord(tile.n, tile.m));             // (BN,CM)
    CUTE_UNROLL
    for (int i = 0; i < size(tBlocks); ++i) {
      int const block_m = get<0>(tBlocks(i)), block_n = get<1>(tBlocks(i));
      Vec rows[V], cols[V];
      CUTE_UNROLL
      for (int k = 0; k < V; ++k) rows[k] = sTile(block_m * V + k, block_n);
      transpose_block<T, V>(rows, cols);
      CUTE_UNROLL
      for (int j = 0; j < V; ++j) {
        int const n = block_n * V + j;
        if (tile.interior || elem_less(cOutTile(n, block_m), shape(cOut))) gOut(n, block_m) = cols[j];
      }
    }
    __syncthreads();  // the next tile reuses sTile
  }
}

// Tile configurations per element size (BM, BN, threads): about 32 KiB of shared memory and
// 64-256 bytes in flight per thread. The vector width W falls back from 16 to 8 to 4 bytes.
template <class T, int W> struct FastConfig;
template <int W> struct FastConfig<uint8_t, W> { using type = VecTile<uint8_t, W, 128, 128, 64>; };
template <int W> struct FastConfig<uint16_t, W> { using type = VecTile<uint16_t, W, 128, 128, 256>; };
template <int W> struct FastConfig<uint32_t, W> { using type = VecTile<uint32_t, W, 64, 128, 256>; };
template <int W> struct FastConfig<uint64_t, W> { using type = VecTile<uint64_t, W, 64, 64, 256>; };
template <int W> struct FastConfig<cute::uint128_t, W> { using type = VecTile<cute::uint128_t, W, 32, 32, 256>; };

bool divisible(int64_t x, int64_t v) { return x % v == 0; }

// Whether a problem can be read and written in vectors of V elements (W bytes).
bool fits_vectors(Problem const& p, int W) {
  int64_t const V = W / p.element_size;
  if (V < 1 || !(p.col_stride == 1 || p.cols == 1)) return false;  // the kernel's n stride is 1
  return divisible(p.cols, V) && divisible(p.rows, V) &&
         (divisible(p.row_stride, V) || p.rows == 1) && (divisible(p.batch_stride, V) || p.batch == 1) &&
         divisible(reinterpret_cast<uintptr_t>(p.src), W) && divisible(reinterpret_cast<uintptr_t>(p.dst), W);
}

// The launch rule: with many tiles per resident block (8 waves or more), one tile per block and
// no prefetch; with fewer, a persistent grid with prefetch, which also evens out the last wave.
template <class T, int W>
cudaError_t launch_with(Problem const& p, cudaStream_t stream) {
  using Cfg = typename FastConfig<T, W>::type;
  int64_t const tiles = TileWalk(p, Cfg::BM, Cfg::BN).count;
  dim3 const resident = persistent_grid(vectorized_transpose<Cfg, true>, Cfg::kThreads, tiles);
  if (tiles >= 8 * int64_t(resident.x)) {
    vectorized_transpose<Cfg, false><<<TileWalk(p, Cfg::BM, Cfg::BN).grid(), Cfg::kThreads, 0, stream>>>(p);
  } else {
    vectorized_transpose<Cfg, true><<<resident, Cfg::kThreads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace

int vectorized_width(Problem const& p) {
  for (int W : {16, 8, 4})
    if (W >= p.element_size && fits_vectors(p, W)) return W;
  return 0;
}

cudaError_t launch_vectorized(Problem const& p, cudaStream_t stream) {
  int const W = vectorized_width(p);
  return with_element_type(p.element_size, [&](auto t) -> cudaError_t {
    using T = decltype(t);
    if constexpr (sizeof(T) <= 16) if (W == 16) return launch_with<T, 16>(p, stream);
    if constexpr (sizeof(T) <= 8) if (W == 8) return launch_with<T, 8>(p, stream);
    if constexpr (sizeof(T) <= 4) if (W == 4) return launch_with<T, 4>(p, stream);
    return cudaErrorInvalidValue;
  });
}

}  // namespace cute_transpose
