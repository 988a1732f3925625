// The Interleave kernel: a transpose with one side of C = 2..16 elements, where that side is
// interleaved in its tensor -- images moving between NCHW (C planes of pixels) and NHWC (pixels
// of C interleaved channels), tall-skinny and short-wide matrices. Tiling such a matrix leaves
// its tiles almost empty (3 rows of 128), and reading 3 bytes per pixel is slow.
//
// A warp takes 32 * J consecutive pixels, which are C runs of 32 * J elements in the planes and
// one run of 32 * J * C elements on the interleaved side; every global access of the warp stays
// inside one of those runs. Two modes:
//   vector   (C <= 8, planes 16-byte aligned) each lane moves one 16-byte vector per plane and C
//            consecutive vectors of the interleaved side, shuffled (C x K) -> (K x C) in
//            registers (byte permutes for 1- and 2-byte elements);
//            J = K = 16 / E;
//   realigned (uint8; as vector mode, but planes, batch offsets or the interleaved run not
//            16-byte aligned: odd image sides, offset views) every global access is still an aligned
//            16-byte vector: a warp loads the aligned vectors that cover each of its runs and
//            shifts them into place with funnel shifts across neighbouring vectors; it stores
//            whole aligned vectors likewise, and writes the ragged ends of its runs byte by byte;
//   element  (any alignment, any element size, C * E <= 128 bytes, pixels any distance apart on
//            the interleaved side) one element per access, the run staged in shared memory;
//            J = K, or fewer where a warp's run would pass 4 KiB. Unpacking pixels with short
//            gaps between them, it reads the gaps too (work.h, element_run_channels): a kernel
//            of C = the pixel stride that writes only the first `planes` planes.
//   pack    planes -> interleaved: the Problem's m is the C planes (rows), n the pixels;
//   unpack  interleaved -> planes: n is the C channels (cols), m the pixels.
// In vector mode, pixels past the last whole vector of a row are moved one element at a time.
#pragma once

#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace interleave_detail {

