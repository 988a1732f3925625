// The Lean kernel: the transpose of small work (and of the classes the tuning table ranks it first
// in: batches of small matrices, mostly 1- and 2-byte elements). A tensor of a few MiB takes a few
// microseconds to copy, and what decides the time is how long each warp's chain of instructions
// runs from its first load to its last store, and how many warps overlap while it does. The tile
// kernel (tile_transpose.cuh) is built for large work, and its chain is long: 64-bit indexing, a
// walk that divides a tile index into tile and batch coordinates, up to six batch dims, V x V
// blocks of up to 16 vectors a thread. On (8, 12, 128, 64) bfloat16 keys transposed it ran 640
// instructions a warp in 2-warp blocks where Triton's tile kernel ran 142 in 4-warp ones (Nsight
// Compute, docs/PERFORMANCE.md "Small work").
//
// Here each thread's chain is short:
//   - one tile per block, placed straight by blockIdx (x: n-tiles, y: m-tiles, z: the batch,
//     of up to three dims; x and y swapped where the chooser walks m-tiles first,
//     Problem::m_first), every offset in 32 bits;
//   - phase 1: each thread loads one vector of an input row (16 bytes, or one element where
//     the input's rows are off the 16-byte grid) and writes its elements down a column of the
//     transposed shared tile sT(n, m);
//   - phase 2: each thread reads one vector along a row of sT -- a piece of an output row --
//     and stores it (16 bytes, or one element where the output's rows are off the grid).
// The two sides pick their widths on their own (the chooser, choose.cpp: lean_width). On the keys
// transposed this ran 100 instructions a warp, 3.84 us against Triton's 3.74 us (Nsight Compute).
// For larger work (from 2^22 elements) the tile takes one of the other shapes of lean_tile
// (tile_config.h: tall, wide or large; choose.cpp, lean_shape): the same threads, each loading
// and storing four vectors (the loops below step through them; phase 1 issues all its loads
// before its first store), so that more bytes are in flight, and tall tiles write output runs
// four times as long.
//
// Shared memory is swizzled in units of U elements: the unit index of m is XORed with the
// input vector column n / VI, so the column writes of phase 1 -- a warp writes WR consecutive m
// of WC different rows n -- fall in different banks, while each unit stays whole for the vector
// reads of phase 2 (U >= VO).
#include "launch.h"
#include "small_grid.cuh"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

template <class T_, int VI_, int VO_, TileShape Shape>
struct LeanTile {
  using T = T_;
  static constexpr bool kKeep = false;  // loads through load_evict_last (KeepInputs)
  static constexpr int VI = VI_, VO = VO_;  // elements per vector: input side, output side
  static constexpr TileDims kDims = lean_tile(sizeof(T), Shape);
  static constexpr int BM = kDims.bm, BN = kDims.bn, kThreads = kDims.threads;
  using VecIn = VecOf<VI * int(sizeof(T))>;
  using VecOut = VecOf<VO * int(sizeof(T))>;
  // Phase 1: CN vectors per input row, R1 rows per step; phase 2: CM vectors per output row,
  // R2 rows per step.
  static constexpr int CN = BN / VI, R1 = kThreads / CN;
  static constexpr int CM = BM / VO, R2 = kThreads / CM;
  static_assert(kThreads % CN == 0 && BM % R1 == 0 && kThreads % CM == 0 && BN % R2 == 0);
  // A warp's phase-1 step covers WR rows (m) of min(CN, 32) vector columns (n).
  static constexpr int WR = CN >= 32 ? 1 : 32 / CN;
  static constexpr int U = WR > VO ? (WR < BM ? WR : BM) : VO;
  using Smem = decltype(cute::composition(
      cute::Swizzle<log2i(BM / U), log2i(U), log2i(BM) + log2i(VI) - log2i(U)>{},
      cute::Layout<cute::Shape<cute::Int<BN>, cute::Int<BM>>, cute::Stride<cute::Int<BM>, cute::_1>>{}));  // (BN,BM)
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads) lean_transpose(SmallGrid const a) {
  using namespace cute;
  using T = typename Cfg::T;
  constexpr int VI = Cfg::VI, VO = Cfg::VO, BM = Cfg::BM, BN = Cfg::BN;
  __shared__ alignas(16) unsigned char smem[BM * BN * sizeof(T)];
  Tensor sT = make_tensor(make_smem_ptr(reinterpret_cast<T*>(smem)), typename Cfg::Smem{});  // (BN,BM)

  int m0, n0, in_at, out_at;
  a.tile(BM, BN, m0, n0, in_at, out_at);
  T const* src = static_cast<T const*>(a.src) + in_at;
  T* dst = static_cast<T*>(a.dst) + out_at;
  int const rows = a.rows - m0, cols = a.cols - n0;  // what is left of the matrix from the tile's corner

  //
  // 1. input rows -> columns of sT: this thread's vectors of one column n, rows m(i)
  //
  int const n = threadIdx.x % Cfg::CN * VI;
  auto const m = [](int i) { return int(threadIdx.x) / Cfg::CN + i * Cfg::R1; };
  auto const inside = [&](int i) { return m(i) < rows && n < cols; };
  auto const load = [&](int i) {
    return load_input<Cfg::kKeep>(
        reinterpret_cast<typename Cfg::VecIn const*>(src + m(i) * a.row_stride + n * a.col_stride));
  };
  auto const store = [&](int i, typename Cfg::VecIn const& v) {
    T e[VI];
    memcpy(e, &v, sizeof(v));
    // Rows n .. n + VI - 1 of sT share their swizzle (it depends on n / VI): one address.
    T* column = &sT(n, m(i));
    CUTE_UNROLL
    for (int j = 0; j < VI; ++j) column[j * BM] = e[j];
  };
  loads_then_stores<BM / Cfg::R1>(inside, load, store);  // loads first (tiling.cuh)
  __syncthreads();

  //
  // 2. rows of sT -> output rows
  //
  CUTE_UNROLL
  for (int i = 0; i < BN / Cfg::R2; ++i) {
    int const n = threadIdx.x / Cfg::CM + i * Cfg::R2, m = threadIdx.x % Cfg::CM * VO;
    if (n < cols && m < rows) {
      auto const& v = *reinterpret_cast<typename Cfg::VecOut const*>(&sT(n, m));  // a unit holds it whole
      T* to = dst + n * a.out_col_stride + m;
      if constexpr (sizeof(v) == 16) store_vector(to, v);
      else *reinterpret_cast<typename Cfg::VecOut*>(to) = v;
    }
  }
}

