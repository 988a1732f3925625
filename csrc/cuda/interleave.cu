// The Interleave kernel: a transpose with one side of C = 2..8 elements, where that side is
// interleaved in its tensor -- images moving between NCHW (C planes of pixels) and NHWC (pixels
// of C interleaved channels), tall-skinny and short-wide matrices. Tiling such a matrix leaves
// its tiles almost empty (3 rows of 128), and reading 3 bytes per pixel is slow.
//
// Here every thread takes K = 16 / E consecutive pixels, which are one 16-byte vector in each of
// the C planes and C consecutive 16-byte vectors of the interleaved side, so both global sides
// move in whole 16-byte vectors, and the (C x K) -> (K x C) shuffle happens in registers (byte
// permutes for 1- and 2-byte elements). No shared memory, no barrier.
//   pack    planes -> interleaved: the Problem's m is the C planes (rows), n the pixels;
//   unpack  interleaved -> planes: n is the C channels (cols), m the pixels.
// Pixels past the last whole vector of a row are moved one element at a time.
#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

using Vec = Words<16>;
constexpr int kThreads = 256;

// Element i (of E bytes, E <= 4) of a vector, in the low bits of a word.
template <int E>
CUTE_DEVICE uint32_t element(Vec const& v, int i) {
  constexpr int kPerWord = 4 / E;
  uint32_t const w = v.word[i / kPerWord];
  return E == 4 ? w : (w >> (8 * E * (i % kPerWord))) & ((1u << (8 * E)) - 1);
}

// The C x K shuffle. Element q of the interleaved side (C vectors, concatenated) is channel
// q % C of pixel q / C; element x of plane c is pixel x of channel c.
//   pack:   out (interleaved) element q = in[q % C] (planes) element q / C
//   unpack: out[c] (planes) element x   = in (interleaved) element x * C + c
template <int E, int C, bool kPack>
CUTE_DEVICE void shuffle(Vec const (&in)[C], Vec (&out)[C]) {
  constexpr int K = 16 / E;
  auto source = [](int q, int& vec, int& elem) {  // q: linear index on the output side
    int const s = kPack ? (q % C) * K + q / C : (q % K) * C + q / K;
    vec = s / K;
    elem = s % K;
  };
  if constexpr (E >= 4) {
    constexpr int kWords = E / 4;
    CUTE_UNROLL
    for (int q = 0; q < C * K; ++q) {
      int vec, elem;
      source(q, vec, elem);
      CUTE_UNROLL
      for (int w = 0; w < kWords; ++w) out[q / K].word[(q % K) * kWords + w] = in[vec].word[elem * kWords + w];
    }
  } else {
    constexpr int kPerWord = 4 / E;
    CUTE_UNROLL
    for (int w = 0; w < 4 * C; ++w) {  // output words
      uint32_t word = 0;
      CUTE_UNROLL
      for (int k = 0; k < kPerWord; ++k) {
        int vec, elem;
        source(w * kPerWord + k, vec, elem);
        word |= element<E>(in[vec], elem) << (8 * E * k);
      }
      out[w / 4].word[w % 4] = word;
    }
  }
}

template <class T, int C, bool kPack>
__global__ void __launch_bounds__(kThreads) interleave(Problem p, int64_t blocks_per_matrix) {
  constexpr int K = 16 / int(sizeof(T));
  // pack: a warp's C * 32 output vectors are one contiguous run, but each lane holds C of them
  // C vectors apart; storing them so would leave every 32-byte sector half-written per store.
  // The warp stages them in shared memory and stores the run lane by lane instead.
  __shared__ Vec stage[kPack ? kThreads / 32 : 1][kPack ? 32 * C : 1];
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t const pixels = kPack ? p.cols : p.rows;
  int64_t const plane_stride = kPack ? p.row_stride : p.out_col_stride;  // elements between planes
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  int64_t const blocks = p.batch.count * blocks_per_matrix;
  for (int64_t t = blockIdx.x; t < blocks; t += gridDim.x) {
    Offsets const at = p.batch(t / blocks_per_matrix);
    int64_t const x0 = ((t % blocks_per_matrix) * kThreads + threadIdx.x) * K;  // first pixel
    int64_t const warp_x0 = x0 - lane * K;
    bool const whole_warp = warp_x0 + 32 * K <= pixels;  // the same for every lane of the warp
    T const* planes_or_pixels = src + at.in;
    T* out = dst + at.out;
    if (x0 + K <= pixels) {
      Vec in[C], shuffled[C];
      CUTE_UNROLL
      for (int c = 0; c < C; ++c)
        in[c] = kPack ? *reinterpret_cast<Vec const*>(planes_or_pixels + c * plane_stride + x0)
                      : *reinterpret_cast<Vec const*>(planes_or_pixels + x0 * C + c * K);
      shuffle<int(sizeof(T)), C, kPack>(in, shuffled);
      if (kPack && whole_warp) {
        CUTE_UNROLL
        for (int c = 0; c < C; ++c) stage[warp][lane * C + c] = shuffled[c];
        __syncwarp();
        CUTE_UNROLL
        for (int c = 0; c < C; ++c)
          reinterpret_cast<Vec*>(out + warp_x0 * C)[c * 32 + lane] = stage[warp][c * 32 + lane];
        __syncwarp();  // the stage is reused by the next block's pixels
      } else {
        CUTE_UNROLL
        for (int c = 0; c < C; ++c) {
          T* to = kPack ? out + x0 * C + c * K : out + c * plane_stride + x0;
          *reinterpret_cast<Vec*>(to) = shuffled[c];
        }
      }
    } else {
      for (int64_t x = x0; x < pixels; ++x)
        CUTE_UNROLL
        for (int c = 0; c < C; ++c) {
          if (kPack) out[x * C + c] = planes_or_pixels[c * plane_stride + x];
          else out[c * plane_stride + x] = planes_or_pixels[x * C + c];
        }
    }
  }
}

template <class T, int C, bool kPack>
cudaError_t launch_with(Problem const& p, cudaStream_t stream) {
  constexpr int K = 16 / int(sizeof(T));
  int64_t const pixels = kPack ? p.cols : p.rows;
  int64_t const per_matrix = ((pixels + K - 1) / K + kThreads - 1) / kThreads;
  int64_t const blocks = p.batch.count * per_matrix;
  interleave<T, C, kPack><<<unsigned(blocks < INT_MAX ? blocks : INT_MAX), kThreads, 0, stream>>>(p, per_matrix);
  return cudaGetLastError();
}

template <class T, bool kPack>
cudaError_t launch_channels(Problem const& p, int channels, cudaStream_t stream) {
  switch (channels) {
    case 2: return launch_with<T, 2, kPack>(p, stream);
    case 3: return launch_with<T, 3, kPack>(p, stream);
    case 4: return launch_with<T, 4, kPack>(p, stream);
    case 5: return launch_with<T, 5, kPack>(p, stream);
    case 6: return launch_with<T, 6, kPack>(p, stream);
    case 7: return launch_with<T, 7, kPack>(p, stream);
    case 8: return launch_with<T, 8, kPack>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

// The chooser (choose.cpp, interleave_fits) checked the layout and 16-byte alignment.
cudaError_t launch_interleave(Problem const& p, int channels, bool pack, cudaStream_t stream) {
  return with_element_type(p.element_size, [&](auto t) -> cudaError_t {
    using T = decltype(t);
    if constexpr (sizeof(T) > 8) {
      return cudaErrorInvalidValue;
    } else {
      return pack ? launch_channels<T, true>(p, channels, stream) : launch_channels<T, false>(p, channels, stream);
    }
  });
}

}  // namespace cute_transpose