using Vec = Words<16>;
constexpr int kThreads = 256;
// Realigned mode: at most this many steps of 32 * K pixels a warp takes in turn (move_realigned).
constexpr int kRealignSteps = 4;

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
// Unpacking only: on the H100, realigned 64 x 299^2 x 4 uint8 unpacked one step a warp went from
// 0.63 to 0.68 of clone, but packed 0.02-0.04 slower (its stores read the stage at i and i - 1,
// which the rotation puts on one group); docs/PERFORMANCE.md. Other C are left as they are (odd C
// is conflict-free; 2 and 6 are 2-way either way).
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
                              Vec* stage) {
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
    for (int c = 0; c < C; ++c) stage[staged<C, kPack>(c * 32 + lane)] = run[c * 32 + lane];
    __syncwarp();
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) in[c] = stage[staged<C, kPack>(lane * C + c)];
    __syncwarp();  // the stage is reused below and by the next block's pixels
  } else {
    CUTE_UNROLL
    for (int c = 0; c < C; ++c)
      in[c] = kPack ? *reinterpret_cast<Vec const*>(from + c * plane_stride + x0)
                    : *reinterpret_cast<Vec const*>(from + x0 * C + c * K);
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

// Realigned mode. A run of bytes at an arbitrary address a is covered by the aligned vectors
// starting at a - s, s = a % 16; vector j of the run is bytes [s, s + 16) of aligned vectors j
// and j + 1. A whole aligned vector that holds some of the input's bytes stays inside the
// input's allocation (allocations start on 256-byte boundaries), except at the input's very
// end, which the vector that crosses it reads byte by byte (load_within); writes touch only
// the run's own bytes.

// The aligned vector at `at`, of which only the bytes before `end` are read (the others zero).
CUTE_DEVICE Vec load_within(Vec const* at, unsigned char const* end) {
  auto const* bytes = reinterpret_cast<unsigned char const*>(at);
  if (bytes + 16 <= end) return *at;
  Vec v{};
  CUTE_UNROLL
  for (int i = 0; i < 16; ++i)
    if (bytes + i < end) v.word[i / 4] |= uint32_t(bytes[i]) << (8 * (i % 4));
  return v;
}

CUTE_DEVICE Vec shuffle_from(Vec v, int lane) {
  CUTE_UNROLL
  for (int k = 0; k < 4; ++k) v.word[k] = __shfl_sync(0xffffffffu, v.word[k], lane);
  return v;
}

CUTE_DEVICE Vec shuffle_up(Vec v, int delta) {
  CUTE_UNROLL
  for (int k = 0; k < 4; ++k) v.word[k] = __shfl_up_sync(0xffffffffu, v.word[k], delta);
  return v;
}

// The whole warp stores its lanes' cover vectors: lane L's vector `chunk` is cover vector i of a
// run whose cover starts at `cover` (16-byte aligned) and which holds the cover's bytes
// [first, end); `active` lanes only. A vector all the run's goes out in one store; one the run
// shares with a neighbouring run (at either end) is stored a byte per lane by the whole warp,
// only the run's own bytes.
CUTE_DEVICE void store_covers(unsigned char* cover, int i, Vec const& chunk, int first, int end, bool active,
                              int lane) {
  int const lo = 16 * i < first ? first - 16 * i : 0, hi = end - 16 * i < 16 ? end - 16 * i : 16;
  bool const whole = active && lo == 0 && hi == 16;
  if (whole) store_vector(cover + 16 * i, chunk);
  for (unsigned part = __ballot_sync(0xffffffffu, active && !whole && hi > lo); part; part &= part - 1) {
    int const from = __ffs(part) - 1;
    Vec const v = shuffle_from(chunk, from);
    int const b_lo = __shfl_sync(0xffffffffu, lo, from), b_hi = __shfl_sync(0xffffffffu, hi, from);
    int const at = __shfl_sync(0xffffffffu, i, from);
    uint32_t const word = lane < 4 ? v.word[0] : lane < 8 ? v.word[1] : lane < 12 ? v.word[2] : v.word[3];
    if (lane >= b_lo && lane < b_hi) cover[16 * at + lane] = static_cast<unsigned char>(word >> (8 * (lane % 4)));
  }
}

// Realigned mode, one warp: a stretch of `n` pixels (n >= 1) from `from` and `to` (pack: plane 0
// and the interleaved run at the stretch's first pixel; unpack: the other way round), in steps
// of 32 * K pixels. Within a stretch, the aligned vector that straddles two steps is stored
// whole by the later step, from a vector carried over from the earlier one, so only the two
// ends of the stretch's runs are stored byte by byte. (realign_steps gives packing warps one
// step; stretches of several are unpacking's, and the packing side keeps the same carry.)
template <class T, int C, bool kPack>
CUTE_DEVICE void move_realigned(T const* from, T* to, int64_t plane_stride, int64_t n, unsigned char const* from_end,
                               int lane, Vec* stage) {
  constexpr int E = sizeof(T), K = 16 / E, kStep = 32 * K;  // pixels a step
  // The planes' and the interleaved run's offsets from the 16-byte grid (the same every step).
  auto const offset = [](void const* q) { return int(reinterpret_cast<uintptr_t>(q) % 16); };
  int const run_s = offset(kPack ? static_cast<void const*>(to) : from);
  Vec carry[kPack ? 1 : C] = {};  // the previous step's last vector of the run (pack) or of each plane
  for (int64_t x = 0; x < n; x += kStep) {
    int const step = n - x < kStep ? int(n - x) : kStep;
    bool const first = x == 0, last = x + kStep >= n;
    Vec in[C], shuffled[C];
    if constexpr (kPack) {
      // Each plane: lane j loads aligned vectors j (and lane 31 vector 32), then shifts.
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) {
        T const* const plane = from + c * plane_stride + x;
        int const s = offset(plane), cover = s + step * E;
        Vec const* vectors = reinterpret_cast<Vec const*>(reinterpret_cast<unsigned char const*>(plane) - s);
        Vec const mine = 16 * lane < cover ? load_within(vectors + lane, from_end) : Vec{};
        Vec const next = shuffle_down(mine, 1);
        in[c] = shift_bytes(mine, lane == 31 ? (16 * 32 < cover ? load_within(vectors + 32, from_end) : Vec{}) : next, s);
      }
    } else {
      // The interleaved run: its aligned cover through shared memory, then each lane's C vectors.
      auto const* run = reinterpret_cast<unsigned char const*>(from + x * C);
      int const cover = (run_s + step * C * E + 15) / 16;
      Vec const* vectors = reinterpret_cast<Vec const*>(run - run_s);
      for (int i = lane; i < cover; i += 32) stage[staged<C, kPack>(i)] = load_within(vectors + i, from_end);
      __syncwarp();
      CUTE_UNROLL
      for (int c = 0; c < C; ++c)
        in[c] = shift_bytes(stage[staged<C, kPack>(lane * C + c)], stage[staged<C, kPack>(lane * C + c + 1)], run_s);
      __syncwarp();
    }
    shuffle<E, C, kPack>(in, shuffled);
    if constexpr (kPack) {
      // The run: lane j's C vectors are the step's run vectors j * C .. j * C + C - 1. Cover
      // vector i is run vectors i - 1 and i (vector -1: the previous step's last).
      constexpr int kLast = 32 * C - 1;
      if (!first) carry[0] = stage[staged<C, kPack>(kLast)];
      __syncwarp();
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) stage[staged<C, kPack>(lane * C + c)] = shuffled[c];
      __syncwarp();
      auto* const cover = reinterpret_cast<unsigned char*>(to + x * C) - run_s;
      int const end = run_s + step * C * E, vectors = last ? (end + 15) / 16 : 32 * C;
      for (int i0 = 0; i0 < vectors; i0 += 32) {  // the whole warp each time (store_covers)
        int const i = i0 + lane;
        Vec const here = stage[staged<C, kPack>(i < kLast ? i : kLast)];  // past the run's end: never stored
        Vec const before = i == 0 ? carry[0] : stage[staged<C, kPack>(i <= kLast ? i - 1 : kLast)];
        store_covers(cover, i, run_s ? shift_bytes(before, here, 16 - run_s) : here, first ? run_s : 0, end,
                     i < vectors, lane);
      }
      __syncwarp();
    } else {
      // Each plane: cover vector i is lane i - 1's and lane i's vectors (lane -1: the previous
      // step's lane 31); the vector past lane 31, at the stretch's end only.
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) {
        T* const plane = to + c * plane_stride + x;
        int const s = offset(plane), end = s + step * E;
        auto* const cover = reinterpret_cast<unsigned char*>(plane) - s;
        Vec const up = shuffle_up(shuffled[c], 1);
        Vec const before = lane == 0 ? carry[c] : up;  // lane 0 at the first step: never stored
        Vec const tail = shuffle_from(shuffled[c], 31);
        if (s == 0) {
          store_covers(cover, lane, shuffled[c], 0, end, true, lane);
        } else {
          store_covers(cover, lane, shift_bytes(before, shuffled[c], 16 - s), first ? s : 0, end, true, lane);
          if (last) store_covers(cover, 32, shift_bytes(tail, tail, 16 - s), 0, end, lane == 0, lane);
        }
        carry[c] = tail;
      }
    }
  }
}

