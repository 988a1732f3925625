// TMA store (sm_90+): the transposed tile leaves shared memory through the TMA unit. One thread
// hands the whole output tile to TMA, which writes it to global memory and clips it at the
// matrix edges by itself (tma_store.cuh).
//
// TMA supports 32/64/128-byte swizzles but not the seeds' Swizzle<5,0,5>, so the output tile is
// staged in the 128-byte-swizzled "MN-major" layout TMA understands (m contiguous, rows of 128
// bytes, Swizzle<3,4,3> on byte addresses). Two ways to fill it:
//   vectorized  (whenever the input can be read in vectors of 2+ elements or of whole 8- and
//               16-byte elements, vector_tile.cuh):
//               16-byte loads into a swizzled input tile, V x V register transposes, and 16-byte
//               stores into the TMA tile -- conflict-free: 8 threads that store at once write 8
//               consecutive 16-byte chunks of one 128-byte row, which the swizzle keeps distinct;
//   scalar      (the Colfax tutorial's design, for any other input): threads read elements along
//               rows and store them one by one into the TMA tile -- 4-way bank conflicts for
//               4-byte elements, and slow for 1- and 2-byte ones. Colfax measured it behind the
//               Swizzle<5,0,5> kernel for exactly that reason.
// The output's row pitch (M * element size) must be a multiple of 16 bytes; the torch glue
// checks that and the compute capability.
#include "launch.h"
#include "tma_store.cuh"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

using namespace cute;

// Hands the staged tile sOut to TMA (one thread) and waits until TMA has read it.
template <class Store, class SOut>
CUTE_DEVICE void store_tile(Store const& tma, SOut const& sOut, Problem const& p, TileCoord const& tile) {
  tma_store_fence();  // make every thread's shared-memory writes visible to the TMA unit
  __syncthreads();
  if (threadIdx.x == 0) {
    issue_tma_store(tma, sOut, p, tile);
    tma_store_wait<0>();
  }
  __syncthreads();  // sOut may be refilled
}

//
// Vectorized: vector loads, register transposes, vector stores into the TMA tile.
//

template <class T, int W> struct TmaVecConfig;  // (BM, BN, threads): 16 KiB input + 16 KiB output tile
template <int W> struct TmaVecConfig<uint8_t, W> { using type = VecTile<uint8_t, W, 128, 128, 64>; };
template <int W> struct TmaVecConfig<uint16_t, W> { using type = VecTile<uint16_t, W, 128, 64, 128>; };
template <int W> struct TmaVecConfig<uint32_t, W> { using type = VecTile<uint32_t, W, 64, 64, 256>; };
template <int W> struct TmaVecConfig<uint64_t, W> { using type = VecTile<uint64_t, W, 32, 64, 256>; };
template <int W> struct TmaVecConfig<cute::uint128_t, W> { using type = VecTile<cute::uint128_t, W, 32, 32, 256>; };

template <class Cfg, class Store>
__global__ void __launch_bounds__(Cfg::kThreads) tma_transpose_vectorized(Problem p, CUTE_GRID_CONSTANT Store const tma) {
#if defined(CUTE_ARCH_TMA_SM90_ENABLED)
  using T = typename Cfg::T;
  using Vec = typename Cfg::Vec;
  using SOut = TmaSmem<T, Cfg::BM, Cfg::BN>;
  Tensor sIn = make_tensor(make_smem_ptr(shared_tile<Vec, Cfg::BM * Cfg::CN, 128>()),      // (BM,CN)
                           typename Cfg::Smem{});
  Tensor sOut = make_tensor(make_smem_ptr(shared_tile<T, cosize_v<SOut>, 1024, 1>()), SOut{});  // (BM,BN)
  Tensor tIn_s = local_partition(sIn, typename Cfg::LoadThreads{}, threadIdx.x);           // (BM/(T/CN),1)

  TileWalk walk(p, Cfg::BM, Cfg::BN);
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x) {
    TileCoord tile = walk(t, p.batch);
    load_tile<Cfg>(p, tile, tIn_s);  // 1. global -> shared, whole vectors
    __syncthreads();
    // 2. shared -> registers -> transposed V x V blocks -> the TMA tile; output row n of the
    //    tile is column n of sOut, and a vector is V consecutive m (contiguous there).
    transpose_blocks<Cfg>(sIn, [&](int n, int mv, Vec const& v) {
      *reinterpret_cast<Vec*>(&sOut(mv * Cfg::V, n)) = v;
    });
    store_tile(tma, sOut, p, tile);  // 3. shared -> global, by TMA
  }
#endif
}

