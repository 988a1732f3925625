// The chooser (choose.h): what each kernel can run, the shape classes, the tuning tables, and
// the rule for classes no table covers.
#include "choose.h"

#include "box_plan.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

namespace cute_transpose {
namespace {

//
// What each kernel can run.
//

// One side of the problem moves in W-byte vectors of V = W / E elements: that side's innermost
// length, its rows' stride, every batch stride on that side and its start are whole vectors
// (the input side: n's length and the input rows' stride; the output side: m's and the output's).
bool side_fits(Problem const& p, int W, bool input) {
  int64_t const V = W / p.element_size;
  bool ok = input ? divisible(p.cols, V) && (divisible(p.row_stride, V) || p.rows == 1) && aligned(p.src, W)
                  : divisible(p.rows, V) && (divisible(p.out_col_stride, V) || p.cols == 1) && aligned(p.dst, W);
  for (int d = 0; d < p.batch.rank; ++d) ok = ok && divisible(input ? p.batch.in_stride[d] : p.batch.out_stride[d], V);
  return ok;
}

// Tile: the problem moves in W-byte vectors of V = W / E elements on both sides: n (input) and
// m (output) are unit-stride, and every other stride, every offset and both sizes are whole
// vectors.
bool tile_fits(Problem const& p, int W) {
  int64_t const V = W / p.element_size;
  if (V < 1 || W % p.element_size != 0) return false;
  if (!(p.col_stride == 1 || p.cols == 1) || !(p.out_row_stride == 1 || p.rows == 1)) return false;
  return V == 1 || (side_fits(p, W, true) && side_fits(p, W, false));
}

// The tiles of shape t along a matrix's m and n sides.
int64_t tiles_m(Problem const& p, TileDims t) { return (p.rows + t.bm - 1) / t.bm; }
int64_t tiles_n(Problem const& p, TileDims t) { return (p.cols + t.bn - 1) / t.bn; }

// Lean (cuda/lean_transpose.cu) and Words (cuda/words.cu), one tile per block
// (cuda/small_grid.cuh): a transpose (m unit-stride in the output) of up to three batch dims
// (of any number of matrices: beyond blockIdx.z's 65535 they launch in slabs), its m-tiles
// within blockIdx.y's limit walked n-tiles first (a kernel that walks m-tiles first checks that
// its n-tiles fit there) and every offset in 32 bits.
bool small_grid_fits(Problem const& p, TileDims t, std::string* why) {
  if (p.out_row_stride != 1 && p.rows > 1) return *why = "m is not unit-stride in the output", false;
  if (p.batch.rank > 3) return *why = "more than 3 batch dims", false;
  if (tiles_m(p, t) > kMaxGridYZ) return *why = "more than 65535 m-tiles", false;
  int64_t in = (p.rows - 1 + t.bm) * p.row_stride + (p.cols - 1 + t.bn) * p.col_stride;
  int64_t out = (p.cols + t.bn) * p.out_col_stride + p.rows + t.bm;
  bool negative = p.row_stride < 0 || p.col_stride < 0;
  for (int d = 0; d < p.batch.rank; ++d) {
    in += (p.batch.size[d] - 1) * p.batch.in_stride[d];
    out += (p.batch.size[d] - 1) * p.batch.out_stride[d];
    negative = negative || p.batch.in_stride[d] < 0;
  }
  if (negative || in > INT_MAX || out > INT_MAX) return *why = "offsets beyond 32 bits", false;
  return true;
}

// Lean's vector on one side: 16 bytes where that side's rows, strides and start are whole
// 16-byte vectors (and n unit-stride, on the input side), else one element.
int lean_width(Problem const& p, bool input) {
  bool const unit_n = p.col_stride == 1 || p.cols == 1;
  return (!input || unit_n) && side_fits(p, 16, input) ? 16 : p.element_size;
}

// The widest vector the Tile kernel can use, of those it is compiled for: 16 bytes, 4 bytes
// (elements up to 4 bytes), one element; 0 when n or m is not unit-stride.
int tile_width(Problem const& p) {
  int const E = p.element_size;
  for (int W : {16, 4, E})
    if (W >= E && tile_fits(p, W)) return W;
  return 0;
}

// The tiles of shape t that cover the batch of matrices.
int64_t tile_count(Problem const& p, TileDims t) {
  return tiles_m(p, t) * tiles_n(p, t) * p.batch.count;
}

// The share of its tiles' area a (rows, cols) matrix fills.
double tile_fill(int64_t rows, int64_t cols, TileDims t) {
  auto cover = [](int64_t n, int64_t b) { return double((n + b - 1) / b * b); };
  return double(rows) * double(cols) / (cover(rows, t.bm) * cover(cols, t.bn));
}

// A tile kernel runs only where its tiles are at least a quarter full: on emptier ones it moves
// mostly nothing (the sweep's (2, 2234417, 4) bfloat16 permute filled 1.5% of its split tiles
// and ran at 0.02 of clone, eager at 0.71) and another kernel does better.
constexpr double kMinTileFill = 0.25;

// The Tile kernel's tiles must be more than a quarter full: the TTC suite's float32
// (15, 15, 15, 32, 15, 32) permuted (2, 0, 4, 1, 5, 3), 32 x 32 planes in short tiles of 32 x 128
// (exactly a quarter), ran at 0.48 of clone, the split kernel at 0.84.
bool tile_too_empty(Problem const& p, int W, TileShape s) {
  return tile_fill(p.rows, p.cols, tile_dims(p.element_size, W, s)) <= kMinTileFill;
}

// The tile shape: the one with the best score, fill x sqrt(min(1, output run / 1 KiB)), where
// the output run is the bytes of an output row one tile writes (bm elements, or all m when m is
// shorter). How full the tiles are is not enough: for the TTC suite's float32 (75, 608, 12, 96)
// permuted (2, 0, 3, 1), square and tall tiles are both 71% full, but the square tile's 256-byte
// output runs ran at 0.85 of clone and the tall tile's 512-byte ones at 0.93; a short tile 95%
// full (128-byte runs) of (75, 96, 12, 608) ran at 0.84, the tall one 71% full at 0.95. Over 362
// random batched transposes of 64-256 MiB (every element size, m and n of 8-4096 elements; the
// H100, `bench/tile_shapes.py`), this pick ran at 0.980 of the best of the five shapes (geomean;
// 41 shapes under 0.95 of it), the least waste among square, tall and wide tiles at 0.957 (94),
// and on the 11 TTC cells of m and n <= 608 at 0.9996 (0.863).
// (`run`: the output's contiguous run along m, in elements, where it is shorter than m.)
constexpr double kTileRunBytes = 1024;
double shape_score(Problem const& p, TileDims t, int64_t run = INT64_MAX) {
  double const bytes = double(std::min({int64_t(t.bm), p.rows, run}) * p.element_size);
  return tile_fill(p.rows, p.cols, t) * std::sqrt(std::min(1.0, bytes / kTileRunBytes));
}
double tile_shape_score(Problem const& p, int W, TileShape s, int64_t run = INT64_MAX) {
  return shape_score(p, tile_dims(p.element_size, W, s), run);
}
template <class Shapes = decltype(kTileShapes)>
TileShape best_scored_shape(Problem const& p, int W, int64_t run = INT64_MAX, Shapes const& shapes = kTileShapes) {
  TileShape best = TileShape::Square;
  double best_score = tile_shape_score(p, W, best, run);
  for (TileShape s : shapes)
    if (double const score = tile_shape_score(p, W, s, run); score > best_score) best = s, best_score = score;
  return best;
}
// Square tiles at least 99% full stay square: on the benchmark's large matrices (4096^2 to
// 32768^2), tall tiles ran 1- and 2-byte elements at 0.87-0.94 of clone, square ones 0.92-0.97;
// on the random grids above, this exception changes the pick's share of the best by < 0.001.
constexpr double kSquareFullFill = 0.99;
// ... and become Large (tile_config.h, large_tile) where that differs from square, is as full,
// and makes at least kLargeTiles tiles (256 MiB of 1-byte elements, 128 MiB of 4-byte ones).
// On the H100 (do_bench beside clone, large / square): uint8 32768^2 0.970 / 0.911, 16384^2
// 0.955 / 0.921, 4 x 8192^2 0.966 / 0.940, but 8192^2 (1024 tiles) 0.931 / 0.941 and 16384 x
// 4096 0.918 / 0.934; float32 on 16 shapes of 128 MiB to 4 GiB (the TTC suite's 200 MiB
// transposes among them), large ahead on 15 by 0.003-0.022 (6144^2: 0.964 / 0.967), but 4096^2
// (2048 tiles) 0.938 / 0.949.
constexpr int64_t kLargeTiles = 4096;
bool large_tile_pays(Problem const& p, int W) {
  TileDims const large = tile_dims(p.element_size, W, TileShape::Large),
                 square = tile_dims(p.element_size, W, TileShape::Square);
  if (large.bm == square.bm && large.bn == square.bn && large.threads == square.threads) return false;
  return tile_fill(p.rows, p.cols, large) >= kSquareFullFill && tile_count(p, large) >= kLargeTiles;
}

// Whether the runs a tile moves along one side's rows start and end inside 32-byte sectors: the
// row pitch (or the base) is not a whole number of sectors. A sector that two tiles share is
// finished by the second; until then it sits half written in L2.
constexpr int64_t kSectorBytes = 32;
bool output_splits_sectors(Problem const& p) {
  return (p.cols > 1 && !divisible(p.out_col_stride * p.element_size, kSectorBytes)) || !aligned(p.dst, kSectorBytes);
}
bool input_splits_sectors(Problem const& p) {
  return (p.rows > 1 && !divisible(p.row_stride * p.element_size, kSectorBytes)) || !aligned(p.src, kSectorBytes);
}

// Column tiles (256 elements down m, one element per access, tile_config.h) for 4-byte elements
// whose output rows split sectors: each tile writes 1 KiB runs, four times the square tile's.
// On the H100 (ratio to clone, column vs the best other shape, both walks as below): float32
// 9973 x 10007 0.860 vs 0.834, 8193 x 8192 0.910 vs 0.902, 1000003 x 61 0.815 vs 0.629, a rank-5
// slice (13, 21, 37, 31, 365) permuted (0, 1, 4, 2, 3) 0.923 vs 0.834, 64 x 1021 x 1019 0.823 vs
// 0.805. Not where only the input splits sectors (8192 x 8193: 0.911 vs 0.934), nor for other
// element sizes (uint8 16381 x 16411 0.43 vs 0.57, float64 8191^2 0.90 vs 0.92, complex128
// 3001 x 2999 0.92 vs 0.96; for bfloat16 it is the tall tile).
bool column_tile_fits(Problem const& p, int W) {
  return W == 4 && p.element_size == 4 && output_splits_sectors(p);
}

// Where Large is the square tile with more threads (4-byte elements), it also takes matrices
// whose square tiles are mostly full, at least kMostlyFullFill, with at least kLargeThreadsSide
// rows and columns and kLargeTiles tiles, over the shape the score picks (the tall tile, mostly).
// On the H100, 66 float32 batched transposes of 128-256 MiB whose square tiles are 85-99% full
// (`bench/tile_shapes.py`'s grid, seeds 11-16), large / the pick: on the 62 with both sides of
// 128 or more, geomean 1.013, 0.976-1.029, under 1 on 4; on the 4 with a side under 128 (120 x
// 124, 60 x 1740, ...), 0.948-0.982: fewer tiles in flight per SM cost more there than the
// threads gain. The TTC suite's (59, 384, 2320) permuted (0, 2, 1), 98% full: tall 0.969, large
// 0.991. For 1-byte elements (Large: 256 x 256 tiles) the same test lost: 0.37-1.04 of the pick.
constexpr double kMostlyFullFill = 0.85;
constexpr int64_t kLargeThreadsSide = 128;
bool large_threads_pay(Problem const& p, int W) {
  TileDims const large = tile_dims(p.element_size, W, TileShape::Large),
                 square = tile_dims(p.element_size, W, TileShape::Square);
  if (large.bm != square.bm || large.bn != square.bn || large.threads == square.threads) return false;
  return std::min(p.rows, p.cols) >= kLargeThreadsSide && tile_count(p, large) >= kLargeTiles &&
         tile_fill(p.rows, p.cols, large) >= kMostlyFullFill;
}

// (`large`: false leaves the Large configuration out.)
TileShape tile_shape(Problem const& p, int W, bool large = true) {
  bool const column = column_tile_fits(p, W);
  if (!column && tile_fill(p.rows, p.cols, tile_dims(p.element_size, W, TileShape::Square)) >= kSquareFullFill)
    return large && large_tile_pays(p, W) ? TileShape::Large : TileShape::Square;
  if (!column && large && large_threads_pay(p, W)) return TileShape::Large;
  TileShape best = best_scored_shape(p, W);
  if (column && tile_shape_score(p, W, TileShape::Column) > tile_shape_score(p, W, best)) best = TileShape::Column;
  return best;
}

// Where the tile kernel takes its large tiles, larger than square ones (1-byte elements: 256 x
// 256, from kLargeTiles of them, 2^28 elements), the lean kernel is not offered: the tuning grids
// (up to 2^27 elements) never reached such work, and their ranking of the lean kernel first in
// classes of full uint8 matrices does not carry over. On the H100, 16384^2 uint8 ran the tile
// kernel's large tiles at 0.955 of clone, large lean tiles at 0.913 (one probe); in the benchmark
// 32768^2, 8192 x 32768 and 32768 x 8192 uint8 ran large lean tiles at 0.910-0.915, the tile
// kernel's large tiles 0.954-0.973 in the run before.
bool tile_takes_larger_tiles(Problem const& p) {
  if (tile_width(p) != 16) return false;
  TileDims const large = tile_dims(p.element_size, 16, TileShape::Large),
                 square = tile_dims(p.element_size, 16, TileShape::Square);
  return (large.bm != square.bm || large.bn != square.bn) && tile_shape(p, 16) == TileShape::Large;
}

// The walk over a tile kernel's tiles (Problem::m_first): m-tiles fastest where the output's
// runs split sectors, so that the tile that finishes a shared sector runs next to the one that
// began it, unless the input's runs split sectors too and its neighbouring tiles would then lie
// further apart (tiles_m > tiles_n). On the H100 (ratio to clone, n-first -> m-first, the tile
// kernel): float32 8193 x 8192 0.816 -> 0.910 (column tiles), 9973 x 10007 0.758 -> 0.860,
// float64 8191^2 0.849 -> 0.923 (narrow), bfloat16 9973 x 10007 0.611 -> 0.730, uint8 16381 x
// 16411 0.477 -> 0.570 (tall), complex128 3001 x 2999 0.934 -> 0.951. Where the output's runs
// are whole sectors m-first gains nothing (float32 8192 x 8193 0.917 -> 0.909; aligned 8192^2:
// float32 0.961 -> 0.960, bfloat16 0.964 -> 0.957), and where the input's neighbours would lie
// far apart it loses (float32 1000003 x 61, two tiles across n: 0.815 -> 0.682).
bool walk_m_first(Problem const& p, TileDims t) {
  if (!output_splits_sectors(p)) return false;
  return !input_splits_sectors(p) || tiles_n(p, t) >= tiles_m(p, t);
}

// The tile, lean, split and interleave (aligned vector mode) kernels' loads, and those of the
// ladder's tma and pipelined, keep the input's lines in the caches (Problem::keep_inputs) where
// they load 16-byte vectors (`load_width`) into an output of Device::keep_inputs_from bytes or
// more. On the H100 (docs/PERFORMANCE.md, "Input lines kept in L2"; the pick with and
// without, bit-checked, the better of three rounds): float32 squares of 16-80 MiB 0.92-0.96 x as
// fast, 96 MiB 0.99 x, 112 MiB 1.01 x, 128-256 MiB 1.015-1.020 x (8192^2 0.964 -> 0.978 of
// clone); bfloat16 32-64 MiB 0.92-0.96 x, 96-128 MiB 1.02 x; the sweeps' tile and lean cells of
// 128 MiB or more in 16-byte loads 1.018 x over 42 (0.997-1.041 x), the one in 4-byte vectors
// ((120, 7271, 204) uint8 permuted (2, 1, 0)) 0.81 x. The same hint in the split kernel and the
// interleave kernel's vector mode, on the sweeps' cells of those kernels (each with and without,
// the better of three rounds): 128 MiB or more, split 1.018 x over 44 (0.981-1.042 x), interleave
// 1.014 x over 15 (1.005-1.028 x); under 128 MiB 1.007 x over 5 and 0.981 x over 5 (0.96-0.97 x on
// three of 64-117 MiB). The row copies timed beside them as a control (no hint) moved 0.997-1.003 x.
// The ladder's tma and pipelined kernels, in one benchmark run against the run before, on the
// matrices of 128 MiB or more: tma +0.01-0.02 of clone, pipelined +0.02-0.03 (docs/PERFORMANCE.md).
bool keeps_inputs(Problem const& p, int load_width, Device const& device) {
  int64_t const bytes = p.rows * p.cols * p.batch.count * p.element_size;
  return load_width == 16 && device.keep_inputs_from > 0 && bytes >= device.keep_inputs_from;
}

// On a GPU whose rule it is (Device::long_side_first), the tile and lean kernels walk m-tiles
// first also where the output's runs are whole sectors, wherever there are at least as many
// m-tiles as n-tiles (device_rules, after this namespace, has the measurements).
bool long_side_first(Problem const& p, TileDims t, Device const& device) {
  return device.long_side_first && !output_splits_sectors(p) && tiles_m(p, t) >= tiles_n(p, t);
}

// On a GPU whose rule it is (Device::kept_m_first), the tile and lean kernels whose loads keep the
// input's lines (Problem::keep_inputs, set before this is asked) walk m-tiles first wherever the
// output's rows are no longer than the input's (rows <= cols) and the n-tiles fit in blockIdx.y
// (which the lean kernel's grid needs; the tile kernel's one-dimensional walk does not, but the
// rule was measured within that bound and is held to it there too). On the H100
// (docs/PERFORMANCE.md, "Kept transposes walked m-tiles first": a probe build that switched the
// walk, the pick otherwise as it is, bit-checked, the better of three rounds in alternating order),
// m-tiles first against n-tiles first on transposes that keep their input lines: on 93 held-out
// ones of 128 MiB-1 GiB (random 2-D and batched shapes, 1- to 8-byte elements) 1.034 x over the 35
// with rows <= cols (0.983-1.359 x; uint8 1040 x 576256 0.556 -> 0.756 of clone) and 0.972 x over
// the 58 others (0.688-1.084 x; tall ones lose most: uint8 531872 x 1360 0.913 -> 0.629); before
// them, on the benchmark's matrices, the sweep's cells and 40 other held-out shapes, 1.037 x over
// 56 (0.998-1.346 x) and 0.966 x over 31. Under 128 MiB, without kept lines, m-tiles first was no
// better where rows <= cols (1.008 x over 42, seven more than 1% slower, to 0.884 x): the rule asks
// for kept lines.
bool kept_m_first(Problem const& p, TileDims t, Device const& device) {
  return device.kept_m_first && p.keep_inputs && p.rows <= p.cols && tiles_n(p, t) <= kMaxGridYZ;
}

// The tile shape on `device`. Where its rule leaves out the Large configuration
// (Device::large_tiles; device_rules, after this namespace, has the measurements), the matrices
// that would take it take the shape the rest of the rule picks, or wide tiles for full matrices
// of 1-byte elements; and choose() gives the 4-byte ones to the lean kernel's large tiles first
// (lean_takes_large_tiles_work).
TileShape tile_shape(Problem const& p, int W, Device const& device) {
  if (device.large_tiles) return tile_shape(p, W);
  TileShape const s = tile_shape(p, W, false);
  return s == TileShape::Square && p.element_size == 1 && large_tile_pays(p, W) ? TileShape::Wide : s;
}
bool lean_takes_large_tiles_work(Choice const& c, Device const& device) {
  return c.kernel == Kernel::Tile && !device.large_tiles && c.problem->element_size == 4 && c.width == 16 &&
         tile_shape(*c.problem, c.width) == TileShape::Large;
}

// The rows kernel splits each vector's index into coordinates, one division per dim; gather
// (cuda/gather.cu) steps each thread along consecutive outputs with no division after the
// first, but loads every element on its own. On a GPU whose rule it is (Device::rows_gather),
// gather takes the row copies in vectors of one 4- or 8-byte element where the plan has at
// least one dim per two bytes of the element, beyond the first (float32 from 3 dims, float64
// from 5), and the row copies of 2-byte and wider elements in vectors under 16 bytes over 6
// dims or more; never 1-byte elements, which gather loads one byte at a time (device_rules has
// the measurements). On an H100, with this rule and gather_takes_aten_rows as the H200 set them
// (docs/PERFORMANCE.md, "Six more H200 rules on the H100"; 25 fresh row copies they move,
// 9-138 us): 1.46 x (0.97-2.54 x), 0.597 -> 0.870 of clone (eager 0.594), none slower.
bool gather_takes_rows(Plan const& plan, Choice const& c, Device const& device) {
  if (!device.rows_gather || c.kernel != Kernel::Rows || c.width >= 16) return false;
  int const E = c.problem->element_size;
  return (E >= 2 && plan.rank >= 6) || (c.width == E && E >= 4 && 2 * (plan.rank - 1) >= E);
}

// The seed ladder's tile (SeedTile, cuda/tiling.cuh): 64 rows of one 128-byte line.
TileDims seed_tile(int element_size) { return {64, std::max(1, 128 / element_size), 256}; }

// Rows: the copy route's rows move in W-byte vectors: contiguous rows of whole vectors, aligned.
// The output is the contiguous (batch..., M, N) tensor.
int rows_width(Problem const& p) {
  for (int W : {16, 8, 4}) {
    int64_t const V = W / p.element_size;
    if (V < 1 || W % p.element_size != 0 || !(p.col_stride == 1 || p.cols == 1)) continue;
    bool ok = divisible(p.cols, V) && (divisible(p.row_stride, V) || p.rows == 1) && aligned(p.src, W) &&
              aligned(p.dst, W);
    for (int d = 0; d < p.batch.rank; ++d) ok = ok && divisible(p.batch.in_stride[d], V);
    if (ok) return W;
  }
  return p.element_size;
}

bool contiguous_rows_output(Problem const& p) {
  int64_t expected = p.rows * p.cols;
  if (p.out_col_stride != 1 || (p.out_row_stride != p.cols && p.rows > 1)) return false;
  for (int d = p.batch.rank - 1; d >= 0; --d) {
    if (p.batch.out_stride[d] != expected) return false;
    expected *= p.batch.size[d];
  }
  return true;
}

// The (batch..., M, N) Problem of the kernels that walk the output in order where the output is
// contiguous rows (gather, lanes, stage, fill), else nullopt with *why saying which fails.
std::optional<Problem> output_walk_problem(Plan const& plan, std::string* why) {
  std::optional<Problem> p = output_rows_problem(plan);
  if (!p) return *why = "more than 8 dims", std::nullopt;
  if (!contiguous_rows_output(*p)) return *why = "the output is not contiguous rows", std::nullopt;
  return p;
}

// The two sides of p as the interleave kernel sees them: C, the channels' side, and the
// distance between pixels on the interleaved side (the input's when unpacking).
int64_t interleave_channels(Problem const& p, bool pack) { return pack ? p.rows : p.cols; }
int64_t pixel_stride_of(Problem const& p, bool pack) { return pack ? p.out_col_stride : p.row_stride; }

// Interleave: one side is C = 2..kMaxChannels unit-stride elements (the channels of an NHWC
// image, a pixel), the other side is C unit-stride planes (NCHW). `pack` goes planes ->
// pixels. The width: 16 when both sides move in 16-byte vectors of K = 16 / E elements along
// the planes (elements up to 8 bytes, C up to kMaxVectorChannels, pixels exactly C apart, and
// planes and batch offsets whole vectors, aligned -- or, for 1-byte elements, realigned), else
// the element size (one element per access, any alignment, pixels any distance apart); 0 when
// it cannot run.
//
// Realigned vectors (cuda/interleave_realigned.cuh) for 1-byte elements only. On the H100 (do_bench
// beside clone, the better of two rounds; image batches of 64 x 299^2 and 32 x 225^2 with 2-4
// channels, both ways, and 7840857 x 3 matrices), uint8 ran realigned at 0.82-0.99 of clone in its
// first form (0.89-1.28 with the owned vectors it has now: docs/PERFORMANCE.md), one element per
// access at 0.63-0.78, ATen's copy at 0.47-0.65. Two-byte elements ran at 0.83-0.85 realigned,
// 0.87-0.92 one element per access; four-byte ones 0.77-0.82 and 0.94-1.0: their single-element
// accesses already move 2-4 times the bytes of uint8's, and the realigned mode's shifts and edge
// stores cost more than they save (in its first form; the owned vectors are written for bytes and
// not measured on wider elements).
int interleave_width(Problem const& p, bool pack, std::string* why) {
  int64_t const E = p.element_size;
  int64_t const C = interleave_channels(p, pack);
  if (C < 2 || C > kMaxChannels || C * E > 128)
    return *why = "no side of 2.." + std::to_string(kMaxChannels) + " elements (and at most 128 bytes)", 0;
  if (p.col_stride != 1 || p.out_row_stride != 1) return *why = "the channels or the planes are not unit-stride", 0;
  int64_t const pixel_stride = pixel_stride_of(p, pack);
  bool const vectors = E <= 8 && C <= kMaxVectorChannels && pixel_stride == C &&
                       (E == 1 || interleave_vectors_aligned(p, pack));
  return vectors ? 16 : int(E);
}

// The interleave kernel on p: packing if it can, else unpacking; width 0 (and the packing
// side's reason in *why) when neither runs. `gaps`: pixels lie further apart than C and the
// kernel skips the gaps (element_skips_gaps, work.h: it reads short gaps with the pixels).
struct InterleaveFit {
  int width = 0;
  bool pack = false, gaps = false;
};
InterleaveFit interleave_fit(Problem const& p, std::string* why) {
  std::string why_unpack;
  for (bool pack : {true, false})
    if (int const width = interleave_width(p, pack, pack ? why : &why_unpack))
      return {width, pack,
              element_skips_gaps(interleave_channels(p, pack), pixel_stride_of(p, pack), p.element_size, pack)};
  return {};
}

// The TMA kernels' common ground: an sm_90 GPU and a build with sm_90 code; 32-bit coordinates.
bool has_tma(Device const& d, std::string* why) {
  return (d.arch >= 90 && d.tma) || (*why = "TMA needs sm_90 and a build with sm_90 code", false);
}
bool tma_coordinates_fit(Problem const& p, std::string* why) {
  int64_t const limit = int64_t(1) << 31;
  return (p.rows < limit && p.cols < limit && p.batch.count < limit) || (*why = "a dim of 2^31 or more", false);
}

// TMA: sm_90, a transpose whose output rows are whole 16-byte multiples, one batch dim, and
// coordinates below 2^31.
bool tma_fits(Problem const& p, Device const& d, std::string* why) {
  if (!has_tma(d, why)) return false;
  if (p.out_row_stride != 1 && p.rows > 1) return *why = "the output's innermost dim is not m", false;
  if (!divisible(p.out_col_stride * p.element_size, 16) || !aligned(p.dst, 16))
    return *why = "the output's row pitch is not a multiple of 16 bytes", false;
  if (p.batch.rank > 1) return *why = "more than one batch dim", false;
  if (p.batch.rank == 1 && !divisible(p.batch.out_stride[0] * p.element_size, 16))
    return *why = "the output's batch stride is not a multiple of 16 bytes", false;
  return tma_coordinates_fit(p, why);
}

// Pipelined: sm_90, both sides in 16-byte vectors (as the Tile kernel's), and a TMA load
// descriptor for the input: n unit-stride, a row pitch of whole 16-byte chunks even for one row,
// at most one batch dim, nothing broadcast (stride 0), coordinates below 2^31.
bool pipelined_fits(Problem const& p, Device const& d, std::string* why) {
  if (!has_tma(d, why)) return false;
  if (p.col_stride != 1 || !tile_fits(p, 16))
    return *why = "the rows, strides or offsets are not whole 16-byte vectors on both sides", false;
  if (!divisible(p.row_stride * p.element_size, 16) || p.row_stride == 0)
    return *why = "the input's row pitch is not a multiple of 16 bytes", false;
  if (p.batch.rank > 1) return *why = "more than one batch dim", false;
  if (p.batch.rank == 1 && p.batch.in_stride[0] == 0) return *why = "a broadcast batch dim", false;
  return tma_coordinates_fit(p, why);
}

//
// Split: a short side takes a second dim, so that tiles are full.
//

// Sides shorter than a tile take a second dim; below kSplitBelow elements a side is short.
constexpr int64_t kSplitBelow = 128;

// Each short side of p takes the remaining dim with the smallest stride on its own tensor (the
// output's for m, the input's for n); std::nullopt when no side is short or no dim is left.
std::optional<SplitProblem> split_short_sides(Problem const& p) {
  std::vector<Dim> rest;
  for (int d = 0; d < p.batch.rank; ++d) rest.push_back({p.batch.size[d], p.batch.in_stride[d], p.batch.out_stride[d]});
  auto take = [&](auto stride_of) {
    auto best = std::min_element(rest.begin(), rest.end(), [&](Dim const& a, Dim const& b) { return stride_of(a) < stride_of(b); });
    Outer const o{best->size, best->in, best->out};
    rest.erase(best);
    return o;
  };
  if ((p.rows >= kSplitBelow && p.cols >= kSplitBelow) || rest.empty()) return std::nullopt;
  SplitProblem s{p, {}, {}};
  if (p.rows < kSplitBelow) s.m = take([](Dim const& d) { return d.out; });
  if (p.cols < kSplitBelow && !rest.empty()) s.n = take([](Dim const& d) { return d.in == 0 ? INT64_MAX : d.in; });
  s.problem.batch = make_batch(rest);
  return s;
}

// Whether a split side's two dims chain where its vectors run: m's on the output, n's on the
// input, the outer stride being the inner dim's length.
bool m_side_chains(SplitProblem const& s) {
  return s.m.size > 1 && s.problem.out_row_stride == 1 && s.m.out_stride == s.problem.rows;
}
bool n_side_chains(SplitProblem const& s) {
  return s.n.size > 1 && s.problem.col_stride == 1 && s.n.in_stride == s.problem.cols;
}

// Both sides move in W-byte vectors: the inner dims as for the tile kernel, and every outer
// stride a whole number of vectors, so that no vector straddles two outer indices -- unless the
// side's two dims chain where its vectors run (m's on the output, n's on the input: the outer
// stride is the inner dim's length). Such a side is one run there, and only its whole length
// need be whole vectors: (6, 24) float32 output runs of 144 elements, read from input strides
// 2688 and 112, move in 16-byte vectors rather than one element at a time. `chain` = false
// gives the width without that (chained_split compares the two).
int split_width(SplitProblem const& s, bool chain = true) {
  Problem seen = s.problem;  // the problem as the vectors see it: a chained side is one dim
  bool const m_chains = chain && m_side_chains(s);
  bool const n_chains = chain && n_side_chains(s);
  if (m_chains) seen.rows *= s.m.size;
  if (n_chains) seen.cols *= s.n.size;
  int const E = s.problem.element_size;
  for (int W : {16, 4, E}) {
    int64_t const V = W / E;
    if (W < E || !tile_fits(seen, W)) continue;
    if (divisible(s.m.in_stride, V) && (m_chains || divisible(s.m.out_stride, V)) &&
        (n_chains || divisible(s.n.in_stride, V)) && divisible(s.n.out_stride, V))
      return W;
  }
  return 0;
}

// The matrix that the split kernel's tiles cover: m and n, each with its second dim.
Problem split_seen(SplitProblem const& s) {
  Problem seen = s.problem;
  seen.rows *= s.m.size;
  seen.cols *= s.n.size;
  return seen;
}

// How full the split kernel's tiles of `width`-byte vectors and `shape` are.
double split_fill(SplitProblem const& s, int width, TileShape shape) {
  Problem const seen = split_seen(s);
  return tile_fill(seen.rows, seen.cols, tile_dims(seen.element_size, width, shape));
}

// The split kernel's tile shape: of the shapes as large as the square tile (square, tall,
// wide), the best by the Tile kernel's score (shape_score) over the matrix its tiles cover,
// where the output's runs are m's inner dim (both dims of m where they chain). Square tiles at
// least 99% full stay square.
constexpr TileShape kSplitShapes[] = {TileShape::Square, TileShape::Tall, TileShape::Wide};
TileShape split_shape(SplitProblem const& s, int width) {
  if (split_fill(s, width, TileShape::Square) >= kSquareFullFill) return TileShape::Square;
  Problem const seen = split_seen(s);
  return best_scored_shape(seen, width, m_side_chains(s) ? seen.rows : s.problem.rows, kSplitShapes);
}

//
// Shape classes and rankings.
//

// A side's length in bytes, in five buckets: under one vector, a few vectors, under a 256-byte
// row, a medium row (where per-row costs still show: batched 16x168 bfloat16 transposes
// preferred ATen's copy, 2.6M x 16 ones the split tile) and a long one.
int bucket(int64_t bytes) { return bytes < 16 ? 0 : bytes < 64 ? 1 : bytes < 256 ? 2 : bytes < 2048 ? 3 : 4; }

// The buckets of a transpose's output rows (its m dim, contiguous in the output) and input rows
// (its n dim, contiguous in the input).
int out_bucket(Plan const& plan) { return bucket(plan.dims[plan.m].size * plan.element_size); }
int in_bucket(Plan const& plan) { return bucket(plan.dims[plan.n].size * plan.element_size); }

// How full the tile kernel's tiles are, in three buckets: 0 (at least 90%), 1 (60-90%: a side
// just over a tile, such as 65 float32, leaves a mostly empty row of tiles) and 2 (under 60%).
// On the H100, shapes of one class that differed in it preferred different kernels.
int fill_bucket(double fill) { return fill >= 0.9 ? 0 : fill >= 0.6 ? 1 : 2; }

// Small work -- fewer elements than this, counted in the tensor's own dtype -- runs ATen's
// copy. Such a permute takes a few microseconds; the whole tensor fits in L2, so ATen's
// uncoalesced accesses cost little, and what decides the time is how many SMs a kernel keeps
// busy while one tile's latency passes. Over the H100's small-work tuning grid (bench/tune.py
// --small: 1915 shapes of 2^14-2^20 elements, the ".s" classes), ATen's copy reached 0.982 of
// the best kernel on each shape (geomean) and is never slower than torch; ranking each ".s"
// class (leave-one-out) picked 0.969 of the best with 202 shapes over 5% slower than ATen's
// copy, and the main table's picks for the same shapes 0.910 with 635. It is the element
// count that matters, not the bytes: for every element size, ATen's copy stayed within 2.5% of
// the best kernel below 2^19 elements and fell to 0.93-0.95 of it between 2^19 and 2^20, where
// the main grids (2^20 elements and up) begin and the kernels pull ahead. (But for wide rows on
// the copy route, small_rows(), and transposes the lean kernel fills, small_transpose().)
constexpr int64_t kSmallWork = int64_t(1) << 20;

bool small_work(Plan const& plan) { return plan.elements < kSmallWork; }

// A plan's shape class (class_key in words): the route, the element size, the byte-length
// buckets of the output's and the input's innermost dims, the tile (or rows) kernel's widest
// vector, how full its tiles would be (".f1", ".f2"; nothing when at least 90% full), and
// whether the interleave kernel can run it. Interleave counts three times: ".I" in 16-byte vectors,
// ".Ie" one element per access (for 1-byte elements on the H100, 0.46 of clone where vectors
// reach 0.97), ".Ig" one element per access skipping gaps between pixels (0.5-0.8 where the others
// reach 0.8-1.0). ".b" marks a broadcast input (a dim of two or more elements with input
// stride 0, such as an expand()ed view): its reads come from a small footprint, and ATen's copy
// ran such shapes at 1.15-1.2 of clone where the tile kernel ran 0.7, in a class whose other
// shapes ran ATen's copy at 0.4. Whether TMA can run a shape is left out: on the H100 run,
// leave-one-out with a TMA flag in the key picked 0.874 of the best kernel, without it 0.895
// (the flag halved classes whose shapes wanted the same kernel); nor whether one element per
// access goes into output rows that split 32-byte sectors (output_splits_sectors): with that
// flag, leave-one-out picked 0.936 of the best kernel, without it 0.940, and its classes still
// ranked `padded` ahead of the tile kernel's column tiles. ".s" marks small work (under
// kSmallWork elements), which never reaches the table.
struct Class {
  bool copy;
  int element_size, out_bucket, in_bucket, width, fill;
  int interleave;  // 0: cannot run; else its width (16: vectors)
  bool gaps;       // interleave's pixels lie further apart than C
  bool broadcast;  // some dim of size > 1 has input stride 0
  bool small;      // fewer than kSmallWork elements
  // Interleave runs it one element per access (".Ie", ".Ig" with gaps); its width is 16 or the element.
  bool element_interleave() const { return interleave == element_size; }
  std::string text() const {
    return std::string(copy ? "c" : "t") + ".e" + std::to_string(element_size) + ".o" + std::to_string(out_bucket) +
           (copy ? "" : ".i" + std::to_string(in_bucket)) + ".w" + std::to_string(width) +
           (fill ? ".f" + std::to_string(fill) : "") +
           (element_interleave() ? gaps ? ".Ig" : ".Ie" : interleave ? ".I" : "") + (broadcast ? ".b" : "") +
           (small ? ".s" : "");
  }
};

// Some dim of two or more elements is read with stride 0 (an expand()ed view).
bool broadcast_input(Plan const& plan) {
  for (int i = 0; i < plan.rank; ++i)
    if (plan.dims[i].size > 1 && plan.dims[i].in == 0) return true;
  return false;
}

// Small work on the copy route whose rows move in vectors wider than the element, from an input
// with no broadcast dim, runs `rows` rather than ATen's copy, which moves one element per access
// there. Over the 79 such shapes of the H100's small-work grid, `rows` ran at 1.35 x ATen's
// copy's speed (geomean; 1.49 x for 1-byte elements, 1.48 x 2-byte, 1.31 x 4-byte, 1.07 x
// 8-byte) and 0.996 of the best kernel, where ATen's copy reached 0.739; it trailed ATen's copy
// by 5-6% on 3 of them. Where the vector is the element (4-byte rows of float32) the two ran
// alike (0.93-1.03 x), and on broadcast inputs `rows` ran as low as 0.12 x.
std::optional<Choice> small_rows(Plan const& plan, Device const& device) {
  if (!plan.copy_route() || broadcast_input(plan)) return std::nullopt;
  auto c = force(plan, Kernel::Rows, device, nullptr);
  return c && c->width > plan.element_size ? c : std::nullopt;
}

// Small work that the interleave kernel moves in aligned 16-byte vectors (its vector mode:
// interleave_runs_aligned_vectors), with 1- or 2-byte elements and no broadcast dim, runs
// interleave where the lean kernel does not take it (small_transpose(): pixels of a few channels
// leave lean's tiles less than half full). Its blocks shrink towards one warp on small grids
// (cuda/interleave.cuh, interleave_threads). Measured on the H100 over the small-work tuning
// grid (`bench/tune.py --retime ...-tune-small.json.gz --remeasure interleave --beside aten`:
// each shape's interleave and ATen's copy timed beside one clone), interleave against ATen's
// copy (geomean of speed ratios): the 26 shapes of this rule 1.12 x (1-byte elements 1.08 x over
// 8, 2-byte 1.14 x over 18), none more than 5% slower (the slowest 0.995 x). Left with ATen's
// copy: 4-byte elements (9 shapes, 1.04 x; but the sweep's (5, 29882) float32 step view ran
// 0.89 x), 8-byte (18, 0.98 x, 6 more than 5% slower), broadcast inputs (6, 1.00 x; 1-byte ones
// 0.78 x and 0.86 x), realigned uint8 (5, 0.93 x) and one element per access (36, 0.97 x, 18
// more than 5% slower). Then on two grids of random shapes (bench/interleave_small.py, seeds 1
// and 2: images and image batches HWC <-> CHW, (N, C) <-> (C, N), 2-8 channels, 2^10-2^20
// elements; the pick, ATen's copy and eager each timed by do_bench, the best of three rounds, in
// one run), the rule's picks ran 1.12 x ATen's copy over 77 and 75 shapes (uint8 1.10 x,
// bfloat16 1.13 x, float16 1.13 x); the 4 more than 5% slower (0.80-0.94 x) all packed 8 uint8
// planes into pixels, and none such ran faster: those stay with ATen's copy.
// Plans of two dims under kLanesOverInterleave elements go to the lanes kernel instead
// (small_lanes()). On the H100, over the shapes of those two grids' seeds 3 and 4 that this rule
// gave interleave with two-dim plans (137; the pick and lanes forced by name timed the same way,
// beside clone, in one run), lanes ran 1.122 x and 1.125 x interleave's speed under 2^17
// elements (35 and 28 shapes), 1.08 x from 2^17 to 2^18 (12 and 6), 1.064 x and 1.057 x from 2^18
// to 2^19 (9 and 11), none more than 5% slower; from 2^19 up 0.978 x and 0.968 x (17 and 19
// shapes, 3 and 6 more than 5% slower), where interleave stays (docs/PERFORMANCE.md, "Small work
// in lanes").
constexpr int64_t kLanesOverInterleave = int64_t(1) << 19;

std::optional<Choice> small_interleave(Plan const& plan, Device const& device) {
  if (plan.element_size > 2 || broadcast_input(plan)) return std::nullopt;
  if (plan.rank == 2 && plan.elements < kLanesOverInterleave) return std::nullopt;
  auto c = force(plan, Kernel::Interleave, device, nullptr);
  if (!c || !interleave_runs_aligned_vectors(*c->problem, c->width, c->pack)) return std::nullopt;
  return plan.element_size == 1 && c->pack && c->channels == 8 ? std::nullopt : c;
}

// Small transposes of two dims (after merging) that the rows, lean and interleave rules leave to
// ATen's copy (and those of 1- and 2-byte elements under kLanesOverInterleave that interleave
// leaves to it) run the lanes kernel instead: ATen's copy's own access pattern (lanes on consecutive
// output elements, one element per access), with each thread's loads issued before its stores
// and the index split by a 32-bit fast divider. Measured on the H100 (docs/PERFORMANCE.md, "Small
// work in lanes"): on a grid of random shapes (bench/lanes_small.py, seed 5: 2^8-2^20 elements of
// 1-8 bytes, short sides of 2-8 and longer ones, contiguous, offset, stepped and broadcast inputs;
// each timed by do_bench beside ATen's copy, the best of three rounds) the 167 2-D ones ran
// 1.10 x ATen's copy (geomean), 6 of them more than 5% slower (the slowest 0.93 x); the sweep's
// 22 such cells ran 1.04 x eager in the same run. Plans of three or more dims stay with ATen's
// copy: with this rule run on them too, the sweep's 26 such cells fell from 24 to 11 within 0.01
// of eager (four dims: 0.93 x eager). 16-byte elements and the copy route were not measured.
std::optional<Choice> small_lanes(Plan const& plan, Device const& device) {
  if (plan.copy_route() || plan.rank != 2 || plan.element_size > 8) return std::nullopt;
  return force(plan, Kernel::Lanes, device, nullptr);
}

// Small work on the transpose route runs the lean kernel (cuda/lean_transpose.cu) where its loads
// move 16-byte vectors, its tiles are at least half full (kLeanFill) and the input has no
// broadcast dim. Measured on the H100 over the small-work tuning grid's 1631 transposes
// (`bench/tune.py --retime ...-tune-small.json.gz --remeasure lean --beside aten tile`: 2^14-2^20
// elements, 1-16-byte elements, views; each shape's lean, ATen's copy and tile timed beside one
// clone), lean against ATen's copy (geomean of speed ratios):
//   - the 345 shapes of this rule: 1.21 x, 2 (complex128) more than 5% slower; 1.19 x the pick
//     before (ATen's copy, and on 43 of them Small or square tiles of the tile kernel, 1.21 x
//     there); 1.38 x on 1-byte elements, 1.30 x 2-byte, 1.20 x 4-byte, 1.16 x 8-byte, 1.10 x
//     16-byte; 1.08 x at 2^14-2^15 elements, rising to 1.37 x at 2^19-2^20;
//   - left with ATen's copy: one element per load (239 shapes with tiles half full, 1.06 x,
//     57 more than 5% slower), tiles under half full (315, 0.94 x, 118 slower), broadcast
//     inputs (78, 1.08 x, 12 slower).
// Loads of one element of 2 bytes or more (rows off the 16-byte grid) also run lean from
// kLeanNarrowWork elements up. In that band of the same run, the 104 such shapes with no
// broadcast dim (tiles half full, 2- to 8-byte elements) ran lean at 1.22 x ATen's copy (1.10 x
// at 2^17-2^18 elements, 1.15 x at 2^18-2^19, 1.37 x at 2^19-2^20), 2 more than 5% slower
// ((267, 537) and (79, 116, 39) bfloat16: 0.93 x), and reached 0.997 of the best kernel, ATen's
// copy 0.821. Below 2^17 the gain shrank (1.05 x, 5 of 69 more than 5% slower), and 1-byte
// elements, loaded a byte at a time, ran lean at 0.78-0.89 x below 2^19. On an H200, on two
// grids of random shapes in that band the rule never saw (2- to 8-byte elements, a quarter of
// them offset views; each shape's pick, lean, ATen's copy and eager timed beside clone, the best
// of three rounds), lean ran 1.15 x and 1.13 x the pick before (ATen's copy) over 35 and 40
// shapes (1.08-1.09 x below 2^19, 1.25-1.31 x above), 2 and 1 more than 5% slower (bfloat16, the
// worst an offset (3777, 36) at 0.80 x); below 2^17, 30 shapes, 1.02 x with 6 more than 5%
// slower.
// Before, small work ran ATen's copy but for full tiles in 16-byte vectors from 2^17-2^19
// elements, which ran the tile kernel (Small tiles: 0.84-0.85 of clone where Triton's tile kernel
// ran 0.96-0.98; its 640 instructions a warp against Triton's 142 in Nsight Compute were what the
// lean kernel set out to cut).
// offered() holds lean to the same kLeanFill wherever it runs, so the table never ranks it for
// tiles less than half full: the four main grids timed it (the transposes loaded in 16-byte
// vectors, `bench/tune.py --retime ... --remeasure lean --beside tile tma padded`), where it ran
// 1.03-1.13 x the pick before on 1-byte elements up to 2^26 and 0.80-0.95 x on 4- to 16-byte
// ones, and a class that pooled one half-full shape with eighth-full ones ranked it first.
// Its narrower configurations (one side's rows off the 16-byte grid: 1- to 8-byte loads or
// stores) were timed later, on the 1881 such shapes of the four main grids (`--remeasure lean
// --beside aten --config '^(?!.*16-byte loads, 16-byte stores)'`): 0.93 x the pick's speed
// (geomean), more than 5% faster on 500 shapes, 1.79 x ATen's copy. Ranked in, they moved the
// first kernel of 102 classes (86 to lean, from padded 44, gather 21, ATen's copy 9, ...) and,
// each shape held out, the picks more than 5% slower than ATen's copy from 396 to 376.
constexpr double kLeanFill = 0.5;
constexpr int64_t kLeanNarrowWork = int64_t(1) << 17;

// Just above small work, from 2^20 to kLeanMidWork elements of 1-8 bytes, the lean kernel also
// runs what the table gives the tile kernel in 16-byte vectors, where small_transpose() would take
// it (tiles at least half full, no broadcast). On the H100, over the 71 such shapes of `bench/tile_shapes.py
// --mid --seed 11` (random batched transposes of 2^20-2^22 elements, whole 16-byte vectors), it
// ran 1.10 x the speed of the tile kernel's pick (geomean; uint8 1.24 x, bfloat16 1.12 x, float32
// 1.07 x, float64 1.04 x, complex128 1.06 x), more than 5% faster on 47 and more than 5% slower on
// one ((1994, 1512) float64: 0.93 x in that run, 1.00 x the tall tile it picks timed again). Two more ran the lean kernel at 0.15 x and
// 0.21 x in that run and at 1.08 x and 1.05 x timed again in a probe (best of 4 rounds): disturbed
// timings, counted at the probe's figures. A second grid measured with the rule in place (seed
// 12, on an H200): 1.13 x the tile kernel's pick over 70 shapes, none more than 5% slower.
// 16-byte elements keep the tile kernel: 1.06 x and 1.02 x on 13-15 shapes of the two grids, and
// in the sweep two complex128 views ran the lean kernel 4-6% slower than the tile kernel had
// ((131, 11808) and (297, 11511) transposed: 0.99 and 0.92 of clone, 1.05 and 0.96 before).
// Larger tensors keep the tile kernel too: on 4096^2 bfloat16 (2^24) the lean kernel ran 0.926
// of clone, the tile kernel 0.939.
constexpr int64_t kLeanMidWork = int64_t(1) << 22;

// The lean kernel's tile shape (tile_config.h, kLeanShapes). Under kLeanMidWork elements, the
// square tile, with which small work and the mid-size rule above were measured. From there, the
// shape the tile kernel's score picks (shape_score: fill x sqrt(output run / 1 KiB)), among those
// at least kLeanFill full: with four times the vectors a thread (tall, wide, large), more bytes
// are in flight, and tall tiles write output runs four times as long. As for the tile kernel
// (kSquareFullFill), full square tiles take the large shape instead of the tall one the score
// prefers: on 8192^2, large / square / tall lean tiles ran 0.934 / 0.919 / 0.900 of clone
// (uint8), 0.963 / 0.933 / 0.939 (float32), 0.918 / 0.910 / 0.897 (bfloat16), and 64 x 1024^2
// uint8 ran 0.947 square and 0.911 tall. On the H100, over 169 transposes of 2^22-2^27 elements
// from the four main tuning grids (12 per element size and size band, each lean shape timed
// beside clone, the better of two rounds), this shape ran 1.07 x the square tile's speed
// (geomean; 1.04 x at 2^22-2^24 elements, 1.08 x above), more than 5% faster on 44 and more than
// 5% slower on 13, and reached 0.950 of the best lean shape, the square tile 0.889. Under 2^22
// the same rule gained nothing (0.998 x over 60 shapes). The TTC suite's float32 planes of
// 48 x 352 ((28, 48, 28, 4, 352) permuted (4, 0, 3, 2, 1) and the like) ran large lean tiles at
// 0.89-0.96 of clone, the tile kernel 0.86-0.91; its planes of 48 x 48, forced onto them, 0.86-0.96
// against 0.77-0.86 (their class, which had ranked the tile kernel first on one tuning shape,
// ranks lean first since bench/tune.py --thin measured it: 0.87-0.96 in the sweep).
TileShape lean_shape(Problem const& p, int64_t elements) {
  if (elements < kLeanMidWork) return TileShape::Square;
  auto const fill = [&](TileShape s) { return tile_fill(p.rows, p.cols, lean_tile(p.element_size, s)); };
  if (fill(TileShape::Square) >= kSquareFullFill && fill(TileShape::Large) >= kSquareFullFill) return TileShape::Large;
  TileShape best = TileShape::Square;
  double best_score = shape_score(p, lean_tile(p.element_size));
  for (TileShape s : kLeanShapes) {
    double const score = shape_score(p, lean_tile(p.element_size, s));
    if (fill(s) >= kLeanFill && score > best_score) best = s, best_score = score;
  }
  return best;
}

// Transposes of 1- and 2-byte elements, beyond small work, that the chooser would move one
// element per access on both sides through shared memory -- the padded seed kernel, the lean
// kernel or the tile kernel so -- or in the realign kernel, over rows off the 16-byte grid, run
// the words kernel: one element per global access too, but all of a whole tile's loads in flight
// at once and 4-byte words in shared memory. Where its tiles are at least half full and the
// input's rows unit-stride; 2-byte tensors from kWordsHalfBytes on only in place of lean one
// element each way (1.20 x and 1.26 x over 5 and 5 such transposes from two halves of 120 new
// sweep seeds, none slower, none behind eager where lean had run behind it on 2). There the
// padded kernel ran as fast as words (0.99 x and 1.01 x over 27 and 19, 10 and 7 of them more
// than 5% slower), and realign, where its vectors run well (0.65-0.88 of clone), 5-8% faster;
// elsewhere words ran 1.2-13 x realign's speed: not separated yet. Small work keeps its own
// pick: under 2^20 elements words ran behind the lean kernel and ATen's copy.
// Measured on an H200 (docs/PERFORMANCE.md, "Words: 1- and 2-byte elements off the grid"; the
// pick and the kernel it replaced forced by name, bit-checked, the better of two rounds beside
// clone): on 85 such transposes of 0.5-250 MB (2-D matrices with odd sides, random permutes of
// ranks 3-5 from four sweep seeds, 70 uint8 and 15 bfloat16), words ran 1.26 x as fast as the
// pick under 64 MiB (68 shapes, 0.91-1.98 x, 1 more than 5% slower) and 1.14 x from there on
// (17 uint8 shapes, 1.02-1.53 x); then, held out, 1.19 x over the 77 uint8 transposes of 65-262
// MB among 60 new sweep seeds' cells that lifting the 1-byte size cut moved to words (1 slower).
constexpr int64_t kWordsHalfBytes = int64_t(1) << 25;

constexpr char kWordsReason[] =
    "1- or 2-byte elements that the pick moves one element per access on both sides, or realigns (2-byte "
    "elements under 32 MiB, but for lean's picks), the words kernel's tiles at least half full and the input's "
    "rows unit-stride: run words";

std::optional<Choice> words_takes_elements(Plan const& plan, Choice const& pick, Device const& device) {
  if (plan.copy_route() || !pick.problem) return std::nullopt;
  int const E = pick.problem->element_size;
  bool const elementwise = pick.kernel == Kernel::Padded || pick.kernel == Kernel::Realign ||
                           (pick.kernel == Kernel::Lean && pick.width == E && pick.out_width == E) ||
                           (pick.kernel == Kernel::Tile && pick.width == E);
  if (!elementwise) return std::nullopt;
  auto words = force(plan, Kernel::Words, device, nullptr);
  if (!words) return std::nullopt;
  Problem const& p = *words->problem;
  if (p.col_stride != 1 || tile_fill(p.rows, p.cols, words_tile(p.element_size, words->shape)) < kLeanFill) return std::nullopt;
  if (plan.element_size == 2 && pick.kernel != Kernel::Lean && plan.numel() * plan.element_size >= kWordsHalfBytes)
    return std::nullopt;
  return words;
}

// Where the input's rows lie off the 16-byte grid and the output's rows are whole vectors, the
// lean kernel loads one element at a time and stores 16-byte vectors. On a GPU whose rule it is
// (Device::lean_element_loads), it takes such transposes of 8-byte elements (rows unit-stride,
// nothing broadcast) from the kernels the table ranks first for them -- realign, tile, padded,
// tma, interleave, split: those it was timed against -- wherever it is offered. Measured on an
// H200 (docs/PERFORMANCE.md, "Rows off the 16-byte grid: 8-byte elements in the lean kernel";
// each shape's lean, the pick and the other kernels forced, the better of two rounds beside clone):
// - on two grids of transposes whose input rows alone lie off the grid (offset slices and odd
//   rows of 2- to 5-dim shapes, 2^21-2^27 elements; seeds 4711 and 8123, 72 shapes each), lean
//   ran the 8-byte ones at 1.08 x and 1.10 x the pick (46 and 40 shapes, none more than 5%
//   slower), 4-byte ones at 1.06 x and 1.04 x, 1- and 2-byte ones at 0.88-0.97 x;
// - on shapes drawn afresh where the rule would move the pick (random permutes of ranks 2-5,
//   seeds 5150 and 6262, with the 11 such shapes of the committed results), 8-byte elements
//   ran 1.13 x (50 shapes, one 6% slower: (163784, 69) float64 off padded), 4-byte ones 1.03 x
//   with 8 of 52 more than 5% slower, down to 0.64 x (572 x 127667 float32 off realign):
//   4-byte elements keep the table's pick.
std::optional<Choice> lean_takes_element_loads(Plan const& plan, Choice const& pick, Device const& device) {
  static constexpr Kernel kTimedAgainst[] = {Kernel::Realign, Kernel::Tile,       Kernel::Padded,
                                             Kernel::Tma,     Kernel::Interleave, Kernel::Split};
  if (!device.lean_element_loads || plan.element_size != 8 || broadcast_input(plan) ||
      !contains(kTimedAgainst, pick.kernel))
    return std::nullopt;
  std::optional<Choice> lean = force(plan, Kernel::Lean, device, nullptr);
  if (!lean || lean->width != 8 || lean->out_width != 16 || lean->problem->col_stride != 1) return std::nullopt;
  return lean;
}

// The realign kernel loads aligned 16-byte vectors over rows off the 16-byte grid and cuts its
// tiles one vector's worth of rows longer than the matrix. On an H200 the tile kernel's 8-byte
// vectors ran 8-byte elements faster wherever the table ranks realign first, and the padded
// kernel ran 2- and 4-byte elements faster into output rows of 256-2047 bytes from input rows
// of 2048 bytes or more (classes .o3.i4), and 1-byte elements into output rows of 2048 bytes
// or more from input rows of 256 or more (.o4.i3, .o4.i4). On a GPU whose rule it is
// (Device::realign_gives_way), those kernels take such transposes. Measured on an H200
// (docs/PERFORMANCE.md, "Realign picks in the tile and padded kernels"; seven kernels forced by
// name, bit-checked, the better of two rounds beside clone):
// - 8-byte elements, design (seed 293, 21 random float64, int64 and complex64 permutes the H200
//   gives realign, 23-363 us): tile 1.06 x the pick over 18 with rows of 2048 bytes or more on
//   both sides (none more than 5% slower), 1.38 x over 3 with shorter rows; the padded kernel
//   ran about as fast as tile (1.06 x and 1.46 x), lean no faster than realign (1.00 x, 7 more
//   than 5% slower). Held out (seed 294, 20 such permutes, 15-448 us): 1.09 x (1.01-1.52 x),
//   none slower, 0.81 -> 0.88 of clone (eager 0.48). Moved by the rule (seed 296, 60 shapes):
//   1.12 x (0.95-1.99 x), none more than 5% slower, 0.79 -> 0.88 of clone (eager 0.49);
// - 4- and 2-byte elements, design (seeds 297 and 298, 40 realign picks each): the tile kernel
//   ran slower (0.76-0.94 x realign in every class); padded ran 1.18 x over the 7 4-byte
//   shapes of .o3.i4 (none slower) and 1.14 x over the 12 2-byte ones (2 slower), 0.99-1.03 x in
//   the other classes. Held out (seeds 299 and 300, 40 each): 1.12 x over 10 4-byte shapes of
//   .o3.i4 (none slower), 1.15 x over 9 2-byte ones (one 0.86 x). Moved by the rule (seed 302,
//   40 shapes): 1.15 x (0.81-1.52 x), 3 more than 5% slower, 0.59 -> 0.68 of clone (eager 0.22);
// - 1-byte elements, design (seed 301, 30 uint8 and int8 realign picks, all of 2^22 elements or
//   more): padded 1.15 x over 11 shapes with output rows of 2048 bytes or more and input rows
//   of 256-2047 (.o4.i3; one more than 5% slower), 1.14 x over 12 with both rows of 2048 bytes
//   or more (.o4.i4; none slower), 1.01 x over 5 with input rows under 256 bytes (.o4.i2).
//   Held out (seed 303, 40 such permutes): 1.17 x over 11 of .o4.i3 (none slower), 1.21 x over
//   16 of .o4.i4 (one slower), 2.20 x over 2 broadcast ones; .o4.i2 ran 0.93 x (4 of 7 slower)
//   and keeps realign. Moved by the rule (seed 308, 30 shapes, 35-331 us in realign): 1.21 x
//   (0.70-3.70 x), 2 more than 5% slower, 0.38 -> 0.45 of clone (eager 0.10).
std::optional<Choice> realign_gives_way(Plan const& plan, Class const& cls, Choice const& pick, Device const& device) {
  if (!device.realign_gives_way || pick.kernel != Kernel::Realign) return std::nullopt;
  if (plan.element_size == 8) return force(plan, Kernel::Tile, device, nullptr);
  if ((plan.element_size == 2 || plan.element_size == 4) && cls.out_bucket == 3 && cls.in_bucket == 4)
    return force(plan, Kernel::Padded, device, nullptr);
  if (plan.element_size == 1 && cls.out_bucket == 4 && cls.in_bucket >= 3)
    return force(plan, Kernel::Padded, device, nullptr);
  return std::nullopt;
}

// Where the table picks the tile kernel in 16-byte vectors for 4- or 8-byte elements, the lean
// kernel in its own tile shape ran faster on an H200, and where lean is not offered (more than 3
// batch dims, tiles under half full) the split kernel ran 4-byte elements faster. On a GPU whose
// rule it is (Device::tile_gives_way), those kernels take such transposes, wherever they are
// offered. Measured on an H200 (docs/PERFORMANCE.md, "4- and 8-byte transposes the table gives
// the tile kernel"; the pick and the others forced by name, bit-checked, the better of two rounds
// beside clone), on random permutes whose pick is the tile kernel (2^20-2^27 elements, some offset
// by whole vectors):
// - lean, ranks 2-6 (seed 31): 4-byte elements 1.04 x the pick's speed (45 shapes, one more than
//   5% slower: (7, 3, 88, 16, 3792) float32, 0.79 x, in tiles a quarter to a half full), 8-byte
//   elements 1.05 x (22 shapes, none slower); bfloat16 1.07 x but 2 of 19 shapes 6-13% slower,
//   so 2-byte elements keep the tile kernel. Drawn afresh with the rule built in (seed 33): 1.04 x
//   over 100 shapes, 3 more than 5% slower (0.91-0.93 x);
// - split where the pick stays the tile kernel, ranks 5-6 (seeds 34 and 35, 16 shapes each):
//   4-byte elements 1.28 x and 1.24 x (one shape each more than 5% slower, 0.93-0.94 x); 8-byte
//   ones 1.10 x and 1.06 x, but 6 of 37 shapes 6-22% slower, 2-byte ones 1.14 x and 1.07 x with
//   one of 25 at 0.46 x: those keep the tile kernel. Drawn afresh with the rule built in (ranks
//   3-6, seed 36): 1.30 x over 60 float32 shapes, one more than 5% slower (0.91 x).
std::optional<Choice> tile_gives_way(Plan const& plan, Choice const& pick, Device const& device) {
  if (!device.tile_gives_way || pick.kernel != Kernel::Tile || pick.width != 16 ||
      (plan.element_size != 4 && plan.element_size != 8))
    return std::nullopt;
  std::optional<Choice> lean = force(plan, Kernel::Lean, device, nullptr);
  if (lean && offered(*lean, nullptr)) return lean;
  if (plan.element_size == 4) return force(plan, Kernel::Split, device, nullptr);
  return std::nullopt;
}

// Whether some batch dim of two or more indices steps through the input `stride` elements apart.
bool batch_in_stride(Batch const& batch, int64_t stride) {
  for (int d = 0; d < batch.rank; ++d)
    if (batch.size[d] > 1 && batch.in_stride[d] == stride) return true;
  return false;
}

// Unpacking C = 2-3 channels of 8-byte elements (or 4 of 16-byte ones) one element per access,
// the interleave kernel reads a pixel's C elements and takes the dim beside the channels as a
// batch dim, though where that dim's input stride is C the input holds runs of C * its size
// elements: float64 (a, b, C) reversed to (C, b, a) and the like. The split kernel reads those
// runs whole. On a GPU whose rule it is (Device::dense_unpacks_split), split takes such unpacks
// (input not broadcast; with 16-byte elements, output rows of 600 or more) wherever it is
// offered. Measured on an H200 (docs/PERFORMANCE.md, "Unpacks whose channels run on: the split
// kernel"; the pick, interleave and split forced by name, bit-checked, the better of two rounds
// beside clone):
// - two grids of float64 (a, b, C) reversed and (B, a, b, C) permuted (2, 0, 3, 1), 2^21-2^28
//   bytes (seeds 131 and 132), from which the rule was drawn: with C = 2-3, split ran 1.33 x and
//   1.16 x interleave (11 and 10 shapes, up to 1.85 x; more than 5% slower on one each, of 13
//   and 14 us); with C = 4, 0.97 x and 1.01 x (2 and 5 shapes, 0.94 x on two of 49 and 287 us):
//   four 8-byte channels keep interleave;
// - drawn afresh with the rule built in (ranks 3-5, C = 2-3, some stepped or offset outer dims;
//   seed 151): 1.20 x interleave over 149 shapes, 0.656 -> 0.786 of clone, faster on 125, more
//   than 5% slower on 10 (down to 0.82 x: (345, 3396, 13, 3) permuted (1, 3, 2, 0), 179 us);
//   never slower than ATen's copy;
// - complex128 (only four channels reach interleave one element per access): over a grid
//   (seed 152, 78 shapes), 1.08 x, but (25, 138, 1712, 5, 4) permuted (2, 0, 4, 3, 1), output
//   rows of 5, ran split at 0.55 of clone, interleave 0.84, eager 0.70. By output row length:
//   1.12 x over the 58 shapes with rows of 600 or more (worst 0.93 x), 0.99 x over the 20 with
//   shorter rows (all the losses under 0.9 x). Drawn afresh with rows >= 600 built in (seed 153):
//   1.11 x over 82 shapes, 0.801 -> 0.890 of clone, faster on 74, more than 5% slower on 5
//   (down to 0.87 x: (1565, 14487, 4) reversed, 994 us; reversals of (a, b, 4) with b over
//   9000 ran 0.87-1.13 x); never slower than ATen's copy (0.26-0.41 of clone there).
// The H100's timings pointed the other way until split was timed again there (docs/PERFORMANCE.md,
// "The split kernel timed again on the H100"): the H100's table now ranks split first in the
// classes of these unpacks itself, and in the sweep split ran the five float64 reversals it moved
// there at 1.01-1.29 x interleave. So the rule moves none of the shapes of the tuning grids and
// sweeps any more; it stays the H200's for a table that ranks interleave first.
std::optional<Choice> split_takes_dense_unpacks(Plan const& plan, Choice const& pick, Device const& device) {
  int const E = plan.element_size;
  bool const measured = (E == 8 && pick.channels <= 3) || (E == 16 && pick.channels == 4 && pick.problem->rows >= 600);
  if (!device.dense_unpacks_split || pick.kernel != Kernel::Interleave || pick.pack || pick.width != E || !measured ||
      broadcast_input(plan))
    return std::nullopt;
  bool const runs_on = batch_in_stride(pick.problem->batch, pick.channels);  // into the next dim
  return runs_on ? force(plan, Kernel::Split, device, nullptr) : std::nullopt;
}

std::optional<Choice> small_transpose(Plan const& plan, Device const& device) {
  if (plan.copy_route() || broadcast_input(plan)) return std::nullopt;
  auto c = force(plan, Kernel::Lean, device, nullptr);
  if (!c || !offered(*c, nullptr)) return std::nullopt;  // offered(): tiles kLeanFill full
  bool const narrow_pays = plan.element_size >= 2 && plan.elements >= kLeanNarrowWork;
  return c->width == 16 || narrow_pays ? c : std::nullopt;
}

Class classify(Plan const& plan) {
  int64_t const E = plan.element_size;
  Class c{plan.copy_route(), int(E), out_bucket(plan), plan.copy_route() ? 0 : in_bucket(plan),
          0, 0, 0, false, false, small_work(plan)};
  c.broadcast = broadcast_input(plan);
  auto const p = plan.copy_route() ? rows_problem(plan) : matrix_problem(plan);
  if (!p) return c;
  c.width = plan.copy_route() ? rows_width(*p) : tile_width(*p);
  if (!plan.copy_route()) {
    if (c.width) c.fill = fill_bucket(tile_fill(p->rows, p->cols, tile_dims(p->element_size, c.width, tile_shape(*p, c.width))));
    std::string why;
    InterleaveFit const fit = interleave_fit(*p, &why);
    c.interleave = fit.width;
    c.gaps = fit.gaps;
  }
  return c;
}

// The table entries a class the table lacks looks up, in order: its family -- the tuning shapes
// of every class that differs from it only in its tile-fill bucket and interleave flag, with the
// same broadcast flag, ranked as one class (a key ending in ".*") --, then the family of the
// other broadcast flag (bench/tune_table.py, family() and family_keys()). A family lends a
// kernel ahead of ATen's copy only where it ran at 1.1 x ATen's speed or more over the family
// (LENT_MARGIN there). Each class of the H100's tuning grids held out whole: where the lookup
// before (the nearest class with an entry, stripped of one flag at a time) found one, 4854
// shapes, the family picks 0.903 of the best kernel and runs 6.0% of them more than 5% slower
// than ATen's copy (the nearest class: 0.862, 12.5%); where it found none and the fixed rule
// ran, 3799 shapes, 0.829 and 8.8% (the rule: 0.813, 11.4%).
std::vector<std::string> family_keys(Class c) {
  c.fill = 0;
  c.interleave = 0;
  c.gaps = false;
  std::string const own = c.text() + ".*";
  c.broadcast = !c.broadcast;
  return {own, c.text() + ".*"};
}

std::string names(std::vector<Kernel> const& ranking) {
  std::string text;
  for (Kernel k : ranking) text += (text.empty() ? "" : ",") + std::string(kernel_name(k));
  return text;
}

std::vector<Kernel> parse_ranking(std::string const& text) {
  std::vector<Kernel> ranking;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');)
    if (auto k = kernel_from_name(name)) ranking.push_back(*k);
  if (!contains(ranking, Kernel::Aten)) ranking.push_back(Kernel::Aten);
  return ranking;
}

// The tuning tables, one per architecture: class or family key -> candidates, best first (as
// text in the .inc files, parsed once).
struct Row {
  char const* key;
  char const* ranking;
};
struct Tuned {
  std::string text;
  std::vector<Kernel> ranking;
};
using Table = std::map<std::string, Tuned>;
Table parse_table(std::initializer_list<Row> rows) {
  Table table;
  for (Row const& r : rows) table[r.key] = {r.ranking, parse_ranking(r.ranking)};
  return table;
}
Table const* table_for(int arch) {
  static std::map<int, Table> const tables = {
      {90, parse_table({
#include "tuning/sm_90.inc"
           })},
  };
  auto it = tables.find(arch);
  return it == tables.end() ? nullptr : &it->second;
}

// The rule for classes and GPUs without a table entry: rows copy as rows; a short side of a few
// elements interleaves; long sides on both ends take the tile, shorter ones the split tile, and
// rows no vector fits the padded seed kernel; a broadcast input goes to the gather kernel first,
// except where the interleave or the full tile kernel runs it. Replayed on the H100's tuning
// shapes beyond small work (bench/tune.py --rerank ... --reclassify --holdout; 9249 whose pick was
// measured), the rule picks 0.823 of the best kernel and runs more than 5% slower than ATen's
// copy on 1137 of them; before the box kernel
// left short copy rows (0.45 x ATen's copy there, where rows ran 1.19 x) and gather came first
// on broadcast inputs (split: 1.03 -> 1.14 x ATen's copy, padded 1.02 -> 1.34, copy rows
// 1.21 -> 1.29), 0.764 and 1787. Not measured on any other GPU.
std::vector<Kernel> fallback_ranking(Plan const& plan) {
  int64_t const E = plan.element_size;
  auto gather_first = [&plan](std::vector<Kernel> ranking) {
    if (broadcast_input(plan)) ranking.insert(ranking.begin(), Kernel::Gather);
    return ranking;
  };
  if (plan.copy_route()) {
    if (plan.dims[plan.m].size * E >= 64) return gather_first({Kernel::Rows, Kernel::Box, Kernel::Aten});
    return gather_first({Kernel::Rows, Kernel::Aten});
  }
  int64_t const m_bytes = plan.dims[plan.m].size * E, n_bytes = plan.dims[plan.n].size * E;
  if (std::min(plan.dims[plan.m].size, plan.dims[plan.n].size) <= kMaxVectorChannels)
    return {Kernel::Interleave, Kernel::Aten};
  // Rows that no vector of two or more elements fits: the padded seed kernel led the tile
  // kernel in every such class of the H100 table (0.47 vs 0.37 of clone for 1-byte, 0.64 vs
  // 0.55 for 2-byte, 0.75 vs 0.38 for 4-byte elements).
  auto const p = matrix_problem(plan);
  if (p && tile_width(*p) == E && E <= 4) return gather_first({Kernel::Padded, Kernel::Tile, Kernel::Aten});
  if (m_bytes >= 512 && n_bytes >= 512) return {Kernel::Tile, Kernel::Aten};
  return gather_first({Kernel::Split, Kernel::Tile, Kernel::Aten});
}

}  // namespace

// Rules measured to differ between GPU models of one architecture (docs/PERFORMANCE.md, "On an
// H200"). Everything else -- the tuning table, the other rules -- was measured on the H100 and is
// shared. Two rules found on the H200 held on the H100 as well, on fresh shapes with the rule
// fixed beforehand, and every sm_90 GPU takes them (docs/PERFORMANCE.md, "Two H200 rules on the
// H100"):
//   - Transposes of 8-byte elements that the table gives ATen's copy, where that copy would load
//     a sector for every element, in split (split_takes_scattered_aten has the measurements):
//     1.57 x over 46 held-out float64 shapes on an H200, 1.76 x over 35 on an H100.
//   - Transposes that the table gives gather, where gather would load a sector for every
//     element, into outputs of 16 MiB or more (6 MiB or more for 1- and 2-byte elements), in
//     split (split_takes_scattered_gather has the measurements): on an H200 1.74 x over 70
//     held-out shapes, 1.34 x over 18 held-out 1- and 2-byte ones of 6-16 MiB; on an H100 1.74 x
//     and 1.55 x over 103 and 112.
// Six more found on the H200 were timed on an H100 the same way, each alone on 25 fresh shapes
// it moves, then together, built in, on 80 more (docs/PERFORMANCE.md, "Six more H200 rules on
// the H100"; 1.34 x over the 80, 0.604 -> 0.810 of clone, one more than 5% slower), and every
// sm_90 GPU takes them:
//   - Row copies in vectors under 16 bytes over many dims (gather_takes_rows), and row copies
//     into output rows of 16 bytes or more that the table gives ATen's copy
//     (gather_takes_aten_rows), in gather: on an H200 rows alone reached 0.870 and 0.849 of the
//     better of the two on two unseen grids, the pick 0.975 and 0.989, and ATen's copy's row
//     copies ran 1.50 x over 38 held-out shapes; on an H100 1.46 x over 25. Runs of 3 float32
//     elements over 5 or 6 dims ran ATen's copy 1.06-1.40 x as fast as gather on two H200 grids
//     (5 shapes), but on a third (20 shapes of runs of 3 over 5-7 dims) 0.94 x (float32) and
//     1.01 x (float64), 8 more than 5% slower: those rows stay with gather.
//   - Transposes of up to 4-byte elements that the table gives ATen's copy, where gather's lanes
//     share sectors, in gather (gather_takes_shared_sectors has the measurements): on an H200
//     1.40 x and 1.41 x over two grids of 60, on an H100 1.40 x over 25.
//   - Transposes of 4- and 8-byte elements that the table gives padded, where lean's tiles would
//     be under half full, in lean (lean_takes_padded has the measurements): on an H200 1.19 x
//     over 100, on an H100 1.17 x over 25.
//   - Transposes of 2-byte elements that the table gives ATen's copy, where interleave runs one
//     element per access into output rows of 2048 bytes or more, in interleave, and 1-byte ones
//     where it skips gaps (interleave_takes_element_aten has the measurements): on an H200 1.70 x
//     and 1.40 x over 50 and 60 2-byte shapes (with gaps between pixels and without), 1.44 x over
//     60 1-byte ones; on an H100 1.98 x over 25, two of them 8-19% behind eager.
//   - Row copies in runs under 256 bytes whose next run lies 1 MiB or more further on in the
//     output, with blocks in the neighbours-together order (reads_runs_together has the
//     measurements): on an H200 1.17 x over 60, on an H100 1.04 x over 25.
//   - Transposes of 4-byte elements that the table gives the tile kernel one element per access,
//     in lean where gather's reads would be scattered (where lean can run them), else in gather
//     (element_tiles_give_way has the measurements): on an H200 1.94 x over 99, on an H100
//     1.94 x over 25 (18 of them behind eager by more than 5% before, 1 after).
// Two more timed there stay the H200's: uint8 padded picks in lean's square tiles (1.04 x over
// 25, 8 more than 5% slower) and short split tiles in gather (0.99 x over 25, 6 slower).
// One rule found on the H100 is set for every sm_90 GPU as well, on the H200's tuning shapes
// (12, 1.29 x) but not held out there: batches of small matrices, each whole and in order on
// both sides, in gather (gather_takes_dense_batches has the measurements).
// The rest are the H200's own. On the H200 (do_bench beside clone, one run, the better of three
// rounds):
//   - Walking m-tiles first where tiles_m >= tiles_n: float32 7264^2 0.882 -> 0.921 (square
//     tiles), 32768 x 8192 0.899 -> 0.964, 43408 x 1216 0.900 -> 0.930 (tall); float64
//     32768 x 8192 0.889 -> 0.959, 8192^2 0.955 -> 0.985; bfloat16 8192^2 0.936 -> 0.951;
//     uint8 16384^2 0.841 -> 0.852 (large tiles); large lean tiles of float32 8192^2 0.941 ->
//     0.969. Where n-tiles outnumber m-tiles it loses (float32 8192 x 32768: 0.940 -> 0.918;
//     uint8 16384^2 in tall tiles 0.861 -> 0.780), and 64 x 1024^2 float32 runs alike either way.
//     On the H100, m-tiles first ran aligned 8192^2 at 0.960 against 0.961 (float32) and 0.957
//     against 0.964 (bfloat16) with plain loads: its rule keeps n-tiles first but where the loads
//     keep the input's lines (kept_m_first).
//   - The rows kernel's 16-byte vectors in blocks of 128 threads (two vectors each) instead of
//     512: (8, 4096, 4096) bfloat16 permuted (1, 0, 2) 0.959 -> 0.985, float32 0.974 -> 1.000,
//     (2048, 49, 3, 32) float32 (0, 2, 1, 3) 0.943 -> 0.957, (8, 1024, 16, 128) float64 0.988
//     both. On the H100 128-thread blocks ran large row copies 0.982 x as fast (strided_copy.cu).
//   - No tile kernel Large configuration (large tiles, tile_shape): 32768^2 uint8 ran large tiles
//     at 0.854, wide tiles 0.938 (16384^2 0.853 / 0.943, 8192 x 32768 0.843 / 0.944, 4 x 8192^2
//     0.854 / 0.941); float32 large tiles / lean's large tiles: 32768^2 0.930 / 0.960, 32768 x
//     8192 0.941 / 0.980, 7264^2 0.917 / 0.948, 43408 x 1216 (mostly full) 0.888 / 0.944,
//     1216 x 43408 0.906 / 0.911. On the H100 large tiles had run uint8 32768^2 at 0.970.
//   - 8-byte elements from input rows off the 16-byte grid into output rows of whole vectors in
//     the lean kernel (lean_takes_element_loads has the measurements): the matrix table's
//     1000 x 3001 float64 0.947 -> 1.136 of clone.
//   - 4- and 8-byte elements that the table gives the tile kernel in 16-byte vectors in lean's
//     own tiles, or 4-byte ones in split's where lean is not offered (tile_gives_way has the
//     measurements): float32 NHWC -> NCHW of (32, 56, 56, 256) 0.924 -> 0.990 of clone, the
//     TTC suite's (15, 15, 32, 15, 5, 112) -> (1, 4, 0, 5, 3, 2) 0.792 -> 0.942 (split).
//   - Unpacks of 2-3 channels of 8-byte elements (or 4 of 16-byte elements into output rows of
//     600 or more) one element per access whose channels' run continues into the next dim in
//     split (split_takes_dense_unpacks has the measurements): the sweep's float64 (24099, 164,
//     2) reversed 0.679 -> 0.805 of clone.
//   - Transposes of 2-byte elements never run box: the next kernel of the ranking runs (skips_box
//     has the measurements): 1.53 x box over 88 held-out shapes.
//   - 1-byte planes packed one element per access skipping gaps in gather rather than
//     interleave (gather_takes_gapped_packs has the measurements): 1.65 x over 60 held-out
//     shapes.
//   - The gapped 1-byte packs of the previous rule whose reads are scattered, at any size, in
//     split (split_takes_scattered_gather, below, has the measurements): 1.66 x and 1.42 x over
//     47 and 46 held-out shapes of 16 MiB or more and under it.
//   - Transposes that the table gives split one element per access, whose output side chains
//     two dims into a run under 128 elements with the input's rows next to it, in tiles under
//     80% full, in gather (gather_takes_short_split_rows has the measurements): 1.24 x over 60
//     held-out shapes; 16-byte ones over four or more dims in ATen's copy
//     (aten_takes_short_split_rows has the measurements): 1.07 x gather over 40 held-out shapes.
//   - Transposes of 1-byte elements under 2^22 that the table gives padded, in lean's square
//     tile (lean_takes_padded_bytes has the measurements): 1.21 x padded over 14 held-out shapes.
//   - Transposes that the table gives realign, of 8-byte elements in the tile kernel, of 2- and
//     4-byte elements into output rows of 256-2047 bytes from input rows of 2048 or more in
//     padded, of 1-byte elements into output rows of 2048 bytes or more from input rows of 256 or
//     more in padded (realign_gives_way has the measurements): 1.09 x, 1.12 x, 1.15 x and 1.24 x
//     over 20, 10, 9 and 29 held-out shapes.
//   - Transposes of 8-byte elements that the table gives padded, into rows of 256-2047 bytes on
//     both sides in lean (else split), from broadcast inputs into rows of 2048 bytes or more in the
//     tile kernel (padded_gives_way has the measurements): 1.16 x and 1.14 x over 40 and 23
//     held-out shapes.
Device device_rules(int arch, bool tma, std::string const& name) {
  Device d{arch, tma};
  d.scattered_aten_split = d.scattered_gather_split = d.dense_batch_gather = arch == 90;  // measured on the H100 and the H200
  d.rows_gather = d.shared_sector_gather = d.padded_lean = d.element_tiles_give_way = d.element_aten_interleave =
      d.runs_together = arch == 90;  // found on the H200, held out on the H100
  if (arch == 90 && name.find("H200") == std::string::npos) {
    d.keep_inputs_from = int64_t(128) << 20;  // measured on the H100 alone (keeps_inputs)
    d.near_broadcast_gather = true;           // measured on the H100 alone (near_broadcast)
    d.kept_m_first = true;                    // measured on the H100 alone (kept_m_first)
  }
  if (name.find("H200") != std::string::npos) {
    d.long_side_first = true;
    d.rows_threads = 128;
    d.large_tiles = false;
    d.lean_element_loads = true;
    d.tile_gives_way = true;
    d.dense_unpacks_split = true;
    d.box_gives_way = true;
    d.gapped_pack_gather = true;
    d.far_short_runs_aten = true;
    d.short_split_gather = true;
    d.short_split_aten = true;
    d.padded_bytes_lean = true;
    d.realign_gives_way = true;
    d.padded_gives_way = true;
  }
  return d;
}

std::optional<Choice> force_named(Plan const& plan, NamedKernel const& named, Device const& device,
                                  std::string* why_not) {
  std::optional<Choice> c;
  if (named.box == BoxForm::Default) {
    c = force(plan, named.kernel, device, why_not, named.shape);
  } else {
    std::string dummy;
    c.emplace();
    c->kernel = Kernel::Box;
    if (!(c->box = plan_small_box(plan, why_not ? why_not : &dummy))) return std::nullopt;
  }
  if (c) {
    c->together = named.together && has_together_order(*c);
    c->lanes = c->lanes || named.lanes;
  }
  return c;
}

std::string class_key(Plan const& plan) { return classify(plan).text(); }

// Every output row repeats one input element: the input reads the output's innermost dim (two
// or more elements) with stride 0.
bool output_rows_repeat_one_element(Plan const& plan) {
  return plan.dims[plan.m].in == 0 && plan.dims[plan.m].size > 1;
}

std::optional<Choice> force(Plan const& plan, Kernel kernel, Device const& device, std::string* why,
                            std::optional<TileShape> shape) {
  Choice c;
  c.kernel = kernel;
  std::string dummy;
  if (why == nullptr) why = &dummy;
  switch (kernel) {
    case Kernel::Aten: return c;
    case Kernel::Box:
      if (!(c.box = plan_box(plan, why))) return std::nullopt;
      return c;
    case Kernel::Rows: {
      if (!(c.problem = rows_problem(plan))) return *why = plan.copy_route() ? "more than 8 dims" : "not the copy route", std::nullopt;
      if (!contiguous_rows_output(*c.problem)) return *why = "the output is not contiguous rows", std::nullopt;
      c.width = rows_width(*c.problem);
      c.threads = device.rows_threads;
      return c;
    }
    case Kernel::Gather: {
      if (!(c.problem = output_walk_problem(plan, why))) return std::nullopt;
      if (!aligned(c.problem->dst, 16)) return *why = "the output does not start on a 16-byte boundary", std::nullopt;
      c.width = 16;
      return c;
    }
    case Kernel::Lanes: {
      if (!(c.problem = output_walk_problem(plan, why))) return std::nullopt;
      return c;
    }
    case Kernel::Stage: {
      if (!(c.problem = output_walk_problem(plan, why))) return std::nullopt;
      int64_t const side = std::min(c.problem->rows, c.problem->cols);
      if (side < 2 || side > kStageMaxChannels)
        return *why = "no side of 2-" + std::to_string(kStageMaxChannels) + " elements", std::nullopt;
      return c;
    }
    case Kernel::Fill: {
      if (!output_rows_repeat_one_element(plan))
        return *why = "the input does not read the output's innermost dim with stride 0", std::nullopt;
      if (!(c.problem = output_walk_problem(plan, why))) return std::nullopt;
      c.lanes = fill_vectors_per_lane(c.problem->cols, c.problem->element_size) == 0;  // rows too short for a span
      if (!aligned(c.problem->dst, std::min(c.problem->element_size, 16)))
        return *why = "the output does not start on a multiple of its element size", std::nullopt;
      return c;
    }
    default: break;
  }
  if (!(c.problem = matrix_problem(plan))) return *why = "more than 6 batch dims", std::nullopt;
  Problem const& p = *c.problem;
  switch (kernel) {
    case Kernel::Tile: {
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      if (!(c.width = tile_width(p))) return *why = "m or n is not unit-stride", std::nullopt;
      c.shape = shape ? *shape : tile_shape(p, c.width, device);
      if (c.shape == TileShape::Small) c.width = small_tile_width(p.element_size, c.width);
      if (c.shape == TileShape::Column && c.width != p.element_size)
        return *why = "column tiles move one element per access, and " + std::to_string(c.width) + "-byte vectors fit",
               std::nullopt;
      TileDims const t = tile_dims(p.element_size, c.width, c.shape);
      c.problem->keep_inputs = keeps_inputs(p, c.width, device);
      c.problem->m_first = walk_m_first(p, t) || long_side_first(p, t, device) || kept_m_first(p, t, device);
      if (tile_too_empty(p, c.width, c.shape))
        return *why = std::string("its ") + tile_shape_name(c.shape) + " tiles would be a quarter full or less", std::nullopt;
      return c;
    }
    case Kernel::Interleave: {
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      InterleaveFit const fit = interleave_fit(p, why);
      if (!fit.width) return std::nullopt;
      c.width = fit.width;
      c.pack = fit.pack;
      c.channels = int(interleave_channels(p, fit.pack));
      // A block takes up to 256 * K pixels of one matrix. Like the tile kernels, it runs only
      // where its blocks are at least a quarter full: a batch of 2.2M matrices of 4 pixels (the
      // sweep's expanded (2, 2234417, 4) bfloat16 permute) ran at 0.001 of clone, ATen's copy
      // at 0.76.
      int64_t const pixels = c.pack ? p.cols : p.rows, block = 256 * std::max(16 / p.element_size, 1);
      if (pixels < kMinTileFill * block)
        return *why = "fewer than a quarter block of pixels (" + std::to_string(block / 4) + ") per matrix", std::nullopt;
      // Aligned vector mode alone (the realigned and element modes load otherwise).
      c.problem->keep_inputs = interleave_runs_aligned_vectors(p, c.width, c.pack) && keeps_inputs(p, c.width, device);
      return c;
    }
    case Kernel::Split: {
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      if (!(c.split = split_short_sides(p))) return *why = "no short side, or no dim to add to it", std::nullopt;
      if (!(c.width = split_width(*c.split))) return *why = "m or n is not unit-stride", std::nullopt;
      // Whether split runs is the square tile's to say, as the tuning tables timed it; then it
      // takes its shape (split_shape). Split shapes that fill less than that still run by name.
      c.shape = shape.value_or(TileShape::Square);
      if (!contains(kTileShapes, c.shape))
        return *why = std::string("the split kernel has no ") + tile_shape_name(c.shape) + " tile", std::nullopt;
      if (split_fill(*c.split, c.width, c.shape) < kMinTileFill)
        return *why = std::string("its ") + tile_shape_name(c.shape) + " tiles would be less than a quarter full",
               std::nullopt;
      if (!shape) c.shape = split_shape(*c.split, c.width);
      // launch_split reads the SplitProblem's copy of the problem; explain reads c.problem.
      c.split->problem.keep_inputs = c.problem->keep_inputs = keeps_inputs(p, c.width, device);
      return c;
    }
    case Kernel::Padded:
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      c.problem->m_first = walk_m_first(p, seed_tile(p.element_size));
      return c;
    case Kernel::Realign: {
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      if (p.col_stride != 1 || p.out_row_stride != 1) return *why = "m or n is not unit-stride", std::nullopt;
      if (p.element_size > 8) return *why = "16-byte elements are whole vectors already", std::nullopt;
      TileDims const t = realign_tile(p.element_size);
      if (tile_fill(p.rows, p.cols, t) <= kMinTileFill) return *why = "its tiles would be a quarter full or less", std::nullopt;
      c.problem->m_first = walk_m_first(p, t);
      return c;
    }
    case Kernel::Tma: {
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      if (!tma_fits(p, device, why)) return std::nullopt;
      // Vectorized loads of two or more elements (or whole 8- and 16-byte ones), else scalar.
      c.width = tile_width(p);
      if (c.width < 2 * p.element_size && !(p.element_size >= 8 && c.width == p.element_size)) c.width = 0;
      c.problem->keep_inputs = keeps_inputs(p, c.width, device);
      return c;
    }
    case Kernel::Pipelined:
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      if (!pipelined_fits(p, device, why)) return std::nullopt;
      c.width = 16;
      c.problem->keep_inputs = keeps_inputs(p, c.width, device);  // through the TMA loads' cache hint
      return c;
    case Kernel::Lean: {
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      c.shape = shape ? *shape : lean_shape(p, plan.elements);
      if (!contains(kLeanShapes, c.shape))
        return *why = std::string("the lean kernel has no ") + tile_shape_name(c.shape) + " tile", std::nullopt;
      TileDims const t = lean_tile(p.element_size, c.shape);
      if (!small_grid_fits(p, t, why)) return std::nullopt;
      c.width = lean_width(p, true);
      c.out_width = lean_width(p, false);
      c.problem->keep_inputs = keeps_inputs(p, c.width, device);
      c.problem->m_first = long_side_first(p, t, device) || kept_m_first(p, t, device);
      return c;
    }
    case Kernel::Words: {
      if (plan.copy_route()) return *why = "the copy route has no transpose", std::nullopt;
      if (p.element_size > 2) return *why = "elements of 4 bytes or more fill whole words already", std::nullopt;
      if (p.col_stride != 1 && p.cols != 1) return *why = "the words kernel reads unit-stride input rows", std::nullopt;
      // Narrow tiles (128 x 32): on an H200 they ran 1.19-1.34 x as fast as square ones (128 x 64)
      // on 2-D and random transposes under 16 MB, 1.08-1.13 x on larger ones (docs/PERFORMANCE.md,
      // "Words: 1- and 2-byte elements off the grid"). Square ones run by name.
      c.shape = shape.value_or(TileShape::Narrow);
      if (!contains(kWordsShapes, c.shape))
        return *why = std::string("the words kernel has no ") + tile_shape_name(c.shape) + " tile", std::nullopt;
      TileDims const tile = words_tile(p.element_size, c.shape);
      if (!small_grid_fits(p, tile, why)) return std::nullopt;
      // The tile kernels' walk (walk_m_first): m-tiles first where the output's runs split
      // sectors. On an H200, uint8 (497, 1252, 400) permuted (1, 2, 0) -- four m-tiles, each a
      // 128-byte piece of every 497-byte output row -- ran at 0.28 of clone n-tiles first, 0.42
      // m-tiles first (padded 0.39). Walking m-tiles first puts the n-tiles in blockIdx.y, which
      // holds 65535 (cuda/small_grid.cuh): a matrix of more n-tiles (uint8 6 x 13171981, whose
      // words grid could not launch) walks its n-tiles first.
      c.problem->m_first = walk_m_first(p, tile) && tiles_n(p, tile) <= kMaxGridYZ;
      return c;
    }
    default:  // the seed ladder takes any strides
      if (!plan.copy_route()) c.problem->m_first = walk_m_first(p, seed_tile(p.element_size));
      return c;
  }
}

// Where the chooser does not offer a kernel that could run the plan:
//
// The padded seed kernel's tiles are (64, 128 bytes) over (m, n) (SeedTile, cuda/tiling.cuh); on
// tiles less than a quarter full it loses to ATen's copy: the sweep's stepped (787, 5443, 2)
// float64 views, permuted (1, 2, 0), filled 12% of them (n is the 2-element dim) and ran at 0.23
// of clone, ATen's copy at 0.55. Leave-one-out over the three H100 tuning grids (before they
// were re-timed), with padded refused on such shapes: the pick reaches 0.922 of the best kernel
// (0.920 without), 294 of 7725 shapes slower than ATen's copy by more than 5% (299).
//
// The interleave kernel one element per access moves 256 * K pixels a block; on a grid of fewer
// than kMinElementBlocks blocks it leaves SMs idle. Over the H100 tuning grids it ran at 0.61 x
// ATen's copy's speed (geomean, 27 shapes) on grids of 66-132 blocks, 0.86 x on 132-264 (74),
// and 1.25 x on larger ones (932); its vector mode at 1.37-1.5 x on all of them.
constexpr int64_t kMinElementBlocks = 264;

// The realign kernel (cuda/realign.cu) on a grid of fewer than kMinRealignTiles tiles (about one
// wave of its blocks on the H100, 5-6 per SM) leaves its load and store phases little to overlap.
// Over the H100 tuning grids, against the best other kernel of each shape (geomean), it ran at
// 0.49-0.59 x on grids of up to 264 tiles (130 shapes, best on none), 0.66 x on 264-660 (186,
// best on 5) and 0.70-0.75 x on larger ones (881, best on 94); the matrix table's 1000 x 3001
// bfloat16 (192 tiles) ran it at 0.78 of clone where `padded` runs 0.87.
constexpr int64_t kMinRealignTiles = 660;

// Its tiles are cut along m' = m + d_n, d_n < V = 16 / E: V - 1 more rows than the matrix has
// (none where the output's rows are aligned).
int64_t realign_tiles(Problem const& p) {
  Problem along_m = p;
  if (!output_rows_aligned(p)) along_m.rows += 16 / p.element_size - 1;
  return tile_count(along_m, realign_tile(p.element_size));
}

// The lean choice's tiles are at least kLeanFill full: where they are not, offered() refuses it.
bool lean_tiles_half_full(Choice const& c) {
  Problem const& p = *c.problem;
  return tile_fill(p.rows, p.cols, lean_tile(p.element_size, c.shape)) >= kLeanFill;
}

// Skipping the gaps between pixels (element_skips_gaps, work.h) on a broadcast input (some dim
// of two or more elements read with stride 0), the interleave kernel ran at 0.66 x ATen's copy's
// speed over the H100 tuning grids (geomean, 125 shapes; slower on 93), and at 0.54 of clone on
// the sweep's (6109111, 5) bfloat16 pixels expanded from one, where ATen's copy ran 0.99.
bool broadcast(Problem const& p) {
  return (p.rows > 1 && p.row_stride == 0) || (p.cols > 1 && p.col_stride == 0) || batch_in_stride(p.batch, 0);
}

bool offered(Choice const& c, std::string* why) {
  auto refuse = [&](std::string const& reason) {
    if (why) *why = reason;
    return false;
  };
  if (!is_candidate(c.kernel)) return refuse("not a candidate of the chooser");
  if (!c.problem) return true;
  Problem const& p = *c.problem;
  if (c.kernel == Kernel::Padded && tile_fill(p.rows, p.cols, seed_tile(p.element_size)) < kMinTileFill)
    return refuse("its tiles would be less than a quarter full");
  if (c.kernel == Kernel::Lean && !lean_tiles_half_full(c))
    return refuse("its tiles would be less than half full");
  if (c.kernel == Kernel::Lean && tile_takes_larger_tiles(p))
    return refuse("the tile kernel's large tiles run this work (" + std::to_string(kLargeTiles) +
                  " or more of them; on an H200, its wide tiles)");
  if (c.kernel == Kernel::Realign && realign_tiles(p) < kMinRealignTiles)
    return refuse("fewer than " + std::to_string(kMinRealignTiles) + " tiles");
  if (c.kernel == Kernel::Interleave && c.width == p.element_size) {
    int const E = p.element_size;
    int64_t const pixels = c.pack ? p.cols : p.rows, pixel_stride = pixel_stride_of(p, c.pack);
    int64_t const run = element_run_channels(c.channels, pixel_stride, E, c.pack);  // C, or S (gaps read)
    int64_t const block = 256 * element_pixels_per_lane(int(run), E);
    if (p.batch.count * ((pixels + block - 1) / block) < kMinElementBlocks)
      return refuse("one element per access on fewer than " + std::to_string(kMinElementBlocks) + " blocks");
    if (element_skips_gaps(c.channels, pixel_stride, E, c.pack) && broadcast(p))
      return refuse("skipping the gaps between pixels of a broadcast input");
  }
  return true;
}

// Where the split kernel's sides chain (split_width), it moves 16-byte vectors on shapes that
// the tuning tables timed it on one element or 4 bytes at a time, so their rankings put it
// last. There it runs instead of the table's pick when it fills the tiles it takes
// (split_shape) at least half (kChainedSplitFill; 90% for 8-byte elements, vectors of 2, that
// the table gives to gather), on an input with no broadcast dim, unless the pick is the lean
// kernel. Measured on an H200 (docs/PERFORMANCE.md, "Split sides that chain", "Split tiles:
// tall and wide"):
// - over the 436 shapes of the committed results whose split width chaining widens, the rule
//   takes 90: split ran faster than the table's pick on 89 (geomean 2.22 x), 0.99 x on one;
// - over a grid drawn afresh (seed 20261128) of 96 shapes it takes: faster on 84 (geomean
//   1.82 x), behind by 5-36% on 6: float32 (41, 70, 4, 6, 58) permuted (0, 3, 1, 4, 2) ran 0.64
//   of clone against gather's 0.99;
// - where the table picks lean (30 shapes of the two sets; left out after the second), split
//   ran faster on 22 but as low as 0.76 x; broadcast inputs (expanded views, where gather's
//   reads of a small footprint won 15 of 53 against split) keep the pick, and so did emptier
//   square tiles (float32 (8, 3, 168672, 15) permuted (2, 1, 3, 0), 38% full: split 0.52,
//   gather 0.92) until split took wide tiles there (below);
// - 8-byte elements with tiles 50-90% full, first held at 90%: on a grid drawn afresh (seed
//   20261129, 80 shapes) split ran 1.23 x the pick, but 1.04 x where that was gather (5 of 12
//   more than 5% slower); without gather's, on another (seed 20261130, 187 shapes) 1.42 x,
//   faster on 150, more than 5% slower on 17 (down to 0.75 x), 1.62 x ATen's copy;
// - with tall or wide tiles where those fill better than square ones (split_shape), the rule
//   takes 13 more shapes of the committed results (1.51 x the pick; behind on two: float64
//   (27, 53, 10, 49, 64) permuted (4, 1, 0, 3, 2) 0.81 x gather, and the float32 (8, 3, 168672,
//   15) above, in wide tiles 75% full, 0.96 x) and 8 of two fresh grids (3.04 x).
constexpr double kChainedSplitFill = 0.5, kChainedSplitFullFill = 0.9;

std::optional<Choice> chained_split(Plan const& plan, Choice const& pick, Device const& device) {
  if (pick.kernel == Kernel::Split || pick.kernel == Kernel::Lean || plan.element_size > 8 || broadcast_input(plan))
    return std::nullopt;
  std::optional<Choice> split = force(plan, Kernel::Split, device, nullptr);
  if (!split || split->width != 16 || split_width(*split->split, false) == 16) return std::nullopt;
  double const fill = plan.element_size == 8 && pick.kernel == Kernel::Gather ? kChainedSplitFullFill : kChainedSplitFill;
  return split_fill(*split->split, 16, split->shape) >= fill ? split : std::nullopt;
}

// The bytes a broadcast input holds: its element size times the sizes of the dims it does
// not read with stride 0.
int64_t distinct_input_bytes(Plan const& plan) {
  int64_t bytes = plan.element_size;
  for (int i = 0; i < plan.rank; ++i)
    if (plan.dims[i].in != 0) bytes *= plan.dims[i].size;
  return bytes;
}

// A broadcast input of a dtype of up to 4 bytes whose distinct bytes fit in kGatherFootprint
// (a fraction of one SM's L1) runs `gather` where the table picks ATen's copy: loads hit the
// cache, and gather's 16-byte stores (ATen's copy stores one element of the dtype at a time)
// set the pace. The broadcast classes pool such inputs with ones of megabytes, where the two
// kernels trade wins, so their rankings keep ATen's copy. Over the tuning grids' broadcast
// transposes beyond small work that the table runs on ATen's copy, the 52 shapes of 1-4-byte
// elements under 64 KiB ran gather at 1.27 x ATen's copy (geomean), 3 more than 5% slower;
// from 64 KiB to 256 KiB, 30 shapes at 1.15 x with 7 slower; 8- and 16-byte dtypes under 64
// KiB, whose stores ATen's copy already makes 8 or 16 bytes wide, 0.92 x and 0.76 x (160
// shapes, 119 slower). Measured on an H200 (docs/PERFORMANCE.md, "Broadcast inputs that fit in
// the cache"), on grids drawn afresh (one or two expanded dims, 2^20-2^27 elements):
// - seeds 20261129-30: the rule takes 210 shapes, gather 1.01 of clone against ATen's copy's
//   0.67 (1.49 x), faster on 203, more than 5% slower on 3 (the worst bfloat16 (196440, 7, 3)
//   expanded in dim 0, permuted (0, 2, 1): 0.83 x); beyond 64 KiB, 96 shapes of 1-4-byte plan
//   elements ran it at 1.17 x, 22 slower (down to 0.45 x);
// - the rule first asked for plan elements of up to 4 bytes; it was widened to the dtype's
//   size for the 27 shapes of those grids whose 1-4-byte dtypes the planner merges into 8- or
//   16-byte elements (1.88 x, none slower), and checked on a grid of such shapes alone (seed
//   20261131): 80 shapes at 2.18 x (1.47 of clone against 0.67), none under 1.11 x.
constexpr int64_t kGatherFootprint = int64_t(64) << 10;

// The tensor's own element size; the plan's is wider where the planner merged an innermost dim.
int64_t tensor_element_size(Plan const& plan) {
  return plan.elements > 0 ? plan.element_size * plan.numel() / plan.elements : plan.element_size;
}

// On a GPU whose rule sends narrow row copies to gather (Device::rows_gather, gather_takes_rows),
// the row copies that the table gives ATen's copy (its copy classes were ranked before gather
// ran them), from an input with no broadcast dim, in output rows of 16 bytes or more, run
// gather too. Measured on an H200 (the pick, gather, split and box forced by name,
// bit-checked, the better of two rounds beside clone; docs/PERFORMANCE.md, "Row copies the
// table gives ATen's copy"): on a grid of 150 random permutes of ranks 3-6 that the H200 sent to
// ATen's copy (seed 201; 2^20-2^25 elements of 1-8 bytes, a quarter offset, a quarter stepped),
// gather ran the 40 row copies 1.46 x as fast, more than 5% slower on one, in rows of 11 bytes
// (0.63 x); the 31 in rows of 16 bytes or more 1.54 x, all 1.05 x or better. Held out (seed
// 202): 38 such row copies at 1.50 x, 0.607 -> 0.912 of clone, none slower than 0.975 x; with
// rows under 16 bytes counted too, three of the 8 such ran 0.55-0.68 x. With the rule built in,
// 50 larger row copies it moves (seed 203; 2^23-2^28 elements, 16-353 us of copy) ran 1.82 x,
// 0.357 -> 0.650 of clone, every one faster (1.18-3.13 x). On the transposes of the first two
// grids gather ran 1.01 x and 1.06 x ATen's copy, either way by up to 2.5 x: they stay with it
// (8-byte ones whose reads ATen's copy scatters excepted: split_takes_scattered_aten).
bool gather_takes_aten_rows(Plan const& plan, Choice const& c, Device const& device) {
  return device.rows_gather && c.kernel == Kernel::Aten && plan.copy_route() && !broadcast_input(plan) &&
         plan.dims[plan.m].size * plan.element_size >= 16;
}

// ATen's copy walks the output in order, each thread loading one element from wherever the
// input holds it. Input elements that share a 32-byte sector lie along the dims the input reads
// with strides under 32 bytes; where each of those dims lies kScatteredReach or more elements
// apart in the output, loads issued near each other in time never share a sector, and every
// 8-byte element costs one (the reach was set on the design grid below, where 128 to 1024
// separated the shapes alike). On every sm_90 GPU (Device::scattered_aten_split), such
// transposes of 8-byte elements that the table gives ATen's copy run the split kernel, which
// reads whole tile rows. Measured on an H200 (ATen's copy and split forced by name,
// bit-checked, the better of two rounds beside clone; docs/PERFORMANCE.md, "Transposes whose
// reads ATen's copy scatters"), on random permutes of ranks 3-6 that the table sent to ATen's
// copy where split is offered (a third of them offset by one index along dim 0):
// - design (seeds 204-205, 120 float64 shapes of 2^20-2^27 elements): split ran 1.23 x and
//   1.66 x ATen's copy, 14 shapes under 0.9 x; the 59 with scattered reads 1.84 x (none under
//   0.91 x), the other 61 1.02 x;
// - held out (seed 206, rule built in): 46 float64 shapes 1.57 x, 0.496 -> 0.776 of clone, none
//   under 0.91 x, 4 under 0.95 x (13-93 us); against eager, 6 below (as low as 0.87 x, a 14 us
//   shape). Other dtypes with scattered reads (seed 207) did not gain: bfloat16 0.94 x and
//   float32 0.99 x (10 and 7 shapes, down to 0.56 x), uint8 1.35 x with 5 of 19 under 0.9 x;
// - larger shapes it moves (seeds 208-209, 2^22-2^28 elements, 24-953 us): 40 float64, 15
//   complex64 and 5 int64 at 1.85 x, 0.412 -> 0.761 of clone, 2.22 x over the 29 of 100 us or
//   more; three ran slower, 0.82 x (float64 (177, 81, 5, 28, 21, 6) permuted (0, 1, 5, 3, 2, 4),
//   946 us), 0.87 x and 0.89 x.
// On an H100, with the rule as the H200 set it (docs/PERFORMANCE.md, "Two H200 rules on the
// H100"; the 35 shapes the rule moves among the sweep's random families drawn from seeds
// 330-339, 12-532 us of copy): split 1.76 x ATen's copy (0.87-6.15 x), 0.522 -> 0.917 of clone
// (eager 0.522), one more than 5% slower ((523, 967, 29, 4) float64 permuted (1, 3, 0, 2),
// 0.885 -> 0.771).
constexpr int64_t kScatteredReach = 512;

// The least output stride over the dims the input reads with a stride under one sector, but
// `skip` (INT64_MAX where there are none): how near in the output elements that share a sector lie.
// `stepped`: only over the dims the input steps along (a broadcast dim's elements share one
// address, so its stride of 0 says nothing of its neighbours' sectors).
int64_t sector_neighbour_reach(Plan const& plan, int skip = -1, bool stepped = false) {
  int64_t reach = INT64_MAX;
  for (int i = 0; i < plan.rank; ++i)
    if (i != skip && plan.dims[i].in * plan.element_size < kSectorBytes && !(stepped && plan.dims[i].in == 0))
      reach = std::min(reach, plan.dims[i].out);
  return reach;
}

// Whether every dim the input reads with a stride under one sector lies `reach` or more elements
// apart in the output: then loads of elements near each other in the output share no sector.
bool reads_scattered(Plan const& plan, int64_t reach) { return sector_neighbour_reach(plan) >= reach; }

std::optional<Choice> split_takes_scattered_aten(Plan const& plan, Choice const& c, Device const& device) {
  if (!device.scattered_aten_split || c.kernel != Kernel::Aten || plan.copy_route() || plan.element_size != 8 ||
      tensor_element_size(plan) != 8 || broadcast_input(plan) || !reads_scattered(plan, kScatteredReach))
    return std::nullopt;
  return force(plan, Kernel::Split, device, nullptr);
}

// `gather` loads each element on its own, and a block's loads come from a window of 8192
// consecutive output elements (256 threads, 32 elements each for 1- and 2-byte elements). Where
// the dims that share a sector lie kScatteredGatherReach or more elements apart in the output,
// no two loads of that window share a sector: every element costs one, 32 bytes read for 1-16
// used, and the sectors come back for the elements they also hold only after the window has
// moved on, from L2 or, for inputs larger than it, from memory. The split kernel reads whole
// tile rows instead. On every sm_90 GPU (Device::scattered_gather_split), transposes the
// table gives gather whose reads are scattered so run the split kernel where it is offered.
// Measured on an H200 (gather, split, ATen's copy forced by name, bit-checked, the better of
// two rounds beside clone; docs/PERFORMANCE.md, "Gather picks whose reads share no sector"):
// - design: over three grids of random permutes (seed 240: 154 gather picks of 2^19-2^25
//   elements; seeds 241-242: 2^25-2^28 and 2^14-2^20 elements), the 13 such picks that split
//   can run ran 1.48 x as fast in split (1.00-2.75 x: bfloat16 (276, 2, 109, 10, 350)
//   permuted (2, 4, 1, 0, 3), 0.115 -> 0.318 of clone), none slower; at a reach of 1024
//   elements one more ran 0.68 x, at 768 three more down to 0.29 x, and the other 44 gather
//   picks split can run 0.44 x;
// - the first form, without a size bound, on 80 shapes it moved (seed 244, 2^20-2^28
//   elements): 1.44 x, but 20 more than 5% slower; 56 outputs of kScatteredGatherBytes or more
//   1.76 x (3 slower), the 24 under it 0.91 x (17 slower), where the L2 cache holds both sides
//   and gather's repeated sectors come back from it. Bounded by the output's bytes (not the
//   input's distinct bytes: broadcast inputs of 1 MiB ran 1.92 x in split into 500 MiB);
// - held out, the rule as kept (seed 245, 70 shapes it moves, 31-3091 us): 1.74 x (0.89-6.36
//   x), 0.189 -> 0.329 of clone (eager 0.197), 4 more than 5% slower; behind eager by more
//   than 5% on 8, where gather was on 22.
// The gather that gather_takes_gapped_packs gives 1-byte planes (packed one element per access
// skipping gaps) takes this rule too, and at any size (min_bytes 0): each element is one byte
// of its own sector, and split ran faster under 16 MiB as well. Over shapes of that rule whose
// reads are scattered (uint8, gather and split forced by name):
// - design (seed 250, 53 shapes split can run, 2^20-2^28 elements): 1.67 x gather, none more
//   than 5% slower (1.28 x over the 8 under 16 MiB);
// - held out, 16 MiB or more (seed 251, 47 shapes, 29-1686 us): 1.66 x (0.78-5.2 x), 0.087 ->
//   0.145 of clone (eager 0.085), one more than 5% slower; behind eager by more than 5% on
//   none, where gather was on 2;
// - under 16 MiB (seed 252, 47 shapes): 1.44 x, 2 more than 5% slower; held out for the bound's
//   removal (seed 255, 46 shapes, 19-103 us): 1.42 x (0.95-3.76 x), 0.170 -> 0.241 of clone
//   (eager 0.164), none more than 5% slower, behind eager by more than 5% on none where gather
//   was on 9. Those whose reads are not scattered (seed 254, 24 of 16 MiB or more) ran 0.88 x
//   in split, 11 more than 5% slower: they keep gather.
// 1- and 2-byte elements gain from kScatteredNarrowGatherBytes up: each sector holds 16-32 of
// them, and the L2 cache's sector rate binds before its size does. Over the table's gather picks
// of 1- and 2-byte elements with scattered reads that split can run, outputs under 16 MiB:
// - design (seed 313, 40 shapes, 1-15 MiB): 1.03 x in split, 17 more than 5% slower; 1.25 x
//   over the 23 of 6 MiB or more (3 slower), 0.79 x over the 17 under it (14 slower). 4- to
//   16-byte elements (seed 315, 30 shapes) ran 0.90 x: they keep the 16 MiB bound;
// - held out (seed 314, 40 shapes, 8-16 us of copy): the 18 of 6 MiB or more 1.34 x (0.89-1.93 x),
//   0.278 -> 0.372 of clone (eager 0.277), 2 more than 5% slower; the 22 under it 0.87 x.
// On an H100, with the rule as the H200 set it (docs/PERFORMANCE.md, "Two H200 rules on the
// H100"; gather and split forced by name, bit-checked, the better of two rounds beside clone),
// over the table's gather picks it moves among the sweep's random families drawn from seeds
// 330-337 and 340-347 (103 and 112 shapes, 12-485 us of copy): split 1.74 x and 1.55 x gather,
// 0.171 -> 0.297 and 0.209 -> 0.325 of clone (eager 0.176 and 0.217), 6 more than 5% slower in
// each; behind eager by more than 5% on 11 and 8, where gather was on 34 and 52.
constexpr int64_t kScatteredGatherReach = 2048, kScatteredGatherBytes = int64_t(16) << 20,
                  kScatteredNarrowGatherBytes = int64_t(6) << 20;

// `any_size`: the gapped-pack rule's gather, which gains from split at every size.
std::optional<Choice> split_takes_scattered_gather(Plan const& plan, Choice const& c, Device const& device,
                                                   bool any_size = false) {
  int64_t const min_bytes = any_size ? 0
                            : tensor_element_size(plan) <= 2 ? kScatteredNarrowGatherBytes
                                                             : kScatteredGatherBytes;
  if (!device.scattered_gather_split || c.kernel != Kernel::Gather || plan.copy_route() ||
      plan.numel() * plan.element_size < min_bytes || !reads_scattered(plan, kScatteredGatherReach))
    return std::nullopt;
  return force(plan, Kernel::Split, device, nullptr);
}

// Where the table picks the tile kernel for 4-byte elements one per access (4-byte vectors: rows
// off the 16-byte grid; in random permutes only the class .o2.i3, output rows of 16-63
// elements), the tile kernel ran at 0.35-0.72 of clone on an H200, eager at 0.41-0.99. Where
// gather's reads would be scattered (the input's dims within one sector lie
// kScatteredGatherReach or more elements apart in the output), the lean kernel ran fastest, in
// its own tile shape though its tiles there are under half full (the table ranks lean first for
// the class; the fill check passes it over); where they lie nearer (the input's rows are the
// output's second dim, or next to it), gather's window of output rows shares their sectors and
// gather ran fastest. On a GPU whose rule it is (Device::element_tiles_give_way), those kernels
// take them (lean where it can run: three batch dims or fewer). Measured on an H200
// (docs/PERFORMANCE.md, "4-byte tile picks one element per access"; the pick and the others
// forced by name, bit-checked, the better of two rounds beside clone):
// - design (seed 319, 19 float32 and int32 such picks, 2^19-2^23 elements, 10-23 us of copy):
//   over the 17 lean can run, lean 1.60 x tile (1.35-2.16 x, none slower) and gather 1.53 x;
//   lean 1.22-1.82 x gather over the 7 whose reads are scattered, gather 1.23-1.45 x lean over
//   the 9 at reach 180 or less (and 0.96 x at 289); ATen's copy 1.41 x tile, split 0.88 x.
// On an H100 (docs/PERFORMANCE.md, "Six more H200 rules on the H100"; 25 fresh float32 shapes it
// moves, 17 to gather, 8 to lean, 16-157 us): 1.94 x (1.03-2.98 x), 0.367 -> 0.711 of clone (eager
// 0.490); behind eager by more than 5% on 1, where the tile kernel was on 18.
std::optional<Choice> element_tiles_give_way(Plan const& plan, Choice const& pick, Device const& device) {
  if (!device.element_tiles_give_way || pick.kernel != Kernel::Tile || plan.element_size != 4 || pick.width != 4)
    return std::nullopt;
  if (!reads_scattered(plan, kScatteredGatherReach)) return force(plan, Kernel::Gather, device, nullptr);
  auto lean = force(plan, Kernel::Lean, device, nullptr);
  if (!lean || !lean->problem) return std::nullopt;
  return lean;
}

// gather's threads each load V = 16 / E consecutive output elements, so one load instruction of
// a warp reads the elements V apart in the output, one per lane; ATen's copy reads 32 consecutive
// ones. Where lanes of gather's loads share 32-byte sectors, a warp's load is served by fewer
// sector reads than it has lanes, and gather's 16-byte stores and division-free steps set it
// ahead of ATen's copy, which divides every element's index through every dim and stores one
// element per access; where every lane reads a sector of its own, either may win. The share of
// distinct sectors per lane in gather's first load at two points of the output (its start and
// its middle), from the input offsets of the elements there (relative to the input's start):
double gather_sectors_per_lane(Plan const& plan) {
  constexpr int kLanes = 32;
  int64_t const v = 16 / plan.element_size, total = plan.numel(), span = kLanes * v;
  if (total < span) return 1.0;
  int distinct = 0, lanes = 0;
  for (int64_t const start : {int64_t(0), total / 2 / span * span}) {
    // The coordinates of `start` in the output's order (dims[rank - 1] innermost), then each
    // next lane V elements on, carried outward like an odometer.
    int64_t coord[kMaxDims] = {}, rest = start, sector[kLanes];
    for (int d = plan.rank - 1; d >= 0; --d) coord[d] = rest % plan.dims[d].size, rest /= plan.dims[d].size;
    for (int lane = 0; lane < kLanes; ++lane) {
      int64_t offset = 0;
      for (int d = 0; d < plan.rank; ++d) offset += coord[d] * plan.dims[d].in;
      sector[lane] = offset * plan.element_size / kSectorBytes;
      coord[plan.rank - 1] += v;
      for (int d = plan.rank - 1; d > 0 && coord[d] >= plan.dims[d].size; --d)
        coord[d - 1] += coord[d] / plan.dims[d].size, coord[d] %= plan.dims[d].size;
    }
    std::sort(sector, sector + kLanes);
    distinct += int(std::unique(sector, sector + kLanes) - sector);
    lanes += kLanes;
  }
  return double(distinct) / lanes;
}

// On a GPU whose rule it is (Device::shared_sector_gather), transposes of elements of up to 4
// bytes that the table gives ATen's copy run gather where its lanes share sectors: under
// kGatherSectorsPerLane distinct sectors per lane. Measured on an H200 (docs/PERFORMANCE.md,
// "ATen's copy picks whose gather lanes share sectors"; the pick and the others forced by name,
// bit-checked, the better of two rounds beside clone), on random permutes of ranks 3-6 that the
// table gives ATen's copy, contiguous or offset by 1-3 along one dim:
// - design (seed 401, 130 shapes of 4-128 MiB, uint8, bfloat16, float32, float64, where split,
//   lean or box can run): gather fastest of all kernels on 78, 1.12 x ATen's copy over all 130
//   but 24 more than 5% slower. Over the 114 of up to 4 bytes, the 45 under 0.9 sectors per lane
//   1.41 x (0.79-3.4 x), one more than 5% slower; the other 69 0.99 x, 23 slower;
// - the H200's tuning runs and three sweep runs (the table's ATen's copy picks of up to 4 bytes
//   with both timed, 148 shapes of 1-1000 MiB, read after the rule was drawn): the 38 under 0.9
//   sectors per lane 1.43 x, 3 more than 5% slower (float32 (2, 2854, 52, 16) permuted
//   (1, 3, 0, 2), 0.82 x; 1- and 2-MiB uint8 shapes, 0.85 x and 0.93 x); the other 110 0.94 x;
// - held out, the rule built in (seeds 402 and 403, 60 shapes it moves each, 1-490 MiB, uint8,
//   float16, bfloat16 and float32, contiguous, offset, stepped or broadcast): 1.40 x and 1.41 x
//   (0.92-2.64 x, 0.88-3.56 x), 0.490 -> 0.685 and 0.574 -> 0.808 of clone (eager 0.492, 0.574),
//   2 and 1 more than 5% slower; 1.26 x over the 13 under 4 MiB, none slower.
// On an H100 (docs/PERFORMANCE.md, "Six more H200 rules on the H100"): over the H100's saved
// timings (tuning runs, the autotuner's in its sweeps) the rule moves 175 shapes, 1.34 x, 5 more
// than 5% slower (down to 0.37 x: uint8 (13, 494784) transposed, which timed again ran 1.09 x,
// gather the fastest kernel there and on 14 like it); on 25 fresh shapes it moves (9-115 us) 1.40 x
// (1.00-2.34 x), 0.485 -> 0.679 of clone (eager 0.485).
constexpr double kGatherSectorsPerLane = 0.9;

std::optional<Choice> gather_takes_shared_sectors(Plan const& plan, Choice const& c, Device const& device) {
  if (!device.shared_sector_gather || c.kernel != Kernel::Aten || plan.copy_route() || plan.element_size > 4 ||
      gather_sectors_per_lane(plan) >= kGatherSectorsPerLane)
    return std::nullopt;
  return force(plan, Kernel::Gather, device, nullptr);
}

// Row copies of 4-byte elements in runs under 16 bytes (one to three elements, class
// c.e4.o0): gather loads each element on its own with lanes on 16-byte vectors, so each of its
// load instructions touches a run, and a sector, per lane; ATen's copy has its lanes on
// consecutive elements, a few runs per instruction. Where the input's other dims within one
// sector (the data beside each run) lie kFarRunReuse or more elements apart in the output, the
// sectors a run leaves come back only long after; on a GPU whose rule it is
// (Device::far_short_runs_aten) such copies run ATen's copy. Measured on an H200 (gather and
// ATen's copy forced by name, bit-checked, the better of two rounds beside clone;
// docs/PERFORMANCE.md, "Short runs whose neighbours come back late"):
// - design (seeds 260 and 262: 22 such gather picks, not broadcast): the 10 whose neighbours lie
//   16344 or more elements apart ran 1.16 x as fast in ATen's copy, 1.14-1.35 x but for two (0.83
//   x and 0.91 x); the 12 at 5898 or less 0.77-0.99 x;
// - held out (seed 263, 40 shapes it moves, 8-980 us): 1.14 x (0.92-1.46 x), 0.474 -> 0.541 of
//   clone (eager 0.539), 3 more than 5% slower; behind eager by more than 5% on none, where
//   gather was on 28. On 20 such copies it leaves on gather (seed 264), gather ran 1.20 x ATen's
//   copy, ahead on 16.
// A layout of gather with its lanes on consecutive elements, as ATen's copy, ran slower than
// ATen's copy on every grid (0.74-0.85 x): the sectors per instruction are not what limits these.
constexpr int64_t kFarRunReuse = 8192;

std::optional<Choice> aten_takes_far_short_runs(Plan const& plan, Choice const& c, Device const& device) {
  if (!device.far_short_runs_aten || c.kernel != Kernel::Gather || !plan.copy_route() || plan.element_size != 4 ||
      tensor_element_size(plan) != 4 || broadcast_input(plan) || plan.dims[plan.m].size * plan.element_size >= 16 ||
      sector_neighbour_reach(plan, /*skip=*/plan.m) < kFarRunReuse)
    return std::nullopt;
  return force(plan, Kernel::Aten, device, nullptr);
}

// Split tiles whose output side stays short: a transpose whose output rows are m's inner dim of
// a few elements ((C, N, K) complex128 views permuted (1, 2, 0), written as (N, K, C), say)
// gives the split kernel's m side a second dim, and where the two chain into one output run of
// still fewer than kSplitBelow elements, against an input side of one dim read contiguously
// whose output stride is that run (the input's long rows land side by side in the output), the
// tiles are that run tall. Moved one element per access (width = element size: 16-byte
// elements, or 8-byte ones whose rows lie off the 16-byte grid) in tiles under kShortSplitFill
// full, the split kernel loses to gather, which stores the output's runs in 16-byte vectors and
// loads each element on its own from the input's rows. On a GPU whose rule it is
// (Device::short_split_gather), such split picks run gather. Measured on an H200 (split, gather
// and ATen's copy forced by name, bit-checked, the better of two rounds beside clone;
// docs/PERFORMANCE.md, "Short split tiles in gather"):
// - design (seeds 280, 282, 284: 128 split picks, 59 with an output side of 32 elements or
//   less, and 32 shapes of the (a, N, b) -> (N, b, a) family; the held-out sweep's five
//   complex128 cells): 8-byte elements one per access ran gather 1.12-1.61 x as fast, 16-byte
//   ones in tiles under 80% full 1.00-1.51 x (ATen's copy 0.99-1.56 x); fuller 16-byte tiles ran
//   split faster (gather 0.70-0.90 x), and so did 8-byte elements two per 16-byte vector (0.47-1.07 x);
// - the first form, without the output-stride condition (seed 285, 60 shapes it moved): 1.07 x,
//   20 more than 5% slower, 18 of them where other dims lie between the run and the input's rows
//   in the output (output strides of 99-257580 for runs of 9-100): those 26 ran 0.91 x, the 34
//   with the rows next to the run 1.22 x (2 more than 5% slower, 0.94 x and 0.95 x);
// - held out, the rule as kept (seed 287, 60 shapes it moves, 11-1284 us): 1.24 x (0.98-1.96 x),
//   0.708 -> 0.879 of clone (eager 0.842), none more than 5% slower; behind eager by more than
//   5% on 6, where split was on 47.
constexpr double kShortSplitFill = 0.8;

std::optional<Choice> gather_takes_short_split_rows(Plan const& plan, Choice const& c, Device const& device) {
  if (!device.short_split_gather || c.kernel != Kernel::Split || !c.split || broadcast_input(plan) ||
      (plan.element_size != 8 && plan.element_size != 16) || tensor_element_size(plan) != plan.element_size ||
      c.width != plan.element_size)
    return std::nullopt;
  SplitProblem const& s = *c.split;
  int64_t const run = split_seen(s).rows;  // m's two dims, chained: one output run
  if (!m_side_chains(s) || s.n.size > 1 || run >= kSplitBelow || s.problem.col_stride != 1 ||
      s.problem.out_col_stride != run || split_fill(s, c.width, c.shape) >= kShortSplitFill)
    return std::nullopt;
  return force(plan, Kernel::Gather, device, nullptr);
}

// Of the split picks above that gather takes, those of 16-byte elements over four or more dims
// (after merging: the run's two dims and the input's rows, and one or more beside them) run
// ATen's copy on a GPU whose rule it is (Device::short_split_aten): gather walks every dim for
// each element it loads. Measured on an H200, as above (docs/PERFORMANCE.md, "Short split tiles
// over four dims in ATen's copy"):
// - design (the 16-byte shapes of seeds 284, 285 and 287 that gather takes): ATen's copy ran
//   1.08 x gather over 23 shapes of four or more dims (one more than 5% slower), 0.99 x over 23
//   of three;
// - held out (seed 288, 40 complex128 shapes of four or more dims, 17-448 us of copy): 1.07 x
//   (0.85-1.24 x), 0.831 -> 0.892 of clone (eager 0.893), one more than 5% slower; over three
//   dims (seed 289, 20 shapes) 0.97 x, so those stay with gather.
std::optional<Choice> aten_takes_short_split_rows(Plan const& plan, Choice const& gather, Device const& device) {
  if (!device.short_split_aten || gather.kernel != Kernel::Gather || plan.element_size != 16 || plan.rank < 4)
    return std::nullopt;
  return force(plan, Kernel::Aten, device, nullptr);
}

// Row copies whose runs lie side by side in the input but far apart in the output: the TTC
// suite's (15, 15, 32, 15, 32, 16) float32 permuted (4, 1, 0, 3, 2, 5) copies runs of 64 bytes
// (the innermost dim), and the run beside each one in the input (the next index of dim 4) is
// written 6.9 MB further on, on the walk's next pass over the input: each pass reads 64 bytes of
// every 2 KiB stretch of it. rows ran it at 0.70 of clone. On a GPU whose rule it is
// (Device::runs_together), rows and gather take such copies with their blocks in the
// neighbours-together order (BlockOrder, cuda/index_walk.cuh): the dim that holds the input's
// next run varies fastest over the blocks, so blocks launched together read neighbouring runs
// together. It asks for runs under kTogetherRunBytes, the next run within two runs' length in
// the input, kTogetherReach bytes or more away in the output, and accesses of 8 bytes or more
// (rows in 16-byte vectors, or elements of 8 bytes or more). Measured on an H200 (each kernel
// forced by name in both orders, outputs poisoned and bit-checked, the better of two rounds
// beside clone; docs/PERFORMANCE.md, "Neighbouring runs read together"):
// - design (the sweep's 41 row copies and 60 random ones with runs of 32-256 bytes, seed 270):
//   the 20 the rule takes ran 1.14 x (0.97-1.38 x): the two TTC cells 0.70 -> 0.84 and 0.77 ->
//   0.87 of clone, float64 (5728355, 3, 4) permuted (1, 0, 2) 0.67 -> 0.93. Runs of 17 KiB and
//   more ran 0.85-0.93 x, neighbours under 1 MiB apart 0.92-1.05 x, accesses under 8 bytes
//   (2- and 4-byte elements in narrow vectors) 0.94-1.0 x;
// - held out (seed 271, 60 shapes it takes, 11-926 us): 1.17 x (0.84-1.91 x), 0.748 -> 0.875 of
//   clone (eager 0.701), 5 more than 3% slower (0.96-1.05 x forced by name in the same run);
//   behind eager by more than 5% on 2, where the plain order was on 1. Near misses it leaves
//   (seed 272: runs under 256 bytes, the next run 256 KiB or more on) ran 1.04-1.05 x in the
//   together order, 0.93-1.94 x.
// On an H100 (docs/PERFORMANCE.md, "Six more H200 rules on the H100"; 25 fresh row copies it moves,
// 9-164 us): 1.04 x (0.94-1.18 x), 0.942 -> 0.978 of clone (eager 0.712), one more than 5% slower.
constexpr int64_t kTogetherRunBytes = 256, kTogetherReach = int64_t(1) << 20;

bool has_together_order(Choice const& c) {
  return (c.kernel == Kernel::Rows || c.kernel == Kernel::Gather) && c.problem && c.problem->col_stride == 1 &&
         next_run(*c.problem).size > 1;
}

bool reads_runs_together(Plan const& plan, Choice const& c, Device const& device) {
  if (!device.runs_together || !plan.copy_route() || broadcast_input(plan) || !has_together_order(c) ||
      !(plan.element_size >= 8 || (c.kernel == Kernel::Rows && c.width == 16)))
    return false;
  Problem const& p = *c.problem;  // the run is its N dim; the kernels order blocks by next_run(p)
  Dim const next = next_run(p);
  return p.cols * p.element_size < kTogetherRunBytes && std::abs(next.in) <= 2 * p.cols &&
         next.out * p.element_size >= kTogetherReach;
}

// Box gives way on 2-byte elements (the plan's, after merging: bfloat16, float16, pairs of
// uint8): the H100's timings ranked it first in nine such classes (tiles under 60% full, most
// with runs of one element skipping gaps, ".Ig"), from 3-10 shapes each. On an H200
// (docs/PERFORMANCE.md, "Box on 2-byte elements"), over 400 random permutes (seed 212) the 11
// 2-byte shapes it ran trailed eager (0.81 x) where the next kernel of the ranking ran 1.29 x
// eager; over 88 held-out ones (seed 215: 7-753 us), the next kernel ran 1.53 x box (0.275 ->
// 0.420 of clone, eager 0.347) and trailed eager by more than 5% on 12 where box did on 59; it
// was more than 5% slower than box on 17, as far as 0.29 x (bfloat16 (13, 5, 2, 394, 13, 56)
// permuted (5, 1, 3, 4, 0, 2) in gather).
bool skips_box(Plan const& plan, Kernel k, Device const& device) {
  return device.box_gives_way && k == Kernel::Box && plan.element_size == 2;
}

// Padded gives way to lean on 4- and 8-byte elements where lean's tiles would be under half
// full (kLeanFill): offered() keeps lean from such shapes, so the tables never ranked it there,
// and the padded kernel, one element per access, is what they picked. On an H200
// (docs/PERFORMANCE.md, "Padded picks in lean tiles under half full"), on two grids of random
// permutes (lean's tiles 16-50% full) lean ran 1.07-1.48 x padded on 13 shapes (seeds 212-213)
// and 1.20 x on 66 (seed 216, 0.97-1.74 x); over 100 held-out ones (seed 217: float32, int32,
// float64, complex64, a float16; 8-310 us) 1.19 x (0.95-1.69 x; 0.596 -> 0.710 of clone, eager
// 0.470), and behind eager by more than 5% on 14 where padded was on 29. Where lean's tiles are
// fuller the table ranks both and padded stands (59 shapes of seeds 212-213: lean 0.99 x and
// 1.01 x padded for 4- and 8-byte elements, 19 more than 5% slower in lean); 16-byte elements ran
// slower in lean (0.70-0.80 x). On an H100 (docs/PERFORMANCE.md, "Six more H200 rules on the
// H100"; 25 fresh float32 and float64 shapes it moves, 13-149 us): 1.17 x (1.01-1.47 x), 0.577 ->
// 0.677 of clone (eager 0.359), behind eager by more than 5% on 2 where padded was on 5.
std::optional<Choice> lean_takes_padded(Plan const& plan, Choice const& pick, Device const& device) {
  if (!device.padded_lean || pick.kernel != Kernel::Padded || (plan.element_size != 4 && plan.element_size != 8) ||
      broadcast_input(plan))
    return std::nullopt;
  auto lean = force(plan, Kernel::Lean, device, nullptr);
  if (!lean || !lean->problem || lean_tiles_half_full(*lean)) return std::nullopt;
  return lean;
}

// Padded gives way to lean on 1-byte elements too, on work under kLeanMidWork elements (where
// lean runs its square tile) whose input is not broadcast. Such work takes a few microseconds,
// the time lean's short chain of instructions a thread is built for (cuda/lean_transpose.cu: one
// tile per block, 32-bit offsets), where the padded seed kernel walks 64-bit tile indices. On an
// H200 (docs/PERFORMANCE.md, "Padded uint8 picks in lean's square tiles"; padded, lean and other
// kernels forced by name, bit-checked, the better of two rounds beside clone):
// - design (seed 290, 50 random uint8 permutes the H200 gives padded, 2^19-2^25 elements, 7-22
//   us): lean in its square tile 1.15 x padded over 18 unbroadcast shapes (one 5% slower); in its
//   tall and large tiles 0.79 x (29 shapes); broadcast ones 0.97 x (3). ATen's copy ran 0.51 x
//   padded, and was the fastest kernel on none;
// - held out (seed 291, 50 such permutes): 1.21 x over the 14 it moves (0.93-1.48 x), one more
//   than 5% slower; then 60 random uint8 and int8 permutes it moves (seed 292, 8-22 us of copy):
//   1.20 x (0.69-1.63 x), 0.677 -> 0.815 of clone (eager 0.472), 4 more than 5% slower. The
//   gain fell with size: the 3 of 2^22 elements or more (in the square tile only because lean's
//   larger tiles would be under half full) ran 0.69-0.99 x;
// - such work of 2^22-2^27 elements (seed 295, 40 uint8 and int8 permutes, 9-68 us): 0.95 x
//   padded, 18 more than 5% slower (tile, gather and ATen's copy 0.53-0.72 x): padded keeps it.
std::optional<Choice> lean_takes_padded_bytes(Plan const& plan, Choice const& pick, Device const& device) {
  if (!device.padded_bytes_lean || pick.kernel != Kernel::Padded || plan.element_size != 1 ||
      plan.elements >= kLeanMidWork || broadcast_input(plan))
    return std::nullopt;
  auto lean = force(plan, Kernel::Lean, device, nullptr);  // in its square tile: lean_shape, under kLeanMidWork
  if (!lean || !lean->problem || !offered(*lean, nullptr)) return std::nullopt;
  return lean;
}

// The padded seed kernel, one element per access, gives way on 8-byte elements (the plan's,
// after merging) where the table ranks it first and the rules above left it:
// - into output rows and from input rows of 256-2047 bytes (class .o3.i3), to lean in its own
//   tiles where lean is offered, else to split, where that is offered;
// - from a broadcast input into output and input rows of 2048 bytes or more (.o4.i4.b), to the
//   tile kernel.
// On a GPU whose rule it is (Device::padded_gives_way). Measured on an H200 (docs/PERFORMANCE.md,
// "8-byte padded picks in lean, split and tile"; the pick and other kernels forced by name,
// bit-checked, the better of two rounds beside clone), on random permutes the H200 gives padded:
// - .o3.i3, design (seed 305, 40 float64, int64 and complex64 permutes of rank 5-6, 17-1409
//   us): lean 1.14 x padded over the 24 it is offered on (one 0.86 x); split 1.36 x over the 14
//   where lean is not but split is (none more than 5% slower, 0.96-1.80 x), split 0.90 x where
//   lean is offered too; seeds 293-294 gave the same signs (lean 1.05-1.07 x over 7, split
//   1.01-1.83 x over 4). Held out (seed 306, 40 such permutes of ranks 3-6, 14-961 us): 1.16 x
//   (0.84-1.83 x), 5 more than 5% slower (4 in lean, one in split); behind eager by more than 5%
//   on 2 where padded was on 7. Moved by the rule (seed 309, 40 shapes): 1.14 x (0.81-1.99 x), 6
//   more than 5% slower, 0.70 -> 0.79 of clone (eager 0.57);
// - .o4.i4.b, design (seeds 293, 294 and 304, 33 broadcast shapes): tile 1.13 x padded, 4 more
//   than 5% slower; lean 1.08 x, 6 slower. Held out (seed 307, 23 such shapes, 9-343 us): 1.14 x
//   (0.88-1.40 x), 2 slower; moved by the rule (seed 310, 30 shapes): 1.11 x (0.90-1.36 x), one
//   slower, 1.21 -> 1.34 of clone (eager 1.05; a broadcast input reads fewer bytes than clone).
// Since split was timed again on the H100 (docs/PERFORMANCE.md, "The split kernel timed again on
// the H100"), the H100's table ranks split first for the .o3.i3 transposes whose rows lie on the
// 16-byte grid, so padded reaches this rule there only from inputs off the grid (stepped), and
// the split branch moved none of the shapes of the tuning grids and sweeps.
std::optional<Choice> padded_gives_way(Plan const& plan, Choice const& pick, Device const& device) {
  if (!device.padded_gives_way || pick.kernel != Kernel::Padded || plan.element_size != 8) return std::nullopt;
  auto const if_offered = [&](Kernel k) -> std::optional<Choice> {
    std::optional<Choice> c = force(plan, k, device, nullptr);
    return c && offered(*c, nullptr) ? c : std::nullopt;
  };
  int const out = out_bucket(plan), in = in_bucket(plan);
  if (out == 3 && in == 3) {
    if (auto lean = if_offered(Kernel::Lean)) return lean;
    return if_offered(Kernel::Split);
  }
  if (out == 4 && in == 4 && broadcast_input(plan)) return if_offered(Kernel::Tile);
  return std::nullopt;
}

// ATen's copy gives way to interleave on 2-byte elements (bfloat16, float16, pairs of uint8) in
// classes where interleave runs one element per access, with gaps between pixels or without
// (".Ig", ".Ie"), and on 1-byte elements where it skips gaps (".Ig"), into output rows of 2048
// bytes or more (bucket 4), where it is offered (it refuses broadcast inputs when skipping
// gaps). The H100's timings ranked ATen's copy ahead there (t.e2.o4.i0.w4.f2.Ig: 0.36 of clone
// against interleave's 0.30; t.e2.o4.i0.w4.f2.Ie: 0.57 against 0.70 over the shapes each ran;
// t.e1.o4.i0.w1.f2.Ig: 0.20 against 0.14; in t.e2.o4.i1.w4.f2.Ig box first, then ATen's copy
// 0.20, interleave 0.32). On an H200 (docs/PERFORMANCE.md, "ATen's copy on 1- and 2-byte
// elements that interleave runs one at a time"), interleave and ATen's copy forced by name:
// - 2-byte, gaps: design (seeds 212-219, 37 shapes, all output bucket 4) 1.85 x ATen's copy,
//   one more than 5% slower; held out (seed 220, 51 such shapes, 13-709 us) 1.69 x (0.82-5.36
//   x), one more than 5% slower, 0.266 -> 0.448 of clone. In output bucket 3 the same grid's 8
//   shapes ran 1.15 x with 3 more than 5% slower (down to 0.77 x): the rule leaves them. Moved
//   by the rule (seed 224, 50 shapes, 11-285 us): 1.70 x (0.80-8.28 x), 2 more than 5% slower;
// - 2-byte, no gaps (all t.e2.o4.i0.w4.f2.Ie): design (seed 226, 58 shapes, 8-211 us) 1.42 x,
//   6 more than 5% slower (8-36 us); held out (seed 228, 60 shapes, 7-161 us) 1.40 x (0.78-2.57
//   x), 0.689 -> 0.945 of clone, 4 more than 5% slower (10-13 us);
// - 1-byte: design (seed 227) 1.46 x over 16 shapes with gaps, 1.23 x over 7 without, none
//   more than 5% slower; held out (seed 229) 1.53 x over 38 with gaps (2 more than 5% slower)
//   but 1.01 x over 22 without (9 more than 5% slower, down to 0.74 x), so 1-byte elements
//   without gaps stay with ATen's copy; with gaps, moved by the rule (seed 231, 60 shapes, 17-555
//   us): 1.44 x (0.68-3.21 x), 0.209 -> 0.301 of clone, 6 more than 5% slower.
// 8- and 16-byte elements were not measured (4 shapes of seed 227, 0.94-2.34 x).
// On an H100 (docs/PERFORMANCE.md, "Six more H200 rules on the H100"; 25 fresh uint8 and bfloat16
// shapes it moves, 13-174 us): 1.98 x (0.81-3.61 x), 0.136 -> 0.269 of clone (eager 0.136); two
// uint8 shapes with little to gain ran slower, behind eager: (1461715, 2, 11) reversed 0.27 ->
// 0.22, (133388, 15, 3, 5) offset 0.25 -> 0.23.
bool interleave_takes_element_aten(Class const& cls, Choice const& pick, Device const& device) {
  bool const measured = cls.element_size == 2 || (cls.element_size == 1 && cls.gaps);
  return device.element_aten_interleave && pick.kernel == Kernel::Aten && !cls.copy && measured &&
         cls.element_interleave() && cls.out_bucket == 4;
}

// Interleave gives way to gather on 1-byte packs (planes -> interleaved) one element per access
// skipping gaps: the H100's table ranked interleave first in t.e1.o0.i4.w1.f2.Ig from the 3 of
// its 11 shapes interleave ran (0.19 of clone; gather 0.34 over all 11). On an H200
// (docs/PERFORMANCE.md, "Gapped uint8 packs in gather"), forced by name: design (seed 222, 39
// shapes, 11-332 us) gather 1.94 x interleave, 0.217 -> 0.420 of clone (eager 0.293), more than
// 5% slower on 2 (0.80 x and 0.90 x, into 6 and 3 channels); interleave had trailed eager by
// more than 5% on 31 of them, gather on 3. Held out (seed 223, 60 packs, 14-334 us): 1.65 x
// (0.64-4.91 x), 0.209 -> 0.345 of clone (eager 0.249), more than 5% slower on 5, behind eager
// by more than 5% on 2 where interleave was on 44. Where gather's reads would be scattered, the
// split kernel runs them instead (split_takes_scattered_gather).
bool gather_takes_gapped_packs(Class const& cls, Choice const& pick, Device const& device) {
  return device.gapped_pack_gather && pick.kernel == Kernel::Interleave && pick.pack && cls.element_size == 1 &&
         cls.element_interleave() && cls.gaps;
}

// Output rows that each repeat one input element (as force's Fill case checks), of kFillRowBytes
// or more, run the fill kernel (cuda/fill.cu) whatever the table ranks, but for the planner's
// 16-byte elements (a dtype of 16 bytes: below; an innermost dim merged into 16 bytes: the
// table's pick): it stores the output in whole 16-byte vectors and loads each row's element once
// per warp, so it moves the output's bytes once where clone moves them twice. Tile kernels stage
// the repeated element again and again (realign's cp.async, which bypasses L1, sends all of its
// blocks to the same few L2 lines), and gather loads it once per output element. Measured on an
// H200 (docs/PERFORMANCE.md, "Output rows that repeat one element: the fill kernel"; each kernel
// forced by name, bit-checked, the better of two rounds beside clone and eager), over 76 such
// transposes of 1- to 8-byte elements from the sweep's seeds, 9-828 MB, rows of 24 bytes to 132 MB:
// - rows of 48 bytes or more (64): fill 1.18-2.15 of clone (1.68 or more from 1 KB), ahead of
//   the pick before on all but one (bfloat16 rows of 240 bytes: 1.56 against lean's 1.61), and
//   of eager on every one; the four realign picks among them (0.06-0.41) ran 1.93-2.14;
// - rows of 24-32 bytes (12): behind the pick on 10 (0.82-0.97 x), so they stay with the table.
// Six layouts of the kinds models make (a bias expanded over NHWC to NCHW, a padding mask, a key
// expanded over the sequence, x.expand(...).contiguous()) ran 1.26-2.04 of clone, eager 0.31-0.81.
constexpr int64_t kFillRowBytes = 48;

constexpr char kFillReason[] = "output rows of 48 bytes or more that each repeat one input element: run fill";

std::optional<Choice> fill_takes_broadcast_rows(Plan const& plan) {
  if (!output_rows_repeat_one_element(plan) || plan.element_size == 16 ||
      plan.dims[plan.m].size * plan.element_size < kFillRowBytes)
    return std::nullopt;
  return force(plan, Kernel::Fill, Device{}, nullptr);
}

// Shorter such rows, of 1- to 4-byte elements, run fill too, in its lanes form where a warp span
// would reach more than 32 rows (under 17 bytes): there the table's picks gather and ATen's
// copy load each output element on its own, or stage the repeated element through shared
// memory (interleave one element per access, split), where fill loads each element once per
// vector it lies in. Interleave's vectored packs keep their pick: they read the planes in whole
// vectors. Measured on an H200 (docs/PERFORMANCE.md, "Shorter rows: fill's lanes form"; each
// kernel forced by name, bit-checked, the better of two rounds beside clone and eager):
// - designed on 62 such transposes with rows of 2-47 bytes (4-744 MB): the 31 of 1- to 4-byte
//   elements whose pick was gather, ATen's copy, split or interleave one element per access ran
//   1.44 x faster in fill (0.57 -> 0.83 of clone), none more than 5% slower; the vectored
//   interleave picks ran 0.70 x as fast in fill (0.27-1.11 x), 8-byte elements 0.82-1.08 x;
// - held out: 120 random permutes (seeds 9101-9102: ranks 2-6, 1- to 4-byte dtypes, plain,
//   stepped and offset views, 4-300 MB) 1.30 x and 1.55 x the pick before, 5 more than 5% slower
//   (down to 0.83 x), none behind eager; the 190 saved tuning shapes the rule moves (2-437 MB)
//   1.37 x, 7 more than 5% slower (down to 0.73 x), 3 behind eager by more than 5% (rows of 2-6
//   bytes that ATen's copy ran, 2-15 MB: 0.45, 0.69 and 0.57 of clone against 0.61, 0.78, 0.61).
constexpr int kShortFillMaxElement = 4;

constexpr char kShortFillReason[] =
    "output rows under 48 bytes that each repeat one input element of 4 bytes or less, not a vectored interleave: run fill";

std::optional<Choice> fill_takes_short_broadcast_rows(Plan const& plan, Choice const& pick) {
  if (!output_rows_repeat_one_element(plan) || plan.element_size > kShortFillMaxElement ||
      (pick.kernel == Kernel::Interleave && pick.problem && pick.width > pick.problem->element_size))
    return std::nullopt;
  return force(plan, Kernel::Fill, Device{}, nullptr);
}

// Picks of 16-byte elements whose output rows each repeat one input element (as above), other
// than interleave's, run ATen's copy: it loads each element from the cache and stores it whole,
// at the speed of writing alone, so a tile kernel's trip through shared memory only costs. On an
// H200 (same section): the two such complex128 picks of padded among those cells ran 1.25 and
// 1.59 of clone, ATen's copy 2.08 and 2.16 -- as fast as a kernel that stores whole vectors and
// loads nothing (2.06 and 2.15); the other 8 (3 on ATen's copy, 5 on interleave) ran within 1%
// of eager (1.06-2.16). Only for a dtype of 16 bytes: where the planner merged an innermost dim
// into 16-byte elements (8 bfloat16 values broadcast over n rows, say), ATen's copy still moves
// the dtype's own elements, one at a time (0.65-1.29 of clone on three such bfloat16 cells of the
// H200's sweep, where the rows kernel ran 1.69-2.13).
std::optional<Choice> wide_broadcast_rows_run_aten(Plan const& plan, Choice const& pick, Device const& device) {
  if (tensor_element_size(plan) != 16 || !output_rows_repeat_one_element(plan) || pick.kernel == Kernel::Aten ||
      pick.kernel == Kernel::Interleave)
    return std::nullopt;
  return force(plan, Kernel::Aten, device, nullptr);
}

// Whether a broadcast input's distinct bytes fit in kGatherFootprint (a transpose's: on the copy
// route ATen's copy already reads whole rows).
bool cached_broadcast(Plan const& plan) {
  return !plan.copy_route() && distinct_input_bytes(plan) <= kGatherFootprint;
}

// On a GPU whose rule it is (Device::near_broadcast_gather), broadcast picks of ATen's copy of
// elements of up to 4 bytes run gather at any footprint where the input's neighbours lie near in
// the output: on the copy route, or where the least output distance between elements that the
// input reads with a nonzero stride under one sector (sector_neighbour_reach over the stepped
// dims) is 2 to kNearBroadcastReach - 1 elements and the input's rows hold kNearBroadcastInputRow
// bytes or more. There gather's 16-byte stores walk the output while its loads may find their
// sectors still in L1 from a neighbouring lane or iteration, where ATen's copy stores one element
// at a time (a reading of the figures, not profiled). Left out, as the grids below say: a reach
// of one (the output's innermost dim read with a stride under a sector, off the copy route),
// shorter input rows, and reaches of kNearBroadcastReach and up (the last item below). Measured
// on the H100 (ATen's copy and gather forced by name, bit-checked, the better of two rounds beside
// clone, L2 flushed; docs/PERFORMANCE.md, "Broadcast picks whose neighbours lie near"), on random
// permutes of ranks 3-5 with one dim expanded to 2-64 that the H100 gives ATen's copy (2^21-2^26
// elements):
// - design (seeds 1 and 2, 1- to 8-byte elements): elements of up to 4 bytes with a reach under
//   2048 ran gather at 1.24 x and 1.20 x (39 and 52 shapes), but 10 of seed 2's 52 more than 5%
//   slower, six of them at a reach of one; copy routes and reaches of 2-1023 ran 1.38 x and
//   1.36 x (19 and 31 shapes, one more than 5% slower on each);
// - that rule on a fresh draw (seed 3, 1- to 4-byte elements, 219 shapes): 1.38 x, 0.74 -> 1.02
//   of clone, copy routes 1.33 x (68, none slower), but 15 more than 5% slower (0.42-0.95 x), 12
//   of them from input rows under 64 bytes (56 such shapes, 1.16 x): the input-row bound added;
// - held out (seed 4, the rule as written here, 132 shapes, 8-212 us of copy): 1.52 x, 0.755 ->
//   1.152 of clone (eager 0.755), copy routes 1.36 x (53, none slower), transposes 1.65 x (79);
//   one more than 5% slower (uint8 (5, 109, 19, 22, 104) expanded in dim 3, permuted (2, 3, 4,
//   1, 0), reach 545: 0.80 x); the 24 of 100 us or more 1.83 x;
// - held out on larger tensors (seed 5, 2^26-2^28 elements, 139-828 us of copy): 120 shapes at
//   1.62 x, 0.760 -> 1.228 of clone, none slower (1.05 x and up).
// - past the bound (bench/near_broadcast.py --far, seeds 6 and 7: transposes left on ATen's copy
//   at a reach of 1024-4095): 1024-2047 ran gather at 1.24 x and 1.25 x over 83 and 89 shapes,
//   but 16 of the 172 more than 5% slower (0.64-0.95 x), sharing no element type, rank or size;
//   2048-4095 1.10 x and 1.08 x, a quarter of them slower.
// The sweep's bfloat16 (105, 2, 77, 4, 977) expanded in dim 1, permuted (2, 4, 1, 0, 3): 0.30
// -> 1.04 of clone; (15, 4, 85, 3, 634), the same way: 0.76 -> 0.75.
constexpr int64_t kNearBroadcastReach = 1024;

constexpr int64_t kNearBroadcastInputRow = 64;  // bytes

bool near_broadcast(Plan const& plan, Device const& device) {
  if (!device.near_broadcast_gather) return false;
  if (plan.copy_route()) return true;
  int64_t const reach = sector_neighbour_reach(plan, /*skip=*/-1, /*stepped=*/true);
  return reach >= 2 && reach < kNearBroadcastReach &&
         plan.dims[plan.n].size * plan.element_size >= kNearBroadcastInputRow;
}

std::optional<Choice> broadcast_gather(Plan const& plan, Choice const& pick, Device const& device) {
  if (pick.kernel != Kernel::Aten || tensor_element_size(plan) > 4 || !broadcast_input(plan) ||
      !(cached_broadcast(plan) || near_broadcast(plan, device)))
    return std::nullopt;
  return force(plan, Kernel::Gather, device, nullptr);  // offered() takes every shape gather runs
}

// A batch of small matrices, each whole in the input and in the output, in the same order on
// both sides: (B, R, C) -> (B, C, R), as in x.transpose(-1, -2) of a contiguous x. The tile
// kernels' tiles reach past such matrices (R and C of 2-64 elements), where the gather kernel
// walks the output in 16-byte vectors and loads each element on its own, from a matrix that a
// few sectors hold, so its lanes share them. On the sm_90 GPUs (device_rules), transposes of at
// least 2^20 elements of up to 8 bytes, over 1024 matrices or more, run gather where the
// matrices hold kDenseBatchBytes or less, or kDenseBatchAtenBytes or less where the table's pick
// is ATen's copy or padded -- the table's, before the GPU's rules move it: lean_takes_padded
// gives padded's picks in lean tiles under half full to lean, which ran (66000, 33, 17) float32
// at 0.50 of clone on the H100 where gather ran 1.00 (big-batches.json.gz). Measured
// (docs/PERFORMANCE.md, "Batches of small matrices in gather"; every kernel forced by name,
// bit-checked, beside clone, L2 flushed):
// - design: 22 batches of 66,000-1,048,576 matrices (bench/results/NVIDIA_H100_80GB_HBM3-big-
//   batches.json.gz), where gather led on 14; and the saved tuning runs' such shapes (H100: 83
//   the rule moves, 52 of them 1.05 x or more as fast in gather, 2 more than 5% slower
//   (bfloat16 (40558, 33, 3), 0.61 x; float32 (5256, 113, 8), 0.78 x), 1.18 x over all 83;
//   H200: 12, 11 faster, none slower, 1.29 x);
// - held out on an H100 (bench/dense_grid.py, seed 977: 64 shapes of 4-123 MiB, 19 of which
//   the rule moves, all from ATen's copy): 1.25 x (0.99-1.73 x), 0.717 -> 0.892 of clone
//   (eager's kernel 0.717, the best kernel 0.900), none more than 5% slower.
constexpr int64_t kDenseBatchBytes = 1024, kDenseBatchAtenBytes = 4096, kDenseBatchMatrices = 1024;
constexpr char const* kDenseBatchReason =
    "1024 or more matrices, each whole and in order on both sides, of up to 1 KiB (4 KiB where the table picks ATen's "
    "copy or padded), which gather walks in output vectors from few sectors: run gather";

std::optional<Choice> gather_takes_dense_batches(Plan const& plan, Choice const& c, Kernel table,
                                                 Device const& device) {
  if (!device.dense_batch_gather || plan.copy_route() || plan.rank != 3 || small_work(plan) ||
      plan.element_size > 8 || c.kernel == Kernel::Gather)  // the plan's elements, widened ones too
    return std::nullopt;
  Dim const& rows = plan.dims[plan.m];  // R: unit-stride in the output
  Dim const& cols = plan.dims[plan.n];  // C: unit-stride in the input
  Dim const& batch = plan.dims[3 - plan.m - plan.n];
  int64_t const matrix = rows.size * cols.size;
  bool const dense = cols.in == 1 && rows.in == cols.size && rows.out == 1 && cols.out == rows.size &&
                     batch.in == matrix && batch.out == matrix;
  int64_t const bytes = matrix * plan.element_size;
  bool const aten_or_padded = table == Kernel::Aten || table == Kernel::Padded;
  if (!dense || batch.size < kDenseBatchMatrices || bytes > (aten_or_padded ? kDenseBatchAtenBytes : kDenseBatchBytes))
    return std::nullopt;
  auto gather = force(plan, Kernel::Gather, device, nullptr);
  if (!gather || !offered(*gather, nullptr)) return std::nullopt;
  return gather;
}

// The tuning table's pick for the plan's class (or the fixed rule's, where no table covers
// it), moved by the rules that refine it.
Choice table_choice(Plan const& plan, Device const& device, bool explain) {
  Class const cls = classify(plan);
  std::string const own = cls.text();
  std::string key = own;
  Table const* table = table_for(device.arch);
  auto row = table ? table->find(key) : Table::const_iterator{};
  if (table)
    for (std::string const& family : family_keys(cls)) {
      if (row != table->end()) break;
      key = family;
      row = table->find(key);
    }
  bool const tuned = table && row != table->end();
  std::vector<Kernel> const fallback = tuned ? std::vector<Kernel>{} : fallback_ranking(plan);
  std::vector<Kernel> const& ranking = tuned ? row->second.ranking : fallback;
  std::string skipped;
  for (Kernel k : ranking) {
    std::string why;
    bool const passed_over = skips_box(plan, k, device);
    if (passed_over && explain) why = "2-byte elements, which this GPU's rule runs in the next kernel";
    auto c = passed_over ? std::nullopt : force(plan, k, device, explain ? &why : nullptr);
    if (c && offered(*c, explain ? &why : nullptr)) {
      if (explain) {
        c->key = own;  // the plan's own class, which tuning groups its shapes by
        c->reason = !tuned     ? "rule: neither class " + own + " nor its family has a tuning entry for sm_" +
                                   std::to_string(device.arch) + "; the rule ranks " + names(fallback)
                    : key == own ? "tuned for sm_" + std::to_string(device.arch) + ": class " + key + " ranks " + row->second.text
                                 : "tuned for sm_" + std::to_string(device.arch) + ": family " + key + " ranks " +
                                       row->second.text + " (the table has no class " + own + ")";
        if (!skipped.empty()) c->reason += "; skipped " + skipped;
      }
      // `other` in place of the pick, where it is offered, under the plan's own class key.
      auto const instead = [&](std::optional<Choice> other, char const* why) -> std::optional<Choice> {
        if (!other || !offered(*other, nullptr)) return std::nullopt;
        if (explain) other->key = own, other->reason = c->reason + "; " + why;
        return other;
      };
      if (c->kernel == Kernel::Tile && c->width == 16 && plan.elements < kLeanMidWork && plan.element_size <= 8)
        if (auto lean = instead(small_transpose(plan, device),
                                "under 2^22 elements of up to 8 bytes, where that is tile in 16-byte vectors and lean tiles are at least half full: run lean"))
          return *lean;
      // The rules of a GPU model (device_rules) that move the pick to another kernel.
      if (lean_takes_large_tiles_work(*c, device))
        if (auto lean = instead(force(plan, Kernel::Lean, device, nullptr, TileShape::Large),
                                "4-byte elements that the H100 runs in the tile kernel's large tiles, on a GPU whose rule runs them in lean's: run lean"))
          return *lean;
      if (auto lean = instead(lean_takes_element_loads(plan, *c, device),
                              "8-byte elements from input rows off the 16-byte grid into output rows of whole vectors, "
                              "on a GPU whose rule runs them in lean (one-element loads, 16-byte stores): run lean"))
        return *lean;
      if (auto other = realign_gives_way(plan, cls, *c, device))
        if (auto moved = instead(other, other->kernel == Kernel::Tile ? "8-byte elements, on a GPU whose rule runs them in the tile kernel rather than realign: run tile"
                                        : plan.element_size == 1
                                            ? "1-byte elements into output rows of 2048 bytes or more from input rows of 256 or more, "
                                              "on a GPU whose rule runs them in the padded kernel rather than realign: run padded"
                                            : "2- or 4-byte elements into output rows of 256-2047 bytes from input rows of 2048 or more, "
                                              "on a GPU whose rule runs them in the padded kernel rather than realign: run padded"))
          return *moved;
      if (auto other = tile_gives_way(plan, *c, device))
        if (auto moved = instead(other, other->kernel == Kernel::Lean
                                            ? "4- or 8-byte elements in 16-byte vectors, on a GPU whose rule runs them in lean's own tiles: run lean"
                                            : "4-byte elements in 16-byte vectors where lean is not offered, on a GPU whose rule runs them in split: run split"))
          return *moved;
      if (auto split = instead(split_takes_dense_unpacks(plan, *c, device),
                               "channels of 8- or 16-byte elements whose runs continue into the next dim, unpacked one "
                               "element per access, on a GPU whose rule runs them in split: run split"))
        return *split;
      static std::string const far_runs = "4-byte elements in runs under 16 bytes whose neighbours within a sector lie " +
                                          std::to_string(kFarRunReuse) +
                                          " or more elements apart in the output, on a GPU whose rule runs these in "
                                          "ATen's copy (lanes on consecutive elements): run ATen's copy";
      static std::string const narrow_rows = "rows in narrow vectors whose index arithmetic costs more than gather's "
                                             "loads, on a GPU whose rule runs them in gather: run gather";
      if (gather_takes_rows(plan, *c, device))
        if (auto gather = instead(force(plan, Kernel::Gather, device, nullptr), narrow_rows.c_str())) {
          static std::string const then_aten = narrow_rows + "; " + far_runs;
          if (auto aten = instead(aten_takes_far_short_runs(plan, *gather, device), then_aten.c_str()))
            return *aten;
          return *gather;
        }
      if (gather_takes_aten_rows(plan, *c, device))
        if (auto gather = instead(force(plan, Kernel::Gather, device, nullptr),
                                  "rows of 16 bytes or more that the table gives ATen's copy, on a GPU whose rule runs row copies in gather: run gather"))
          return *gather;
      if (interleave_takes_element_aten(cls, *c, device))
        if (auto interleave = instead(force(plan, Kernel::Interleave, device, nullptr),
                                      "2-byte elements (1-byte ones skipping gaps) in output rows of 2048 bytes or more, which "
                                      "interleave runs one element per access, on a GPU whose rule runs them there: run interleave"))
          return *interleave;
      static std::string const scattered_gather =
          "gather would load a sector for each element (the input's dims within one sector lie " +
          std::to_string(kScatteredGatherReach) +
          " or more elements apart in the output), where split reads whole tile rows: run split";
      static std::string const gapped_packs = "1-byte planes packed one element per access skipping gaps, on a GPU "
                                              "whose rule runs them in gather: run gather";
      if (gather_takes_gapped_packs(cls, *c, device))
        if (auto gather = instead(force(plan, Kernel::Gather, device, nullptr), gapped_packs.c_str())) {
          static std::string const then_split = gapped_packs + "; " + scattered_gather;
          if (auto split = instead(split_takes_scattered_gather(plan, *gather, device, /*any_size=*/true), then_split.c_str()))
            return *split;
          return *gather;
        }
      static std::string const scattered = "8-byte elements that ATen's copy would load a sector each (the input's dims "
                                           "within one sector lie " + std::to_string(kScatteredReach) +
                                           " or more elements apart in the output), where split reads whole tile "
                                           "rows: run split";
      if (auto split = instead(split_takes_scattered_aten(plan, *c, device), scattered.c_str()))
        return *split;
      if (auto split = instead(split_takes_scattered_gather(plan, *c, device), scattered_gather.c_str()))
        return *split;
      if (auto aten = instead(aten_takes_far_short_runs(plan, *c, device), far_runs.c_str()))
        return *aten;
      static std::string const short_split = "one element per access in split tiles under 80% full, whose output side "
                                             "chains two dims into a run still under 128 elements with the input's rows "
                                             "next to it, on a GPU whose rule runs these in gather: run gather";
      if (auto gather = instead(gather_takes_short_split_rows(plan, *c, device), short_split.c_str())) {
        static std::string const then_aten = short_split + "; 16-byte elements over four or more dims, on a GPU whose "
                                                           "rule runs these in ATen's copy: run ATen's copy";
        if (auto aten = instead(aten_takes_short_split_rows(plan, *gather, device), then_aten.c_str()))
          return *aten;
        return *gather;
      }
      static std::string const shared_sectors = [] {
        std::ostringstream why;
        why << "elements of up to 4 bytes whose neighbours V apart in the output share sectors in the input (under "
            << kGatherSectorsPerLane << " per lane of gather's loads), on a GPU whose rule runs these in gather: run gather";
        return why.str();
      }();
      if (auto gather = instead(gather_takes_shared_sectors(plan, *c, device), shared_sectors.c_str()))
        return *gather;
      return *c;
    }
    if (explain) skipped += std::string(skipped.empty() ? "" : ", ") + kernel_name(k) + " (" + why + ")";
  }
  return Choice{};  // unreachable: every ranking ends with Aten, which runs anything
}

// The table's pick, moved by the rules of a GPU model (device_rules) and of where it does not
// fill its tiles.
Choice moved_pick(Plan const& plan, Choice c, Device const& device, bool explain) {
  // `other` in place of the table's pick, under its class key; why() (said only with explain)
  // follows the pick's reason.
  auto const instead = [&](Choice other, auto const& why) {
    if (explain) other.key = c.key, other.reason = c.reason + "; " + why();
    return other;
  };
  if (auto split = chained_split(plan, c, device))
    return instead(*split, [] {
      return std::string("the split kernel's sides chain into 16-byte vectors, a width the table never timed it at, "
                         "and fill its tiles: run split");
    });
  if (auto lean = lean_takes_padded(plan, c, device))
    return instead(*lean, [] {
      return std::string("4- or 8-byte elements in lean tiles under half full, which the table never timed it on, "
                         "on a GPU whose rule runs them in lean: run lean");
    });
  if (auto other = element_tiles_give_way(plan, c, device))
    return instead(*other, [&] {
      return std::string(other->kernel == Kernel::Lean
                             ? "4-byte elements one per access in the tile kernel, gather's reads scattered, on a GPU whose "
                               "rule runs them in lean's own tiles, under half full as they are: run lean"
                             : "4-byte elements one per access in the tile kernel, the input's rows near in the output, on a "
                               "GPU whose rule runs them in gather: run gather");
    });
  if (auto lean = lean_takes_padded_bytes(plan, c, device))
    return instead(*lean, [] {
      return std::string("1-byte elements, under 2^22 of them, that lean runs in its square tile, on a GPU whose rule runs them there: run lean");
    });
  if (auto other = padded_gives_way(plan, c, device))
    return instead(*other, [&] {
      return std::string(other->kernel == Kernel::Tile
                             ? "8-byte elements from a broadcast input into rows of 2048 bytes or more on both sides, on a "
                               "GPU whose rule runs them in the tile kernel rather than padded: run "
                             : "8-byte elements into rows of 256-2047 bytes on both sides, on a GPU whose rule runs them in "
                               "lean where it is offered, else in split, rather than padded: run ") +
             kernel_name(other->kernel);
    });
  if (auto gather = broadcast_gather(plan, c, device))
    return instead(*gather, [&] {
      if (cached_broadcast(plan))
        return "a broadcast input of " + std::to_string(distinct_input_bytes(plan)) +
               " bytes, whose every load hits the cache: run gather";
      return std::string("a broadcast input of elements of up to 4 bytes whose neighbours lie near in the output (") +
             (plan.copy_route() ? "the copy route" : "under " + std::to_string(kNearBroadcastReach) + " elements apart") +
             "), on a GPU whose rule runs such picks of ATen's copy in gather: run gather";
    });
  if (reads_runs_together(plan, c, device)) {
    c.together = true;
    if (explain)
      c.reason += "; runs under " + std::to_string(kTogetherRunBytes) + " bytes whose next run in the input lies " +
                  std::to_string(kTogetherReach >> 20) + " MiB or more further on in the output, on a GPU whose rule "
                  "reads them together: blocks in the neighbours-together order";
  }
  return c;
}

Choice choose(Plan const& plan, Device const& device, bool explain) {
  if (small_work(plan)) {  // before classify(): the host time is what small work sees
    std::optional<Choice> c = small_rows(plan, device);
    if (!c) c = small_transpose(plan, device);
    if (!c) c = small_interleave(plan, device);
    if (!c) c = small_lanes(plan, device);
    if (!c) c = force(plan, Kernel::Aten, device, nullptr);
    if (explain) {
      c->key = class_key(plan);
      c->reason = "small work: " + std::to_string(plan.elements) + " elements, under 2^20, " +
                  (c->kernel == Kernel::Rows   ? "rows in vectors wider than the element: run rows"
                   : c->kernel == Kernel::Lean ? (c->width == 16 ? "a transpose loaded in 16-byte vectors, lean tiles at least half full: run lean"
                                                                 : "a transpose of 2^17 elements or more loaded an element of 2 bytes or more at a time, lean tiles at least half full: run lean")
                   : c->kernel == Kernel::Interleave ? "1- or 2-byte pixels interleaved or split in aligned 16-byte vectors, no broadcast, not two dims under 2^19 elements: run interleave"
                   : c->kernel == Kernel::Lanes ? "a transpose of two dims, of elements of up to 8 bytes: run lanes"
                                                : "run ATen's copy");
    }
    return *c;
  }
  Choice const table = table_choice(plan, device, explain);
  Choice const c = moved_pick(plan, table, device, explain);
  // `other` in place of that pick, under its class key, `why` following its reason.
  auto const instead = [&](Choice other, char const* why) {
    if (explain) other.key = c.key, other.reason = c.reason + "; " + why;
    return other;
  };
  if (auto fill = fill_takes_broadcast_rows(plan)) return instead(*fill, kFillReason);
  if (auto fill = fill_takes_short_broadcast_rows(plan, c)) return instead(*fill, kShortFillReason);
  if (auto gather = gather_takes_dense_batches(plan, c, table.kernel, device)) return instead(*gather, kDenseBatchReason);
  if (auto words = words_takes_elements(plan, c, device)) return instead(*words, kWordsReason);
  if (auto aten = wide_broadcast_rows_run_aten(plan, c, device))
    return instead(*aten, "16-byte elements whose output rows each repeat one input element, which ATen's copy "
                          "stores whole from cached loads: run ATen's copy");
  return c;
}

}  // namespace cute_transpose
