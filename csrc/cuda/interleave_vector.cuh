// The Interleave kernel's vector mode: C planes of 16-byte aligned vectors <-> one run of
// C-interleaved vectors, each lane's vectors shuffled (C x K) -> (K x C) in registers. The
// shuffle serves realigned mode too. interleave.cuh has the kernels, their launch and an overview.
#pragma once

#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace interleave_detail {

using Vec = Words<16>;

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

// A warp's staged vectors: lane L's C vectors lie at L * C .. L * C + C - 1, and the lanes of a
// 16-byte shared-memory access (eight at a time) walk them C apart. For C = 4 or 8 that puts the
// eight on 2 or 1 of the 8 bank groups, a 4- or 8-way conflict; rotating each run of 8 vectors by
// its index spreads them (2-way at most), and 8 consecutive vectors still fill all 8 groups.
// Unpacking only: on the H100 the realigned mode of the time, which staged its vectors the same
// way, unpacked 64 x 299^2 x 4 uint8 at 0.68 of clone with the rotation and 0.63 without, but
// packed 0.02-0.04 slower with it (its stores read the stage at i and i - 1, which the rotation
// puts on one group). Other C are left as they are (odd C is conflict-free; 2 and 6 are 2-way
// either way). Realigned mode's `spread` (interleave_realigned.cuh) is conflict-free for every C
// by a bank model; vector mode has not been timed with it.
template <int C, bool kPack>
CUTE_DEVICE int staged(int i) {
  if constexpr (C % 4 == 0 && !kPack) return (i & ~7) | ((i + (i >> 3)) & 7);
  else return i;
}

// Vector mode (16-byte aligned planes). Both global sides move in whole 16-byte vectors. Each
// lane's C vectors on the interleaved side lie C vectors apart from the next lane's, so a warp
// that read or wrote them straight would leave every 32-byte sector half used per access; the
// warp stages its C * 32 vectors of the interleaved side in shared memory and moves that run
// lane by lane instead (pack: after the shuffle, unpack: before it).
template <class T, int C, bool kPack>
CUTE_DEVICE void move_vectors(T const* from, T* to, int64_t plane_stride, int64_t pixels, int64_t x0, int lane,
                              Vec* stage, bool keep) {
  // keep (Problem::keep_inputs): the loads ask the caches to keep the input's lines.
  auto const load = [keep](Vec const* v) { return keep ? load_evict_last(v) : *v; };
  constexpr int K = 16 / int(sizeof(T));
  int64_t const warp_x0 = x0 - lane * K;
  bool const whole_warp = warp_x0 + 32 * K <= pixels;  // the same for every lane of the warp
  if (x0 + K > pixels) {  // past the last whole vector: one element at a time
    for (int64_t x = x0; x < pixels; ++x)
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) {
        if (kPack) to[x * C + c] = from[c * plane_stride + x];
        else to[c * plane_stride + x] = from[x * C + c];
      }
    return;
  }
  Vec in[C], shuffled[C];
  if (!kPack && whole_warp) {
    Vec const* run = reinterpret_cast<Vec const*>(from + warp_x0 * C);
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) stage[staged<C, kPack>(c * 32 + lane)] = load(run + c * 32 + lane);
    __syncwarp();
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) in[c] = stage[staged<C, kPack>(lane * C + c)];
    __syncwarp();  // the stage is reused below and by the next block's pixels
  } else {
    CUTE_UNROLL
    for (int c = 0; c < C; ++c)
      in[c] = kPack ? load(reinterpret_cast<Vec const*>(from + c * plane_stride + x0))
                    : load(reinterpret_cast<Vec const*>(from + x0 * C + c * K));
  }
  shuffle<int(sizeof(T)), C, kPack>(in, shuffled);
  if (kPack && whole_warp) {
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) stage[staged<C, kPack>(lane * C + c)] = shuffled[c];
    __syncwarp();
    Vec* run = reinterpret_cast<Vec*>(to + warp_x0 * C);
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) run[c * 32 + lane] = stage[staged<C, kPack>(c * 32 + lane)];
    __syncwarp();
  } else {
    CUTE_UNROLL
    for (int c = 0; c < C; ++c)
      store_vector(kPack ? to + x0 * C + c * K : to + c * plane_stride + x0, shuffled[c]);
  }
}

}  // namespace interleave_detail
}  // namespace cute_transpose