template <class T, int W>
cudaError_t launch_vectorized_tma(Problem const& p, cudaStream_t stream) {
  using Cfg = typename TmaVecConfig<T, W>::type;
  auto tma = make_tma_store<T, Cfg::BM, Cfg::BN>(p);
  return launch_keeping_inputs<Cfg, W>(p.keep_inputs, [&](auto cfg) {
    tma_transpose_vectorized<decltype(cfg), TmaStore<T, Cfg::BM, Cfg::BN>>
        <<<TileWalk(p, Cfg::BM, Cfg::BN).grid(), Cfg::kThreads, 0, stream>>>(p, tma);
    return cudaGetLastError();
  });
}

//
// Scalar (Colfax): element-wise loads along rows, element-wise stores into the TMA tile.
//

template <class T>
struct ScalarTile {
  static constexpr int BM = 128 / int(sizeof(T));  // one 128-byte swizzle row of m
  static constexpr int BN = 64;
  static constexpr int kThreads = 256;
  using AlongRows = Layout<Shape<_8, _32>, Stride<_32, _1>>;  // (8,32)
};

template <class T, class Store>
__global__ void __launch_bounds__(256) tma_transpose_scalar(Problem p, CUTE_GRID_CONSTANT Store const tma) {
#if defined(CUTE_ARCH_TMA_SM90_ENABLED)
  using Tile = Shape<Int<ScalarTile<T>::BM>, Int<ScalarTile<T>::BN>>;
  using AlongRows = typename ScalarTile<T>::AlongRows;
  using SOut = TmaSmem<T, ScalarTile<T>::BM, ScalarTile<T>::BN>;
  Tensor sOut = make_tensor(make_smem_ptr(shared_tile<T, cosize_v<SOut>, 1024>()), SOut{});  // (bM,bN)
  for_each_tile<T>(p, Tile{}, [&](TileCoord const& tile, auto const& gIn, auto const& cTile) {  // (bM,bN)
    // global -> shared, threads along rows (out-of-range elements stay unwritten; TMA clips them)
    copy_tile_part(local_partition(gIn, AlongRows{}, threadIdx.x),    // (bM/8,bN/32)
                   local_partition(sOut, AlongRows{}, threadIdx.x),   // (bM/8,bN/32)
                   local_partition(cTile, AlongRows{}, threadIdx.x),  // (bM/8,bN/32)
                   make_shape(p.rows, p.cols), tile.interior);
    store_tile(tma, sOut, p, tile);  // shared -> global, by TMA
  });
#endif
}

template <class T>
auto scalar_kernel() {
  return tma_transpose_scalar<T, TmaStore<T, ScalarTile<T>::BM, ScalarTile<T>::BN>>;
}

template <class T>
cudaError_t launch_scalar_tma(Problem const& p, cudaStream_t stream) {
  using Tile = ScalarTile<T>;
  auto tma = make_tma_store<T, Tile::BM, Tile::BN>(p);
  scalar_kernel<T>()<<<TileWalk(p, Tile::BM, Tile::BN).grid(), Tile::kThreads, 0, stream>>>(p, tma);
  return cudaGetLastError();
}

}  // namespace

// Encoding a TMA descriptor (cuTensorMapEncodeTiled, inside make_tma_copy) needs a current
// CUDA context in the calling thread, and CuTe aborts the process when the encode fails. A
// thread where nothing has made the context current yet, such as the autograd engine's device
// thread running a backward, fails with CUDA_ERROR_INVALID_CONTEXT (201); cudaSetDevice makes
// the device's primary context current.
cudaError_t bind_current_context() {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  return err == cudaSuccess ? cudaSetDevice(device) : err;
}

// `width`: the load width the chooser picked (V >= 2 elements, or whole 8- and 16-byte
// elements); 0 for the scalar (Colfax) path.
cudaError_t launch_tma(Problem const& p, int width, cudaStream_t stream) {
  if (cudaError_t err = bind_current_context(); err != cudaSuccess) return err;
  return with_element_type(p.element_size, [&](auto t) -> cudaError_t {
    using T = decltype(t);
    constexpr int E = sizeof(T);
    if (width == 16) return launch_vectorized_tma<T, 16>(p, stream);
    if constexpr (E <= 8) if (width == 8) return launch_vectorized_tma<T, 8>(p, stream);
    if constexpr (E <= 2) if (width == 4) return launch_vectorized_tma<T, 4>(p, stream);
    return launch_scalar_tma<T>(p, stream);
  });
}

int tma_kernel_arch(int element_size) {
  cudaFuncAttributes attr{};
  cudaError_t err = with_element_type(element_size, [&](auto t) {
    return cudaFuncGetAttributes(&attr, scalar_kernel<decltype(t)>());
  });
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear it, so the next launch check does not report it
    return 0;
  }
  // ptxVersion is the virtual architecture the loaded code was compiled for: below 90 the
  // kernel bodies were compiled out (the code is then JIT-compiled from older PTX, or absent).
  return attr.ptxVersion;
}

}  // namespace cute_transpose