// Element mode (any alignment, any element size, and pixels on the interleaved side any
// distance apart: a slice x[:, :C] of wider rows too). A warp moves its 32 * K pixels one element
// per access, so that every access of the warp stays in one run: the interleaved run of
// 32 * K * C elements on one side (with gaps when pixels are more than C apart), C runs of
// 32 * K pixels on the other. Shared memory holds the run in the interleaved order, with one
// element of padding after every 32, so the lanes that walk a plane through it (C elements
// apart) fall on different banks.
CUTE_DEVICE int padded(int q) { return q + q / 32; }

// Pixels per lane: K = 16 / E in vector mode, element_pixels_per_lane (work.h) in element mode.
template <class T, int C, bool kVector>
constexpr int pixels_per_lane() {
  static_assert(C * int(sizeof(T)) <= 128, "element mode takes runs of up to 128 bytes per pixel");
  return kVector ? 16 / int(sizeof(T)) : element_pixels_per_lane(C, int(sizeof(T)));
}

// Gaps::Skip: pixels lie `pixel_stride` apart on the interleaved side, not C. Without gaps, every
// offset into the run is a constant of the unrolled loops, which the compiler folds into the
// accesses; with them, each takes its own 64-bit arithmetic and registers. The two are separate
// kernels: on the H100, one kernel holding both forms (and so the registers of the general one)
// unpacked (7698931, 5) float32 at 0.82 of clone and (7840857, 3) uint8 at 0.29, the gap-free
// kernel alone at 0.95 and 0.95.
//
// Gaps::Read: unpacking a run whose pixels carry gaps read with them (element_run_channels in
// work.h); only the first `written` of the C planes are written, and the warp reads its run up to
// the last pixel's last written channel. A kernel of its own, as the runtime plane count costs
// the gap-free kernel registers (48 -> 64 for 7 float32 channels).
enum class Gaps { None, Read, Skip };