template <class T, int VI, int VO, TileShape Shape>
cudaError_t launch_lean_config(SmallGrid const& a, int batch, cudaStream_t stream) {
  return launch_keeping_inputs<LeanTile<T, VI, VO, Shape>, VI * int(sizeof(T))>(a.keep_inputs, [&](auto cfg) {
    using Cfg = decltype(cfg);
    return a.launch_slabs(batch, [&](SmallGrid const& slab, int matrices) {
      lean_transpose<Cfg><<<slab.grid(Cfg::BM, Cfg::BN, matrices), Cfg::kThreads, 0, stream>>>(slab);
      return cudaGetLastError();
    });
  });
}

// The four vector combinations in one tile shape.
template <class T, TileShape Shape>
cudaError_t launch_lean_shape(SmallGrid const& a, int in_width, int out_width, int batch, cudaStream_t stream) {
  constexpr int E = sizeof(T), V = 16 / E;
  bool const vin = in_width == 16, vout = out_width == 16;
  if (vin && vout) return launch_lean_config<T, V, V, Shape>(a, batch, stream);
  if (vin) return launch_lean_config<T, V, 1, Shape>(a, batch, stream);
  if (vout) return launch_lean_config<T, 1, V, Shape>(a, batch, stream);
  return launch_lean_config<T, 1, 1, Shape>(a, batch, stream);
}

}  // namespace

cudaError_t launch_lean(Problem const& p, int in_width, int out_width, TileShape shape, cudaStream_t stream) {
  // The chooser (choose.cpp, small_grid_fits) has checked that every offset fits in 32 bits.
  TileDims const t = lean_tile(p.element_size, shape);
  if (!SmallGrid::launchable(p, t.bm, t.bn)) return cudaErrorInvalidValue;
  SmallGrid const a(p);
  return with_element_type(p.element_size, [&](auto e) -> cudaError_t {
    using T = decltype(e);
    constexpr int E = sizeof(T);
    if ((in_width != 16 && in_width != E) || (out_width != 16 && out_width != E)) return cudaErrorInvalidValue;
    int const batch = int(p.batch.count);
    switch (shape) {
      case TileShape::Square: return launch_lean_shape<T, TileShape::Square>(a, in_width, out_width, batch, stream);
      case TileShape::Tall: return launch_lean_shape<T, TileShape::Tall>(a, in_width, out_width, batch, stream);
      case TileShape::Wide: return launch_lean_shape<T, TileShape::Wide>(a, in_width, out_width, batch, stream);
      case TileShape::Large: return launch_lean_shape<T, TileShape::Large>(a, in_width, out_width, batch, stream);
      default: return cudaErrorInvalidValue;
    }
  });
}

}  // namespace cute_transpose
