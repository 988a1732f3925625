// The Split kernel, for transposes with short dims (SplitProblem, work.h). A permute such as
// (16, 32, 16, 32, 32) -> dims (0, 3, 1, 4, 2) leaves a transpose between an m of 16 and an n of
// 32 elements, far smaller than a 128 x 128 tile: most of every tile would be empty. Here each
// tile side is two dims, (inner, outer), walked as one index i = inner_index + inner * outer_index,
// so a tile holds several small matrices side by side and stays full.
//
// The tile's journey is the `transpose` op's (vector_tile.cuh): vectors of n into the swizzled
// shared tile, V x V register transposes, vectors of m out. Only the global addresses differ: a
// thread splits its first index on each side into the two dims with a precomputed divider, once
// per tile, and steps from vector to vector by adding, carrying into the outer dim. The tile is
// one of the Tile kernel's shapes (tile_config.h): the chooser takes square, tall or wide tiles,
// whichever its two-dim sides fill best (choose.cpp, split_shape); narrow and short ones run by
// name.
#include <cutlass/fast_math.h>

#include "tile_transpose.cuh"

namespace cute_transpose {
namespace {

using namespace cute;

// One tile side: index i -> input and output offsets (elements) of (i % inner, i / inner).
struct Side {
  cutlass::FastDivmodU64 inner;
  int64_t extent;  // inner * outer: the side's length
  int64_t inner_in, inner_out, outer_in, outer_out;

  Side(int64_t size, int64_t in_stride, int64_t out_stride, Outer const& o)
      : inner(uint64_t(size)), extent(size * o.size), inner_in(in_stride), inner_out(out_stride),
        outer_in(o.in_stride), outer_out(o.out_stride) {}

  // A place i on the side: lo = i % inner, and i's offsets. The place of d also serves as a
  // step of d along the side (the offsets are linear in the two dims).
  struct Cursor {
    int64_t lo;
    Offsets at;
  };

