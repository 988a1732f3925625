// What the vectorized kernels share (the `transpose` op's kernel and the TMA variant): W-byte
// vectors of V = W / sizeof(T) elements, the tile geometry, the register transpose of V x V
// blocks, and the two phases of a tile:
//   1. threads along rows load the (BM,BN) input tile as (BM, BN/V) vectors into shared memory;
//   2. each thread takes a V x V block of elements -- V vectors from V consecutive rows --,
//      transposes it in registers (byte permutes for 1- and 2-byte elements), and hands over V
//      vectors of V consecutive output rows. Consecutive threads take consecutive blocks down
//      the tile's columns, so each output row is written in long contiguous runs.
// Shared memory is addressed in vectors and swizzled at vector granularity: Swizzle<B,0,log2 BN>
// XORs the block-row index (m / V) into the vector column, so the 128/W threads that share a
// shared-memory wavefront hit distinct banks in both phases (B = log2(128 / W), or fewer bits
// when a tile row has fewer vectors). V = 1 (one element per access, for rows that no wider
// vector fits) is the same kernel with trivial 1 x 1 blocks.
#pragma once

#include "tiling.cuh"

namespace cute_transpose {

// A W-byte vector as 32-bit words; its alignment lets the compiler emit one W-byte access.
// Vectors of 1 or 2 bytes are plain integers.
template <int W>
struct alignas(W) Words {
  uint32_t word[W / 4];
};
// One 16-byte global store, as one instruction. Assigning a Words<16> (or a uint4) after a
// shuffle that gathers its words from four different vectors compiled to four 4-byte stores
// (st.global.u32 in the PTX), each warp instruction then touching every 32-byte sector of its
// 512 bytes: the interleave kernel unpacked float32 pixels of 4 channels at 0.75 of clone.
CUTE_DEVICE void store_vector(void* to, Words<16> const& v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(to), "r"(v.word[0]), "r"(v.word[1]), "r"(v.word[2]),
               "r"(v.word[3])
               : "memory");
}

// Bytes [s, s + 16) of the 32 bytes a then b, for s in 0..15 (s = 0: a): a vector of a run that
// starts s bytes into an aligned vector, from the two aligned vectors it straddles.
CUTE_DEVICE Words<16> shift_bytes(Words<16> const& a, Words<16> const& b, int s) {
  uint32_t const w[8] = {a.word[0], a.word[1], a.word[2], a.word[3], b.word[0], b.word[1], b.word[2], b.word[3]};
  int const bits = 8 * (s % 4);
  Words<16> out;
  auto take = [&](auto first) {  // first word: s / 4, a constant in each case below
    CUTE_UNROLL
    for (int k = 0; k < 4; ++k) out.word[k] = __funnelshift_r(w[k + first], w[k + first + 1], bits);
  };
  switch (s / 4) {
    case 0: take(cute::Int<0>{}); break;
    case 1: take(cute::Int<1>{}); break;
    case 2: take(cute::Int<2>{}); break;
    default: take(cute::Int<3>{}); break;
  }
  return out;
}

// The vector of the lane `delta` above, within groups of `width` lanes (all 32 lanes call it).
CUTE_DEVICE Words<16> shuffle_down(Words<16> v, int delta, int width = 32) {
  CUTE_UNROLL
  for (int k = 0; k < 4; ++k) v.word[k] = __shfl_down_sync(0xffffffffu, v.word[k], delta, width);
  return v;
}

template <int W>
using VecOf = cute::conditional_t<(W >= 4), Words<W>, cute::conditional_t<W == 2, uint16_t, uint8_t>>;

constexpr int log2i(int x) { return x <= 1 ? 0 : 1 + log2i(x / 2); }