template <class T, int C, bool kPack, Gaps G>
CUTE_DEVICE void move_elements(T const* from, T* to, int64_t plane_stride, int64_t pixel_stride, int64_t pixels,
                               int written_planes, int64_t warp_x0, int lane, T* stage) {
  constexpr bool kGaps = G == Gaps::Skip;
  int const written = G == Gaps::Read ? written_planes : C;
  constexpr int K = pixels_per_lane<T, C, false>();
  int64_t const left = pixels - warp_x0;
  int const n = left < 32 * K ? int(left) : 32 * K;  // pixels of this warp; n <= 0: none
  int64_t const stride = kGaps ? pixel_stride : C;
  // Element q of the warp's interleaved run: channel q % C of pixel q / C.
  auto at = [&](int q) { return kGaps ? (q / C) * stride + q % C : int64_t(q); };
  T const* planes = from + warp_x0;
  T* run = to + warp_x0 * stride;
  if (kPack) {
    CUTE_UNROLL
    for (int c = 0; c < C; ++c)
      CUTE_UNROLL
      for (int j = 0; j < K; ++j)
        if (int const x = j * 32 + lane; x < n) stage[padded(x * C + c)] = planes[c * plane_stride + x];
    __syncwarp();
    CUTE_UNROLL
    for (int i = 0; i < C * K; ++i)
      if (int const q = i * 32 + lane; q < n * C) run[at(q)] = stage[padded(q)];
  } else {
    T const* in_run = from + warp_x0 * stride;
    T* out_planes = to + warp_x0;
    CUTE_UNROLL
    for (int i = 0; i < C * K; ++i)
      if (int const q = i * 32 + lane; q < n * C - (C - written)) stage[padded(q)] = in_run[at(q)];
    __syncwarp();
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) {
      if (c == written) break;
      CUTE_UNROLL
      for (int j = 0; j < K; ++j)
        if (int const x = j * 32 + lane; x < n) out_planes[c * plane_stride + x] = stage[padded(x * C + c)];
    }
  }
  __syncwarp();  // the stage is reused by the next block's pixels
}

