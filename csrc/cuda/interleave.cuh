// The Interleave kernel: a transpose with one side of C = 2..16 elements, where that side is
// interleaved in its tensor -- images moving between NCHW (C planes of pixels) and NHWC (pixels
// of C interleaved channels), tall-skinny and short-wide matrices. Tiling such a matrix leaves
// its tiles almost empty (3 rows of 128), and reading 3 bytes per pixel is slow.
//
// A warp takes 32 * J consecutive pixels, which are C runs of 32 * J elements in the planes and
// one run of 32 * J * C elements on the interleaved side; every global access of the warp stays
// inside one of those runs. Three modes, each in its own file (interleave_<mode>.cuh):
//   vector   (C <= 8, planes 16-byte aligned) each lane moves one 16-byte vector per plane and C
//            consecutive vectors of the interleaved side, shuffled (C x K) -> (K x C) in
//            registers (byte permutes for 1- and 2-byte elements);
//            J = K = 16 / E;
//   realigned (uint8; as vector mode, but planes, batch offsets or the interleaved run not
//            16-byte aligned: odd image sides, offset views) every global access is still an
//            aligned 16-byte vector: a warp stages the aligned vectors that cover its input runs,
//            and each lane writes whole aligned output vectors, shifted into place from the
//            staged ones; only the two ends of each output run go out byte by byte; J = 16;
//   element  (any alignment, any element size, C * E <= 128 bytes, pixels any distance apart on
//            the interleaved side) one element per access, the run staged in shared memory;
//            J = K, or fewer where a warp's run would pass 4 KiB. Unpacking pixels with short
//            gaps between them, it reads the gaps too (work.h, element_run_channels): a kernel
//            of C = the pixel stride that writes only the first `planes` planes. Unpacking
//            2-byte elements, or 4-byte ones with such gaps, it reads the run in the aligned
//            16-byte vectors that cover it (stage_run_vectors), and writes each plane in warp
//            stores that each fill one aligned span of 32 elements (into_span).
//   pack    planes -> interleaved: the Problem's m is the C planes (rows), n the pixels;
//   unpack  interleaved -> planes: n is the C channels (cols), m the pixels.
// In vector mode, pixels past the last whole vector of a row are moved one element at a time.
#pragma once

#include "interleave_vector.cuh"
#include "interleave_realigned.cuh"
#include "interleave_element.cuh"