template <class T_, int W, int BM_, int BN_, int Threads>
struct VecTile {
  using T = T_;
  using Vec = VecOf<W>;
  static constexpr int kThreads = Threads;
  static constexpr int V = W / int(sizeof(T));  // elements per vector
  static constexpr int BM = BM_, BN = BN_;      // tile, in elements
  static constexpr int CN = BN / V;             // vectors in a tile row (input side)
  static constexpr int CM = BM / V;             // vectors in a tile column (output side)
  // A shared-memory wavefront serves 128 / W threads; with fewer vector columns than that, as
  // many bits as there are columns.
  static constexpr int kSwizzleBits = log2i(128 / W) < log2i(CN) ? log2i(128 / W) : log2i(CN);
  static constexpr bool kKeep = false;  // loads through load_evict_last (KeepInputs)
  static_assert(V >= 1 && W % int(sizeof(T)) == 0 && BM % V == 0 && BN % V == 0);
  static_assert(Threads % CN == 0 && BM % (Threads / CN) == 0, "load threads must tile (BM, CN)");
  static_assert(Threads % CM == 0 && CN % (Threads / CM) == 0, "store threads must tile (CM, CN)");

  // Phase 1: threads along tile rows, one vector each per step: (Threads/CN, CN).
  using LoadThreads = cute::Layout<cute::Shape<cute::Int<Threads / CN>, cute::Int<CN>>,
                                   cute::Stride<cute::Int<CN>, cute::_1>>;
  // Phase 2: threads over the (CM, CN) grid of V x V blocks, block rows fastest.
  using StoreThreads = cute::Layout<cute::Shape<cute::Int<CM>, cute::Int<Threads / CM>>,
                                    cute::Stride<cute::_1, cute::Int<CM>>>;
  using Smem = decltype(cute::composition(
      cute::Swizzle<kSwizzleBits, 0, log2i(BN)>{},
      cute::Layout<cute::Shape<cute::Int<BM>, cute::Int<CN>>, cute::Stride<cute::Int<CN>, cute::_1>>{}));  // (BM,CN)
};

// A tile configuration (VecTile: the tile, split and tma kernels'; or the lean kernel's LeanTile)
// whose loads keep their lines in the caches (load_input, load_evict_last).
template <class Cfg>
struct KeepInputs : Cfg {
  static constexpr bool kKeep = true;
};

// launch(KeepInputs<Cfg>{}) where the chooser kept the input lines (Problem::keep_inputs), which
// it does for 16-byte loads only (choose.cpp, keeps_inputs; LoadBytes: this configuration's load
// width, so that no other width builds the kept kernel), else launch(Cfg{}).
template <class Cfg, int LoadBytes, class Launch>
cudaError_t launch_keeping_inputs(bool keep, Launch&& launch) {
  if constexpr (LoadBytes == 16)
    if (keep) return launch(KeepInputs<Cfg>{});
  return launch(Cfg{});
}

// Column j of the V x V block whose rows are in[0..V): element k of the result is element j of
// in[k]. Elements of 4 bytes or more are whole words: only registers move. (One column at a
// time, so that a caller can store each column before the next is built.)
template <class T, int V, class Vec>
CUTE_DEVICE Vec transposed_column(Vec const (&in)[V], int j) {
  constexpr int kWords = sizeof(Vec) / 4;
  Vec out;
  if constexpr (V == 1) {
    out = in[0];
  } else if constexpr (sizeof(T) >= 4) {
    constexpr int kWordsPerElem = sizeof(T) / 4;
    CUTE_UNROLL
    for (int k = 0; k < V; ++k)
      CUTE_UNROLL
      for (int q = 0; q < kWordsPerElem; ++q) out.word[k * kWordsPerElem + q] = in[k].word[j * kWordsPerElem + q];
  } else if constexpr (sizeof(T) == 2) {
    // Output word w: the halves j of rows 2w and 2w+1.
    CUTE_UNROLL
    for (int w = 0; w < kWords; ++w)
      out.word[w] = __byte_perm(in[2 * w].word[j / 2], in[2 * w + 1].word[j / 2], (j & 1) ? 0x7632 : 0x5410);
  } else {
    // Output word w: the bytes j of rows 4w .. 4w+3, paired up, then joined.
    uint32_t const pick = (j & 3) | ((4 + (j & 3)) << 4);  // byte j%4 of each operand
    CUTE_UNROLL
    for (int w = 0; w < kWords; ++w) {
      uint32_t const lo = __byte_perm(in[4 * w].word[j / 4], in[4 * w + 1].word[j / 4], pick);
      uint32_t const hi = __byte_perm(in[4 * w + 2].word[j / 4], in[4 * w + 3].word[j / 4], pick);
      out.word[w] = __byte_perm(lo, hi, 0x5410);
    }
  }
  return out;
}

