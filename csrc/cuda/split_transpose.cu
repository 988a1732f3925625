// The Split kernel, for transposes with short dims (SplitProblem, work.h). A permute such as
// (16, 32, 16, 32, 32) -> dims (0, 3, 1, 4, 2) leaves a transpose between an m of 16 and an n of
// 32 elements, far smaller than a 128 x 128 tile: most of every tile would be empty. Here each
// tile side is two dims, (inner, outer), walked as one index i = inner_index + inner * outer_index,
// so a tile holds several small matrices side by side and stays full.
//
// The tile's journey is the `transpose` op's (vector_tile.cuh): vectors of n into the swizzled
// shared tile, V x V register transposes, vectors of m out. Only the global addresses differ: a
// side index splits into its two dims with a precomputed divider, once per vector.
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

  CUTE_DEVICE Offsets operator()(int64_t i) const {
    uint64_t lo;
    int64_t const hi = int64_t(inner.divmod(lo, uint64_t(i)));
    return {int64_t(lo) * inner_in + hi * outer_in, int64_t(lo) * inner_out + hi * outer_out};
  }
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads) split_transpose(Problem p, Side m, Side n) {
  using T = typename Cfg::T;
  using Vec = typename Cfg::Vec;
  constexpr int V = Cfg::V;
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  Tensor sTile = make_tensor(make_smem_ptr(shared_tile<Vec, Cfg::BM * Cfg::CN, 128>()),  // (BM,CN)
                             typename Cfg::Smem{});
  Tensor tIn_s = local_partition(sTile, typename Cfg::LoadThreads{}, threadIdx.x);       // (BM/(T/CN),1)
  Tensor tIn_c = local_partition(make_identity_tensor(Shape<Int<Cfg::BM>, Int<Cfg::CN>>{}),  // (BM/(T/CN),1)
                                 typename Cfg::LoadThreads{}, threadIdx.x);
  constexpr int kLoads = decltype(size(tIn_s))::value;  // a thread's vectors of a tile

  TileWalk walk(m.extent, n.extent, p.batch.count, Cfg::BM, Cfg::BN);
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk(t, p.batch);
    int64_t const m0 = tile.m * Cfg::BM, n0 = tile.n * Cfg::BN;  // the tile's first (m, n)

    //
    // 1. global -> shared: this thread's column of vectors (one n, several m)
    //
    int64_t const col = n0 + get<1>(tIn_c(0)) * V;
    int64_t const col_in = tile.at.in + n(col).in;
    auto const row = [&](int i) { return m0 + get<0>(tIn_c(i)); };
    auto const inside = [&](int i) { return row(i) < m.extent && col < n.extent; };
    auto const load = [&](int i) { return *reinterpret_cast<Vec const*>(src + col_in + m(row(i)).in); };
    loads_then_stores<kLoads>(inside, load, [&](int i, Vec const& v) { tIn_s(i) = v; });  // loads first (tiling.cuh)
    __syncthreads();

    //
    // 2. shared -> registers -> transposed V x V blocks -> global, vectors of V consecutive m
    //
    transpose_blocks<Cfg>(sTile, [&](int tn, int tmv, Vec const& v) {
      int64_t const row = m0 + tmv * V, c = n0 + tn;
      if (row < m.extent && c < n.extent)
        *reinterpret_cast<Vec*>(dst + tile.at.out + n(c).out + m(row).out) = v;
    });
    __syncthreads();  // the next tile reuses sTile
  }
}

template <class T, int W>
cudaError_t launch_with(SplitProblem const& s, cudaStream_t stream) {
  using Cfg = TileConfig<T, W, TileShape::Square>;
  Problem const& p = s.problem;
  Side const m(p.rows, p.row_stride, p.out_row_stride, s.m);
  Side const n(p.cols, p.col_stride, p.out_col_stride, s.n);
  TileWalk const walk(m.extent, n.extent, p.batch.count, Cfg::BM, Cfg::BN);
  split_transpose<Cfg><<<walk.grid(), Cfg::kThreads, 0, stream>>>(p, m, n);
  return cudaGetLastError();
}

}  // namespace

// The chooser (choose.cpp) checked that both sides move in `width`-byte vectors (16 or 4 bytes,
// or single elements) and that the split pays.
cudaError_t launch_split(SplitProblem const& s, int width, cudaStream_t stream) {
  return with_element_type(s.problem.element_size, [&](auto t) -> cudaError_t {
    using T = decltype(t);
    constexpr int E = sizeof(T);
    if (width == 16) return launch_with<T, 16>(s, stream);
    if constexpr (E < 4) if (width == 4) return launch_with<T, 4>(s, stream);
    if constexpr (E < 16) if (width == E) return launch_with<T, E>(s, stream);
    return cudaErrorInvalidValue;
  });
}

}  // namespace cute_transpose
