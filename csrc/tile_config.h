// The Tile kernel's configurations, shared by the chooser (host) and the kernels (device):
// the tile (BM, BN) in elements and the threads per block, by element size, vector width and
// tile shape. About 32 KiB of shared memory per block (16 KiB for 1-byte elements with 16-byte
// vectors, which run 64 threads; 64 KiB for their large tiles) and 64-256 bytes in flight per
// thread.
#pragma once

namespace cute_transpose {

// Square, or twice as tall and half as wide (for matrices with few columns), or the reverse
// (few rows); or half a square tile: half as wide (Narrow) or half as tall (Short), for sides
// just over half a tile; or, for large full matrices, the Large configuration (large_tile); or,
// for one element per access, Column (column_tile); or Small (small_tile), by name only. The
// chooser takes the shape (choose.cpp, tile_shape): it scores the first five (kTileShapes), and
// takes Large and Column by their own rules.
enum class TileShape { Square, Tall, Wide, Narrow, Short, Large, Column, Small };
constexpr TileShape kTileShapes[] = {TileShape::Square, TileShape::Tall, TileShape::Wide, TileShape::Narrow,
                                     TileShape::Short};

// With fewer tiles than this many waves of resident blocks, the Tile kernel runs a persistent
// grid that prefetches its next tile (which also evens out the last wave); with more, one tile
// per block (a grid-stride loop cost 10-48% in PR #194310, and prefetching costs occupancy).
constexpr int kPersistentBelowWaves = 8;

struct TileDims {
  int bm, bn, threads;
};

constexpr TileDims square_tile(int element_size, int width) {
  switch (element_size) {
    case 1: return {128, 128, width == 16 ? 64 : 256};
    case 2: return {128, 128, 256};
    case 4: return {64, 128, 256};
    case 8: return {64, 64, 256};
    default: return {32, 32, 256};
  }
}

// Large: what runs large full matrices faster than the square tile, where something does (16-byte
// vectors). 1-byte elements: 256 x 256 tiles (64 KiB), whose 256-byte runs on both sides replace
// the square tile's 128; 32768^2 uint8 ran at 0.971 of clone, square tiles at 0.911. 4-byte
// elements: the square tile with 512 threads (four vectors each instead of eight, four blocks
// per SM instead of seven); 32768^2 and 8192^2 float32 ran at 0.969, square tiles at 0.960. On
// 2- and 8-byte elements neither larger tiles nor other thread counts gained more than 0.003
// (16-byte ones were not tried), so Large is the square tile there. (The H100,
// docs/PERFORMANCE.md.)
constexpr TileDims large_tile(int element_size, int width) {
  if (width == 16 && element_size == 1) return {256, 256, 256};
  if (width == 16 && element_size == 4) return {64, 128, 512};
  return square_tile(element_size, width);
}

// Column: one element per access (W = E, the only width whose output rows may start anywhere
// in a 32-byte sector), 256 output elements per tile row -- one per thread -- and 32 KiB of
// tile: (256, 128) for 1-byte elements ... (256, 8) for 16-byte ones.
constexpr TileDims column_tile(int element_size) { return {256, 32768 / (256 * element_size), 256}; }

// Small: a quarter of the square tile (half as tall, half as wide), 4-8 KiB, so that small work
// (a few MiB or less) makes two to four times as many blocks. 1-byte elements in 16-byte vectors
// have no such tile: its 64 x 64 elements are 16 blocks of 16 x 16, fewer than a warp; they run
// it in 4-byte vectors (small_tile_width). It runs by name (`tile/small`): small work that it
// ran faster than ATen's copy runs the lean kernel now, faster still (choose.cpp,
// small_transpose).
constexpr TileDims small_tile(int element_size, int width) {
  TileDims const s = square_tile(element_size, width);
  return {s.bm / 2, s.bn / 2, s.threads};
}
constexpr int small_tile_width(int element_size, int width) { return element_size == 1 && width == 16 ? 4 : width; }

// Whether `threads` can load a (bm, bn) tile in rows of W-byte vectors and store it in V x V
// blocks (vector_tile.cuh, VecTile's static_asserts).
constexpr bool tile_threads_fit(int element_size, int width, int bm, int bn, int threads) {
  int const v = width / element_size, cn = bn / v, cm = bm / v;
  return threads % cn == 0 && bm % (threads / cn) == 0 && threads % cm == 0 && cn % (threads / cm) == 0;
}

constexpr TileDims tile_dims(int element_size, int width, TileShape shape) {
  TileDims const s = square_tile(element_size, width);
  TileDims t = s;
  switch (shape) {
    case TileShape::Tall: t = {2 * s.bm, s.bn / 2, s.threads}; break;
    case TileShape::Wide: t = {s.bm / 2, 2 * s.bn, s.threads}; break;
    case TileShape::Narrow: t = {s.bm, s.bn / 2, s.threads}; break;
    case TileShape::Short: t = {s.bm / 2, s.bn, s.threads}; break;
    case TileShape::Large: t = large_tile(element_size, width); break;
    case TileShape::Column: t = column_tile(element_size); break;
    case TileShape::Small: t = small_tile(element_size, width); break;
    default: break;
  }
  // Half tiles of 1-byte elements in 16-byte vectors have too few vectors for 64 threads (and
  // quarter tiles too few for 32: no thread count fits them).
  while (t.threads > 32 && !tile_threads_fit(element_size, width, t.bm, t.bn, t.threads)) t.threads /= 2;
  return t;
}

// CUDA's limit on a grid's y and z dims, which the Lean kernel's m-tiles and batch take.
constexpr long long kMaxGridYZ = 65535;

// The Lean kernel's tile (cuda/lean_transpose.cu): 1-8 KiB, one 16-byte vector a thread on each
// side where the rows allow it (two for 8-byte elements), 128-256 threads. Its other shapes keep
// the threads and give each four times the vectors: four times as tall (Tall: m) or as wide
// (Wide: n), or twice both (Large).
constexpr TileDims lean_tile(int element_size, TileShape shape = TileShape::Square) {
  TileDims t{};
  switch (element_size) {
    case 1: t = {64, 64, 256}; break;
    case 2: t = {32, 32, 128}; break;
    case 4: t = {32, 32, 256}; break;
    case 8: t = {32, 32, 256}; break;
    default: t = {16, 16, 256}; break;
  }
  switch (shape) {
    case TileShape::Tall: return {4 * t.bm, t.bn, t.threads};
    case TileShape::Wide: return {t.bm, 4 * t.bn, t.threads};
    case TileShape::Large: return {2 * t.bm, 2 * t.bn, t.threads};
    default: return t;
  }
}
constexpr TileShape kLeanShapes[] = {TileShape::Square, TileShape::Tall, TileShape::Wide, TileShape::Large};

// The Words kernel's tile (cuda/words.cu), for 1- and 2-byte elements: 128 bytes of each output
// row (BM = 128 / E elements, 32 four-byte words) by BN input columns, 256 threads; BN = 64
// (Square) or 32 (Narrow).
constexpr TileDims words_tile(int element_size, TileShape shape) {
  return {128 / element_size, shape == TileShape::Narrow ? 32 : 64, 256};
}
constexpr TileShape kWordsShapes[] = {TileShape::Square, TileShape::Narrow};

// The Realign kernel's tile (cuda/realign.cu): 128 elements of each output row by 256 bytes of
// each input row, 256 threads, for elements of 1-8 bytes.
constexpr TileDims realign_tile(int element_size) { return {128, 256 / element_size, 256}; }

// The Fill kernel's span (cuda/fill.cu): a warp stores 32 x U consecutive 16-byte vectors of
// the output, whose rows (of `row` elements of `element_size` bytes) its 32 lanes load one each,
// so a span may touch at most 32 rows: the largest U of 4, 2, 1 whose span covers no more
// (32 U V <= 31 row, V = 16 / element_size), or 0 where rows are too short for any.
constexpr int fill_vectors_per_lane(int64_t row, int element_size) {
  int64_t const V = 16 / element_size;
  for (int u = 4; u >= 1; u /= 2)
    if (32 * u * V <= 31 * row) return u;
  return 0;
}

// The Fill kernel's lanes form (cuda/fill.cu): a lane's 16-byte vector of V = 16 / element_size
// elements, starting anywhere in a row of `row` >= 2 elements, touches at most this many rows.
constexpr int fill_rows_per_vector(int64_t row, int element_size) {
  int64_t const V = 16 / element_size;
  return 1 + int((row + V - 2) / row);
}

}  // namespace cute_transpose