// out[j] = column j of the V x V block whose rows are in[0..V).
template <class T, int V, class Vec>
CUTE_DEVICE void transpose_block(Vec const (&in)[V], Vec (&out)[V]) {
  CUTE_UNROLL
  for (int j = 0; j < V; ++j) out[j] = transposed_column<T, V>(in, j);
}

//
// Global views in vectors of one matrix of the batch, and the two phases of a tile.
//

template <class Cfg>
CUTE_HOST_DEVICE auto input_vectors(Problem const& p, Offsets at) {  // (M,N/V)
  using namespace cute;
  using Vec = typename Cfg::Vec;
  return make_tensor(make_gmem_ptr(reinterpret_cast<Vec const*>(static_cast<typename Cfg::T const*>(p.src) + at.in)),
                     make_layout(make_shape(p.rows, p.cols / Cfg::V), make_stride(p.row_stride / Cfg::V, _1{})));
}

template <class Cfg>
CUTE_HOST_DEVICE auto output_vectors(Problem const& p, Offsets at) {  // (N,M/V)
  using namespace cute;
  using Vec = typename Cfg::Vec;
  return make_tensor(make_gmem_ptr(reinterpret_cast<Vec*>(static_cast<typename Cfg::T*>(p.dst) + at.out)),
                     make_layout(make_shape(p.cols, p.rows / Cfg::V), make_stride(p.out_col_stride / Cfg::V, _1{})));
}

// Phase 1: this thread's vectors of the tile, from the input into dst, a LoadThreads partition
// of the shared tile or a register copy of one.
template <class Cfg, class Dst>
CUTE_DEVICE void load_tile(Problem const& p, TileCoord const& tile, Dst&& dst) {
  using namespace cute;
  using InTile = Shape<Int<Cfg::BM>, Int<Cfg::CN>>;
  using LoadThreads = typename Cfg::LoadThreads;
  Tensor mIn = input_vectors<Cfg>(p, tile.at);                                     // (M,N/V)
  Tensor cIn = make_identity_tensor(shape(mIn));                                   // (M,N/V)
  Tensor gIn = local_tile(mIn, InTile{}, make_coord(tile.m, tile.n));              // (BM,CN)
  Tensor cTile = local_tile(cIn, InTile{}, make_coord(tile.m, tile.n));            // (BM,CN)
  copy_tile_part<Cfg::kKeep>(local_partition(gIn, LoadThreads{}, threadIdx.x), dst,
                 local_partition(cTile, LoadThreads{}, threadIdx.x), shape(cIn), tile.interior);
}

// This thread's V x V blocks of the tile, as (block_m, block_n) coordinates: one block row,
// every (Threads/CM)-th block column.
template <class Cfg>
CUTE_DEVICE auto thread_blocks() {  // (1,CN/(T/CM))
  using namespace cute;
  return local_partition(make_identity_tensor(Shape<Int<Cfg::CM>, Int<Cfg::CN>>{}), typename Cfg::StoreThreads{},
                         threadIdx.x);
}

// Phase 2: for each of this thread's V x V blocks of the shared tile sTile (BM,CN), transpose
// it in registers and call store(n, mv, vector) for its V output vectors, where n is the output
// row within the tile and mv the vector column (m / V) within the tile. The calls
// come in order: the blocks of thread_blocks in turn, and a block's V output rows (n) in turn.
template <class Cfg, class STile, class Store>
CUTE_DEVICE void transpose_blocks(STile const& sTile, Store&& store) {
  using namespace cute;
  constexpr int V = Cfg::V;
  using Vec = typename Cfg::Vec;
  Tensor tBlocks = thread_blocks<Cfg>();  // (1,CN/(T/CM))
  CUTE_UNROLL
  for (int i = 0; i < size(tBlocks); ++i) {
    int const block_m = get<0>(tBlocks(i)), block_n = get<1>(tBlocks(i));
    Vec rows[V], cols[V];
    CUTE_UNROLL
    for (int k = 0; k < V; ++k) rows[k] = sTile(block_m * V + k, block_n);
    transpose_block<typename Cfg::T, V>(rows, cols);
    CUTE_UNROLL
    for (int j = 0; j < V; ++j) store(block_n * V + j, block_m, cols[j]);
  }
}

}  // namespace cute_transpose
