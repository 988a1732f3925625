// TMA store (sm_90+), the Colfax tutorial's variant: threads read the input tile (coalesced) and
// store it to shared memory in the layout the TMA unit expects for the *output* tile; then one
// thread hands the whole tile to the TMA unit, which writes it to global memory and clips it
// at the matrix edges by itself.
//
// TMA supports 32/64/128-byte swizzles but not the seeds' Swizzle<5,0,5>. The shared tile is
// the 128-byte-swizzled "MN-major" atom (m contiguous, rows of 128 bytes, Swizzle<3,4,3> on byte
// addresses) tiled over (bM,bN) = (128 bytes of m, 64). The output's row pitch (M * element size)
// must be a multiple of 16 bytes; the torch glue checks that and the compute capability.
#include "launch.h"
#include "tiling.cuh"

#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>  // the 128-byte-swizzled shared-memory layout atoms

namespace cute_transpose {
namespace {

using namespace cute;

template <class T>
struct TmaTile {
  using BM = Int<128 / int(sizeof(T))>;  // one 128-byte swizzle row of m
  using BN = Int<64>;
  using Shape = cute::Shape<BM, BN>;
  static constexpr int kThreads = 256;
  using AlongRows = Layout<cute::Shape<_8, _32>, Stride<_32, _1>>;                // (8,32)
  using Smem = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<T>{}, Shape{}));  // (bM,bN)
  // TMA has no 16-byte element type: move 16-byte elements as pairs of 8-byte ones.
  using Internal = conditional_t<sizeof(T) == 16, uint64_t, T>;
};

template <class T>
auto make_tma_store(Problem const& p) {
  using Tile = TmaTile<T>;
  Tensor gOut = make_tensor(make_gmem_ptr(static_cast<T*>(p.dst)),            // (M,N,B)
                            make_layout(make_shape(p.rows, p.cols, p.batch),
                                        make_stride(Int<1>{}, p.rows, p.rows * p.cols)));
  return make_tma_copy<typename Tile::Internal>(SM90_TMA_STORE{}, gOut, typename Tile::Smem{},
                                                typename Tile::Shape{}, Int<1>{});
}

template <class T>
using TmaStore = decltype(make_tma_store<T>(std::declval<Problem const&>()));

template <class T, class Store>
__global__ void __launch_bounds__(TmaTile<T>::kThreads) tma_transpose(Problem p, CUTE_GRID_CONSTANT Store const tma) {
#if defined(CUTE_ARCH_TMA_SM90_ENABLED)
  using Tile = typename TmaTile<T>::Shape;
  using AlongRows = typename TmaTile<T>::AlongRows;
  using Smem = typename TmaTile<T>::Smem;

  // 128-byte swizzles repeat every 1 KiB: the tile must start on a 1 KiB boundary.
  Tensor sTile = make_tensor(make_smem_ptr(shared_tile<T, cosize_v<Smem>, 1024>()), Smem{});  // (bM,bN)
  Tensor mIn = input_view<T>(p);                                    // (M,N,B)
  Tensor mOut = tma.get_tma_tensor(make_shape(p.rows, p.cols, p.batch));  // (M,N,B) TMA coordinates
  Tensor cIn = make_identity_tensor(make_shape(p.rows, p.cols));    // (M,N) -> (m,n)

  TileWalk walk(p, size<0>(Tile{}), size<1>(Tile{}));
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk[t];
    Tensor gIn = local_tile(mIn(_, _, tile.b), Tile{}, make_coord(tile.m, tile.n));   // (bM,bN)
    Tensor cTile = local_tile(cIn, Tile{}, make_coord(tile.m, tile.n));                // (bM,bN)

    //
    // 1. global -> shared, threads along rows (out-of-range elements stay unwritten; TMA clips them)
    //
    copy_tile_part(local_partition(gIn, AlongRows{}, threadIdx.x),    // (bM/8,bN/32)
                   local_partition(sTile, AlongRows{}, threadIdx.x),  // (bM/8,bN/32)
                   local_partition(cTile, AlongRows{}, threadIdx.x),  // (bM/8,bN/32)
                   shape(cIn), tile.interior);
    tma_store_fence();  // make this thread's shared-memory writes visible to the TMA unit
    __syncthreads();

    //
    // 2. shared -> global, one thread issues the TMA store of the whole tile
    //
    if (threadIdx.x == 0) {
      Tensor gOut = local_tile(mOut(_, _, tile.b), Tile{}, make_coord(tile.m, tile.n));  // (bM,bN)
      auto cta_tma = tma.get_slice(Int<0>{});
      copy(tma, cta_tma.partition_S(sTile), cta_tma.partition_D(gOut));
      tma_store_arrive();
      tma_store_wait<0>();  // the store has read sTile before anyone overwrites it
    }
    __syncthreads();
  }
#endif
}

}  // namespace

cudaError_t launch_tma(Problem const& p, cudaStream_t stream) {
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    using Tile = TmaTile<T>;
    auto tma = make_tma_store<T>(p);
    TileWalk walk(p, Tile::BM::value, Tile::BN::value);
    tma_transpose<T, TmaStore<T>><<<walk.grid(), Tile::kThreads, 0, stream>>>(p, tma);
    return cudaGetLastError();
  });
}

int tma_kernel_arch(int element_size) {
  cudaFuncAttributes attr{};
  cudaError_t err = with_element_type(element_size, [&](auto t) {
    using T = decltype(t);
    return cudaFuncGetAttributes(&attr, tma_transpose<T, TmaStore<T>>);
  });
  // ptxVersion is the virtual architecture the loaded code was compiled for: below 90 the
  // kernel body was compiled out (it is then JIT-compiled from older PTX, or absent).
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear it, so the next launch check does not report it
    return 0;
  }
  return attr.ptxVersion;
}

}  // namespace cute_transpose