  CUTE_DEVICE Offsets offsets(int64_t lo, int64_t hi) const {
    return {lo * inner_in + hi * outer_in, lo * inner_out + hi * outer_out};
  }
  CUTE_DEVICE Cursor at(int64_t i) const {  // one division
    uint64_t lo;
    int64_t const hi = int64_t(inner.divmod(lo, uint64_t(i)));
    return {int64_t(lo), offsets(int64_t(lo), hi)};
  }
  // Moves c forward by step (the place at(d)), without dividing: when lo passes inner, it
  // carries into hi.
  CUTE_DEVICE void advance(Cursor& c, Cursor const& step) const {
    c.lo += step.lo;
    c.at.in += step.at.in;
    c.at.out += step.at.out;
    if (c.lo >= int64_t(inner.divisor)) {
      c.lo -= int64_t(inner.divisor);
      c.at.in += outer_in - int64_t(inner.divisor) * inner_in;
      c.at.out += outer_out - int64_t(inner.divisor) * inner_out;
    }
  }
};

// A thread's addresses cost one division per side and tile; between its vectors it steps a
// cursor (Side::advance). With a division for every vector instead, one-element and 4-byte
// vectors took 128-238 registers, one block of 256 threads per SM: 0.2-0.3 of clone on
// MaxViT-like windows. The cap keeps at least as many blocks per SM as that kernel had where it
// had more than three (16-byte elements: 48 registers then, five blocks; 2-byte elements in
// 16-byte vectors: 64, four), three other blocks of 256 threads (80 registers, no spills), and
// eight of the 64 threads that move 1-byte elements in 16-byte vectors (at 80 they spilled).
template <class Cfg>
constexpr int split_min_blocks() {
  constexpr int E = sizeof(typename Cfg::T);
  if (E == 16) return 5;
  if (E == 2 && Cfg::V * E == 16) return 4;
  return Cfg::kThreads >= 256 ? 768 / Cfg::kThreads : 512 / Cfg::kThreads;
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, split_min_blocks<Cfg>()) split_transpose(Problem p, Side m, Side n) {
  using T = typename Cfg::T;
  using Vec = typename Cfg::Vec;
  constexpr int V = Cfg::V;
  constexpr int kRowStep = Cfg::kThreads / Cfg::CN;  // phase 1: rows between a thread's vectors
  constexpr int kBlockStep = Cfg::kThreads / Cfg::CM;  // phase 2: V x V blocks between a thread's
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  Tensor sTile = make_tensor(make_smem_ptr(shared_tile<Vec, Cfg::BM * Cfg::CN, 128>()),  // (BM,CN)
                             typename Cfg::Smem{});
  Tensor tIn_s = local_partition(sTile, typename Cfg::LoadThreads{}, threadIdx.x);       // (BM/(T/CN),1)
  Tensor tIn_c = local_partition(make_identity_tensor(Shape<Int<Cfg::BM>, Int<Cfg::CN>>{}),  // (BM/(T/CN),1)
                                 typename Cfg::LoadThreads{}, threadIdx.x);
  constexpr int kLoads = decltype(size(tIn_s))::value;  // a thread's vectors of a tile
  Tensor tBlocks = thread_blocks<Cfg>();                // (1,CN/(T/CM)): this thread's V x V blocks
  Side::Cursor const row_step = m.at(kRowStep), next_n = n.at(1), next_block = n.at((kBlockStep - 1) * V + 1);

  TileWalk walk(m.extent, n.extent, p.batch.count, Cfg::BM, Cfg::BN);
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk(t, p.batch);
    int64_t const m0 = tile.m * Cfg::BM, n0 = tile.n * Cfg::BN;  // the tile's first (m, n)

    //
    // 1. global -> shared: this thread's column of vectors (one n, rows kRowStep apart)
    //
    int64_t const col = n0 + get<1>(tIn_c(0)) * V;
    auto const row = [&](int i) { return m0 + get<0>(tIn_c(i)); };
    auto const inside = [&](int i) { return row(i) < m.extent && col < n.extent; };
    Side::Cursor in_row = m.at(row(0));
    int64_t const col_in = tile.at.in + n.at(col).at.in;
    // Rows grow with i, so the loads run in order up to the first row outside the tile, and
    // the cursor that each load moves on stays in step with i.
    auto const load = [&](int i) {
      Vec const v = load_input<Cfg::kKeep>(reinterpret_cast<Vec const*>(src + col_in + in_row.at.in));
      m.advance(in_row, row_step);
      return v;
    };
    loads_then_stores<kLoads>(inside, load, [&](int i, Vec const& v) { tIn_s(i) = v; });  // loads first (tiling.cuh)
    __syncthreads();

    //
    // 2. shared -> registers -> transposed V x V blocks -> global, vectors of V consecutive m
    //
    int64_t const row_v = m0 + get<0>(tBlocks(0)) * V;  // the first m of this thread's blocks (one block row)
    int64_t const row_out = tile.at.out + m.at(row_v).at.out;
    Side::Cursor out_n = n.at(n0 + get<1>(tBlocks(0)) * V);
    // Stores come in the order of transpose_blocks: V consecutive n in a block, then the next
    // block kBlockStep blocks on.
    transpose_blocks<Cfg>(sTile, [&](int tn, int, Vec const& v) {
      int64_t const c = n0 + tn;
      if (row_v < m.extent && c < n.extent)
        *reinterpret_cast<Vec*>(dst + row_out + out_n.at.out) = v;
      n.advance(out_n, tn % V == V - 1 ? next_block : next_n);
    });
    __syncthreads();  // the next tile reuses sTile
  }
}

template <class T, int W, TileShape S>
cudaError_t launch_with(SplitProblem const& s, cudaStream_t stream) {
  using Cfg = TileConfig<T, W, S>;
  Problem const& p = s.problem;
  Side const m(p.rows, p.row_stride, p.out_row_stride, s.m);
  Side const n(p.cols, p.col_stride, p.out_col_stride, s.n);
  TileWalk const walk(m.extent, n.extent, p.batch.count, Cfg::BM, Cfg::BN);
  return launch_keeping_inputs<Cfg, W>(p.keep_inputs, [&](auto cfg) {
    split_transpose<decltype(cfg)><<<walk.grid(), Cfg::kThreads, 0, stream>>>(p, m, n);
    return cudaGetLastError();
  });
}

}  // namespace

// The chooser (choose.cpp) checked that both sides move in `width`-byte vectors (16 or 4 bytes,
// or single elements) and that the split pays, and took the tile shape (one of kTileShapes).
cudaError_t launch_split(SplitProblem const& s, int width, TileShape shape, cudaStream_t stream) {
  return with_element_type(s.problem.element_size, [&](auto t) {
    using T = decltype(t);
    return with_tile_width<T>(width, [&](auto w) {
      return with_scored_shape(shape, [&](auto tile) {
        return launch_with<T, decltype(w)::value, decltype(tile)::value>(s, stream);
      });
    });
  });
}

}  // namespace cute_transpose