// Realigned unpacking of up to 4 channels is held to 64 registers, four blocks of 256 threads
// per SM: left alone, ptxas gave 4 channels 78 registers and the SM three blocks (Nsight
// Compute, 64 x 299^2 x 4 uint8: 31% of warps active), and 64 cost a few spilled words. On the
// H100 that moved 64 x 299^2 x 4 uint8 from 0.74 to 0.77 of clone (docs/PERFORMANCE.md). 0:
// no minimum, the compiler's own choice (for packing it already stays at or under 64).
template <int C, bool kPack, bool kRealign>
constexpr int kRealignedMinBlocks = kRealign && !kPack && C <= 4 ? 4 : 0;

// Both modes: block t of a matrix takes pixels [t * kThreads * J, (t + 1) * kThreads * J), each
// warp 32 * J of them, each lane (vector mode) J.
template <class T, int C, bool kPack, bool kVector, Gaps G, bool kRealign = false>
__global__ void __launch_bounds__(kThreads, kRealignedMinBlocks<C, kPack, kRealign>)
    interleave(Problem p, int64_t blocks_per_matrix, int planes, int steps, unsigned char const* src_end) {
  constexpr int K = pixels_per_lane<T, C, kVector>();
  constexpr int kWarps = kThreads / 32;
  using Staged = cute::conditional_t<kVector, Vec, T>;
  // Realigned mode stages one vector more, at 32 * C (staged() leaves it there).
  constexpr int kStaged = kVector ? 32 * C + kRealign : 33 * K * C;  // per warp
  // Raw bytes: a 16-byte element type has constructors, which __shared__ variables may not run.
  __shared__ alignas(16) unsigned char raw[kWarps * kStaged * sizeof(Staged)];
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Staged* const stage = reinterpret_cast<Staged*>(raw) + warp * kStaged;
  int64_t const pixels = kPack ? p.cols : p.rows;
  int64_t const plane_stride = kPack ? p.row_stride : p.out_col_stride;  // elements between planes
  int64_t const pixel_stride = kPack ? p.out_col_stride : p.row_stride;  // on the interleaved side
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  if constexpr (kRealign) {  // each warp a stretch of `steps` steps of 32 * K pixels
    int64_t const stretch = int64_t(steps) * 32 * K, per_matrix = (pixels + stretch - 1) / stretch;
    for (int64_t w = int64_t(blockIdx.x) * kWarps + warp; w < p.batch.count * per_matrix;
         w += int64_t(gridDim.x) * kWarps) {
      Offsets const at = p.batch(w / per_matrix);
      int64_t const x0 = (w % per_matrix) * stretch, n = pixels - x0 < stretch ? pixels - x0 : stretch;
      move_realigned<T, C, kPack>(src + at.in + x0 * (kPack ? 1 : C), dst + at.out + x0 * (kPack ? C : 1),
                                  plane_stride, n, src_end, lane, stage);
    }
    return;
  }
  int64_t const blocks = p.batch.count * blocks_per_matrix;
  for (int64_t t = blockIdx.x; t < blocks; t += gridDim.x) {
    Offsets const at = p.batch(t / blocks_per_matrix);
    int64_t const x0 = ((t % blocks_per_matrix) * kThreads + threadIdx.x) * K;  // this lane's first pixel
    if constexpr (kVector)
      move_vectors<T, C, kPack>(src + at.in, dst + at.out, plane_stride, pixels, x0, lane, stage);
    else
      move_elements<T, C, kPack, G>(src + at.in, dst + at.out, plane_stride, pixel_stride, pixels, planes,
                                    x0 - lane * K, lane, stage);
  }
}

