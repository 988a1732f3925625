// The Stage kernel: a transpose with a short side of 2-8 elements -- C planes of N pixels to N
// pixels of C interleaved elements, or back -- staged through shared memory one element per
// access, so that both global sides walk their own order: the interleaved side runs of C * Threads
// consecutive elements, the planes side C runs of Threads. Where the interleave kernel needs
// 16-byte vectors on the grid and the lanes kernel walks the output alone (its reads C elements
// apart on the other side), this kernel takes any strides: offset, stepped and broadcast inputs,
// planes off the 16-byte grid.
//
// The chooser does not pick it: timed as the sweep times on the H100, it ran 0.92-0.94 x the
// lanes kernel's speed on small transposes with a short side (docs/PERFORMANCE.md, "A short side
// staged through shared memory"). It runs by name, and under autotuning where it measures fastest
// (on a few large stepped float64 inputs, 1.1-1.2 x ATen's copy).
#include "launch.h"
#include "tiling.cuh"

namespace cute_transpose {
namespace {

constexpr int kStageThreads = 128;  // one pixel a thread: in the probe, 1.00-1.08 x the time of 256

// The two global sides of one block: Threads pixels of C elements. The output is contiguous
// (batch..., M, N); the plan's short side is M (planes out: unpack) or N (pixels out: pack).
struct StageShape {
  int64_t pixels;       // N when unpacking, M when packing
  int64_t tiles;        // ceil(pixels / Threads): blocks per matrix of the batch
  int64_t pixel_stride; // input stride between pixels
  int64_t plane_stride; // input stride between the C elements of a pixel
};

// Unpack: out[c][x] = in[c * plane_stride + x * pixel_stride] -- loads walk (x, c) with c fastest,
// stores each plane. Pack: out[x][c] = in[x * pixel_stride + c * plane_stride] -- loads each
// plane, stores walk (x, c) with c fastest. The shared tile is (C, Threads), its rows padded by
// one element (the probe's layout).
template <class T, int C, bool Unpack, int Threads>
__global__ void __launch_bounds__(Threads)
    stage(T const* __restrict__ src, T* __restrict__ dst, StageShape s, Batch batch) {
  using namespace cute;
  __shared__ alignas(16) unsigned char staged[C * (Threads + 1) * sizeof(T)];
  Tensor tile = make_tensor(make_smem_ptr(reinterpret_cast<T*>(staged)),
                            make_layout(make_shape(Int<C>{}, Int<Threads>{}), make_stride(Int<Threads + 1>{}, _1{})));  // (C,P)
  int64_t const b = blockIdx.x / s.tiles;
  int64_t const x0 = (blockIdx.x - b * s.tiles) * Threads;
  Offsets const at = batch(b);
  src += at.in + x0 * s.pixel_stride;
  dst += at.out + (Unpack ? x0 : x0 * C);
  int const n = int(cute::min(int64_t(Threads), s.pixels - x0));  // this block's pixels
  int const t = threadIdx.x;
  T v[C];
  if constexpr (Unpack) {  // the input interleaved: element k * Threads + t of the block's C * n
    CUTE_UNROLL
    for (int k = 0; k < C; ++k) {
      int const q = k * Threads + t, x = q / C, c = q - x * C;
      if (x < n) v[k] = src[x * s.pixel_stride + c * s.plane_stride];
    }
    CUTE_UNROLL
    for (int k = 0; k < C; ++k) {
      int const q = k * Threads + t, x = q / C, c = q - x * C;
      if (x < n) tile(c, x) = v[k];
    }
    __syncthreads();
    CUTE_UNROLL
    for (int c = 0; c < C; ++c)
      if (t < n) dst[c * s.pixels + t] = tile(c, t);
  } else {  // the input in planes: pixel t of each
    CUTE_UNROLL
    for (int c = 0; c < C; ++c)
      if (t < n) v[c] = src[t * s.pixel_stride + c * s.plane_stride];
    CUTE_UNROLL
    for (int c = 0; c < C; ++c)
      if (t < n) tile(c, t) = v[c];
    __syncthreads();
    CUTE_UNROLL
    for (int k = 0; k < C; ++k) {
      int const q = k * Threads + t, x = q / C, c = q - x * C;
      if (x < n) dst[q] = tile(c, x);
    }
  }
}

// `channels` of 2 .. kStageMaxChannels.
template <class T, bool Unpack>
cudaError_t launch_stage_with(Problem const& p, int channels, StageShape const& s, cudaStream_t stream) {
  int64_t const blocks = s.tiles * p.batch.count;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  return with_channel_count<kStageMaxChannels>(channels, [&](auto c) {
    stage<T, decltype(c)::value, Unpack, kStageThreads><<<unsigned(blocks), kStageThreads, 0, stream>>>(
        static_cast<T const*>(p.src), static_cast<T*>(p.dst), s, p.batch);
    return cudaGetLastError();
  });
}

}  // namespace

// The chooser (choose.cpp) checked that the output is the contiguous (batch..., M, N) tensor and
// that M or N (the short side, `channels` of it) is 2-8 elements.
cudaError_t launch_stage(Problem const& p, cudaStream_t stream) {
  if (p.batch.count * p.rows * p.cols == 0) return cudaSuccess;
  bool const unpack = stage_planes_out(p);
  int const channels = int(unpack ? p.rows : p.cols);
  int64_t const pixels = unpack ? p.cols : p.rows, tiles = (pixels + kStageThreads - 1) / kStageThreads;
  StageShape const s = unpack ? StageShape{pixels, tiles, p.col_stride, p.row_stride}
                              : StageShape{pixels, tiles, p.row_stride, p.col_stride};
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    return unpack ? launch_stage_with<T, true>(p, channels, s, stream) : launch_stage_with<T, false>(p, channels, s, stream);
  });
}

}  // namespace cute_transpose