namespace cute_transpose {
namespace interleave_detail {

constexpr int kThreads = 256;

// Vector and element modes: block t of a matrix takes pixels [t * T * J, (t + 1) * T * J), T its
// threads (blockDim.x, kThreads or fewer: interleave_threads), each warp 32 * J of them, each
// lane (vector mode) J.
// kVectorLoads: element mode reads its dense run in aligned vectors (stage_run_vectors).
template <class T, int C, bool kPack, bool kVector, Gaps G, bool kVectorLoads = false>
__global__ void __launch_bounds__(kThreads) interleave(Problem p, int64_t blocks_per_matrix, int planes,
                                                       unsigned char const* src_end) {
  constexpr int K = pixels_per_lane<T, C, kVector>();
  constexpr int kWarps = kThreads / 32;
  using Staged = cute::conditional_t<kVector, Vec, T>;
  constexpr int kCovered = kVectorLoads ? kRunVectors<T, 32 * K * C> * kPerVector<T> : 32 * K * C;
  constexpr int kStaged = kVector ? 32 * C : kCovered + (kCovered + 31) / 32;  // per warp (padded)
  // Raw bytes: a 16-byte element type has constructors, which __shared__ variables may not run.
  __shared__ alignas(16) unsigned char raw[kWarps * kStaged * sizeof(Staged)];
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Staged* const stage = reinterpret_cast<Staged*>(raw) + warp * kStaged;
  int64_t const pixels = kPack ? p.cols : p.rows;
  int64_t const plane_stride = kPack ? p.row_stride : p.out_col_stride;  // elements between planes
  int64_t const pixel_stride = kPack ? p.out_col_stride : p.row_stride;  // on the interleaved side
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  int64_t const blocks = p.batch.count * blocks_per_matrix;
  for (int64_t t = blockIdx.x; t < blocks; t += gridDim.x) {
    Offsets const at = p.batch(t / blocks_per_matrix);
    int64_t const x0 = ((t % blocks_per_matrix) * blockDim.x + threadIdx.x) * K;  // this lane's first pixel
    if constexpr (kVector)
      move_vectors<T, C, kPack>(src + at.in, dst + at.out, plane_stride, pixels, x0, lane, stage, p.keep_inputs);
    else
      move_elements<T, C, kPack, G, kVectorLoads>(src + at.in, dst + at.out, plane_stride, pixel_stride, pixels,
                                                  planes, x0 - lane * K, lane, stage, src_end);
  }
}

// Realigned mode: warp w of the grid takes step w % steps of matrix w / steps (blocks of
// kThreads or fewer: interleave_threads).
template <int C, bool kPack>
__global__ void __launch_bounds__(kThreads) realigned(Problem p, unsigned char const* src_end) {
  constexpr int kWarps = kThreads / 32, kStaged = kPack ? kPackStaged<C> : kUnpackStaged<C>;
  __shared__ Vec stages[kWarps * kStaged];
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;  // warps <= kWarps
  int64_t const pixels = kPack ? p.cols : p.rows, steps = (pixels + kRealignedStep - 1) / kRealignedStep;
  int64_t const plane_stride = kPack ? p.row_stride : p.out_col_stride;
  auto const* src = static_cast<unsigned char const*>(p.src);
  auto* dst = static_cast<unsigned char*>(p.dst);
  Vec* const stage = stages + warp * kStaged;
  for (int64_t w = int64_t(blockIdx.x) * warps + warp; w < p.batch.count * steps; w += int64_t(gridDim.x) * warps) {
    Offsets const at = p.batch(w / steps);
    int64_t const x0 = (w % steps) * kRealignedStep;
    if constexpr (kPack) pack_realigned<C>(src + at.in, dst + at.out, plane_stride, pixels, x0, src_end, lane, stage);
    else unpack_realigned<C>(src + at.in, dst + at.out, plane_stride, pixels, x0, src_end, lane, stage);
  }
}

// Threads a block: kThreads, halved (down to a warp) while the grid would have fewer than two
// blocks an SM, so that small work spreads over the GPU's SMs rather than queueing on a few of
// them: (50497, 5) float32 unpacked one element per access makes 50 blocks of 256 threads, 198
// of 64. A warp's work is the same at any block size. On the H100, over the small-work tuning
// grid's 101 shapes that interleave runs (2^15-2^20 elements; shrunk blocks and blocks of 256
// threads each timed beside one clone, in two runs back to back), shrunk blocks ran 1.19 x as
// fast in vector mode (60 shapes), 1.07 x one element per access (36) and 1.06 x realigned (5);
// over the main grids' 420 (2^20 elements and up, where grids rarely fall under two blocks an
// SM), 0.995-1.0 x.
inline int interleave_threads(int64_t lanes_per_matrix, int64_t matrices) {
  int64_t const enough = 2 * int64_t(sm_count());
  int threads = kThreads;
  while (threads > 32 && matrices * ((lanes_per_matrix + threads - 1) / threads) < enough) threads /= 2;
  return threads;
}

template <class T, int C, bool kPack, bool kVector>
cudaError_t launch_with(Problem const& p, int planes, cudaStream_t stream) {
  constexpr int K = pixels_per_lane<T, C, kVector>();
  int64_t const pixels = kPack ? p.cols : p.rows;
  int64_t const lanes = (pixels + K - 1) / K;  // a matrix's lanes
  int const threads = interleave_threads(lanes, p.batch.count);
  int64_t const per_matrix = (lanes + threads - 1) / threads;
  int64_t const blocks = p.batch.count * per_matrix;
  auto kernel = interleave<T, C, kPack, kVector, Gaps::None>;
  // Vector mode has no gaps (the chooser checked); uint8 planes off the 16-byte grid realign
  // (the chooser gives wider elements one element per access there: choose.cpp, interleave_width).
  if constexpr (kVector && sizeof(T) == 1) {
    if (!interleave_vectors_aligned(p, kPack)) {
      int64_t const steps = (pixels + kRealignedStep - 1) / kRealignedStep;  // a matrix's warps
      int const realigned_threads = interleave_threads(32 * steps, p.batch.count);
      int64_t const grid = (p.batch.count * steps + realigned_threads / 32 - 1) / (realigned_threads / 32);
      realigned<C, kPack><<<unsigned(grid < INT_MAX ? grid : INT_MAX), realigned_threads, 0, stream>>>(p, input_end(p));
      return cudaGetLastError();
    }
  } else if constexpr (!kVector) {
    bool const skips = (kPack ? p.out_col_stride : p.row_stride) != C;
    if (skips) kernel = interleave<T, C, kPack, false, Gaps::Skip>;
    if constexpr (!kPack) {  // a dense run, read in aligned vectors where that measured faster
      if (planes != C) kernel = interleave<T, C, kPack, false, Gaps::Read, kStagesVectors<T, Gaps::Read>>;
      else if (!skips) kernel = interleave<T, C, kPack, false, Gaps::None, kStagesVectors<T, Gaps::None>>;
    }
  }
  kernel<<<unsigned(blocks < INT_MAX ? blocks : INT_MAX), threads, 0, stream>>>(p, per_matrix, planes, input_end(p));
  return cudaGetLastError();
}

// `channels` of 2 .. kMaxChannels (element mode, channels * E <= 128) or .. kMaxVectorChannels; the
// kernel writes the first `planes` planes.
template <class T, bool kPack, bool kVector>
cudaError_t launch_channels(Problem const& p, int channels, int planes, cudaStream_t stream) {
  constexpr int kMax = kVector ? kMaxVectorChannels : (128 / int(sizeof(T)) < kMaxChannels ? 128 / int(sizeof(T)) : kMaxChannels);
  return with_channel_count<kMax>(
      channels, [&](auto c) { return launch_with<T, decltype(c)::value, kPack, kVector>(p, planes, stream); });
}

}  // namespace interleave_detail

// The chooser (choose.cpp, interleave_width) checked the layout, and for 16-byte vectors the
// alignment; `width` is 16 for vector mode, the element size for element mode (a 16-byte
// element is its own vector: element mode).
template <class T>
cudaError_t launch_interleave_for(Problem const& p, int channels, bool pack, int width, cudaStream_t stream) {
  using namespace interleave_detail;
  if constexpr (sizeof(T) <= 8) {
    if (width > int(sizeof(T)))
      return pack ? launch_channels<T, true, true>(p, channels, channels, stream)
                  : launch_channels<T, false, true>(p, channels, channels, stream);
  }
  if (pack) return launch_channels<T, true, false>(p, channels, channels, stream);
  int const run = int(element_run_channels(channels, p.row_stride, int(sizeof(T)), false));
  return launch_channels<T, false, false>(p, run, channels, stream);
}

cudaError_t launch_interleave_e1(Problem const& p, int channels, bool pack, int width, cudaStream_t stream);
cudaError_t launch_interleave_e2(Problem const& p, int channels, bool pack, int width, cudaStream_t stream);
cudaError_t launch_interleave_e4(Problem const& p, int channels, bool pack, int width, cudaStream_t stream);
cudaError_t launch_interleave_e8(Problem const& p, int channels, bool pack, int width, cudaStream_t stream);
cudaError_t launch_interleave_e16(Problem const& p, int channels, bool pack, int width, cudaStream_t stream);

}  // namespace cute_transpose