// Realigned mode's steps per warp, s = 1 .. kRealignSteps. Its warps run in waves of `resident`
// (as many as the GPU holds at once), and a wave lasts about s steps, plus about one more where
// the warps unpack: each stretch then ends in byte-wise stores on C planes. So unpacking takes
// the s that minimises waves(s) * (s + 1), the fewest steps winning ties: a last wave only
// partly full costs as much as a full one. Packing ends each stretch on one run, so its cost is
// waves(s) * s, which is never below one step's waves: one step a warp. On the H100
// (docs/PERFORMANCE.md, "Realigned stretches in waves"), 64 x 299^2 x 4 uint8 unpacked at 0.63
// of clone with one step a warp (3.5 waves) and 0.72 with four (0.9 of a wave); packing 2-4
// channels ran fastest at one step.
inline int realign_steps(int64_t matrices, int64_t steps_per_matrix, int64_t resident, bool pack) {
  if (pack) return 1;
  int best = 1;
  int64_t best_cost = INT64_MAX;
  for (int s = 1; s <= kRealignSteps; ++s) {
    int64_t const warps = matrices * ((steps_per_matrix + s - 1) / s);
    int64_t const cost = (warps + resident - 1) / resident * (s + 1);
    if (cost < best_cost) best = s, best_cost = cost;
  }
  return best;
}

template <class T, int C, bool kPack, bool kVector>
cudaError_t launch_with(Problem const& p, int planes, cudaStream_t stream) {
  constexpr int K = pixels_per_lane<T, C, kVector>();
  int64_t const pixels = kPack ? p.cols : p.rows;
  int64_t const per_matrix = ((pixels + K - 1) / K + kThreads - 1) / kThreads;
  int64_t const blocks = p.batch.count * per_matrix;
  auto kernel = interleave<T, C, kPack, kVector, Gaps::None>;
  // Vector mode has no gaps (the chooser checked); uint8 planes off the 16-byte grid realign
  // (the chooser gives wider elements one element per access there: choose.cpp, interleave_width).
  if constexpr (kVector && sizeof(T) == 1) {
    if (!interleave_vectors_aligned(p, kPack)) {
      auto const realigned = interleave<T, C, kPack, true, Gaps::None, true>;
      static int const resident = (kThreads / 32) * blocks_per_sm(realigned, kThreads) * sm_count();  // warps
      int const per_warp = realign_steps(p.batch.count, (pixels + 32 * K - 1) / (32 * K), resident, kPack);
      int64_t const stretch = int64_t(per_warp) * 32 * K, warps = p.batch.count * ((pixels + stretch - 1) / stretch);
      int64_t const grid = (warps + kThreads / 32 - 1) / (kThreads / 32);
      realigned<<<unsigned(grid < INT_MAX ? grid : INT_MAX), kThreads, 0, stream>>>(p, per_matrix, planes, per_warp,
                                                                                   input_end(p));
      return cudaGetLastError();
    }
  } else if constexpr (!kVector) {
    if ((kPack ? p.out_col_stride : p.row_stride) != C) kernel = interleave<T, C, kPack, false, Gaps::Skip>;
    if constexpr (!kPack)
      if (planes != C) kernel = interleave<T, C, kPack, false, Gaps::Read>;
  }
  kernel<<<unsigned(blocks < INT_MAX ? blocks : INT_MAX), kThreads, 0, stream>>>(p, per_matrix, planes, 1, nullptr);
  return cudaGetLastError();
}

// C = `channels`, of 2 .. kMaxChannels (element mode, C * E <= 128) or .. kMaxVectorChannels;
// the kernel writes the first `planes` planes.
template <class T, bool kPack, bool kVector, int C = 2>
cudaError_t launch_channels(Problem const& p, int channels, int planes, cudaStream_t stream) {
  constexpr int kMax = kVector ? kMaxVectorChannels : (128 / int(sizeof(T)) < kMaxChannels ? 128 / int(sizeof(T)) : kMaxChannels);
  if (channels == C) return launch_with<T, C, kPack, kVector>(p, planes, stream);
  if constexpr (C < kMax) return launch_channels<T, kPack, kVector, C + 1>(p, channels, planes, stream);
  return cudaErrorInvalidValue;
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
