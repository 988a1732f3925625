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

#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace interleave_detail {

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

// A warp's staged vectors: lane L's C vectors lie at L * C .. L * C + C - 1, and the lanes of a
// 16-byte shared-memory access (eight at a time) walk them C apart. For C = 4 or 8 that puts the
// eight on 2 or 1 of the 8 bank groups, a 4- or 8-way conflict; rotating each run of 8 vectors by
// its index spreads them (2-way at most), and 8 consecutive vectors still fill all 8 groups.
// Unpacking only: on the H100 the realigned mode of the time, which staged its vectors the same
// way, unpacked 64 x 299^2 x 4 uint8 at 0.68 of clone with the rotation and 0.63 without, but
// packed 0.02-0.04 slower with it (its stores read the stage at i and i - 1, which the rotation
// puts on one group). Other C are left as they are (odd C is conflict-free; 2 and 6 are 2-way
// either way). Realigned mode's `spread` (below) is conflict-free for every C by a bank model;
// vector mode has not been timed with it.
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

// Realigned mode (uint8, planes or the interleaved run off the 16-byte grid). A warp step takes
// 512 pixels, [x0, x0 + 512) of one matrix, and writes the aligned output vectors whose first
// byte belongs to those pixels: every vector is a whole aligned 16-byte store, no two warps write
// into one vector, and only the bytes before a run's first aligned vector (by the warp at x0 = 0)
// and the run's last partial vector go out byte by byte. The step's input runs are read raw, in
// the aligned vectors that cover them, into the warp's stage; each lane then reads the staged
// vectors around its bytes and shifts them into place (shift_bytes). A whole aligned vector that
// holds some of the input's bytes stays inside the input's allocation (allocations start on
// 256-byte boundaries), except at the input's very end, which the vector that crosses it reads
// byte by byte (load_within).
constexpr int kRealignedStep = 512;  // pixels: 32 lanes x 16 bytes

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

// Byte j of v, j in 0..15 not known at compile time (selects, so that v stays in registers).
CUTE_DEVICE unsigned char byte_of(Vec const& v, int j) {
  uint32_t const word = j < 4 ? v.word[0] : j < 8 ? v.word[1] : j < 12 ? v.word[2] : v.word[3];
  return static_cast<unsigned char>(word >> (8 * (j % 4)));
}

// v to `to`: one store if all of its 16 bytes are before `end`, else the bytes that are.
CUTE_DEVICE void store_before(unsigned char* to, Vec const& v, int64_t end_bytes) {
  if (end_bytes >= 16) store_vector(to, v);
  else
    for (int j = 0; j < end_bytes; ++j) to[j] = byte_of(v, j);
}

// The offset of `at` into its aligned vector, and the bytes from `at` to the next aligned one (0
// if `at` is aligned).
CUTE_DEVICE int offset_in_vector(unsigned char const* at) { return int(reinterpret_cast<uintptr_t>(at) % 16); }
CUTE_DEVICE int bytes_to_vector(unsigned char const* at) { return (16 - offset_in_vector(at)) % 16; }

// The warp loads the aligned vectors that cover each of its N input runs of `bytes` bytes, run
// j from first + j * run_stride, and hands vector i of run j (i < kCover, enough for any run's
// offset) to store(j * kCover + i, vector). Each lane issues its loads, at most kMaxLoads at a
// time (by default all of them), before it stores any, so that the warp has the whole step in
// flight at once. A loop that stored each vector as it arrived waited for one load per
// iteration: on an H200 it unpacked 64 x 299^2 x 4 uint8 at 0.77 of clone and packed it at 0.81,
// against 0.91 and 0.99 with the loads issued together.
template <int N, int kCover, int kMaxLoads = INT_MAX, class Store>
CUTE_DEVICE void stage_covers(unsigned char const* first, int64_t run_stride, int64_t bytes,
                              unsigned char const* from_end, int lane, Store store) {
  constexpr int kPerLane = (N * kCover + 31) / 32;
  constexpr int kGroup = kMaxLoads < kPerLane ? kMaxLoads : kPerLane;
  auto const vector = [&](int k, Vec const*& from) {  // lane's k-th vector, if it holds bytes of its run
    int const idx = lane + 32 * k, j = idx / kCover, i = idx % kCover;
    unsigned char const* const run = first + j * run_stride;
    int const s = offset_in_vector(run);
    from = reinterpret_cast<Vec const*>(run - s) + i;
    return idx < N * kCover && 16 * i < s + bytes;
  };
  CUTE_UNROLL
  for (int k0 = 0; k0 < kPerLane; k0 += kGroup) {
    Vec v[kGroup];
    CUTE_UNROLL
    for (int k = k0; k < k0 + kGroup && k < kPerLane; ++k)
      if (Vec const* from; vector(k, from)) v[k - k0] = load_within(from, from_end);
    CUTE_UNROLL
    for (int k = k0; k < k0 + kGroup && k < kPerLane; ++k)
      if (Vec const* from; vector(k, from)) store(lane + 32 * k, v[k - k0]);
  }
}

// Where a warp's lanes access staged vectors C apart (vectors b + C L, L = 0..7 in each 16-byte
// shared-memory wavefront), C = 2^t u (u odd) puts them on 8 / 2^t of the 8 bank groups. XOR-ing
// the low t bits of each vector's index with the index of its run of 8 spreads them over all 8
// for every b, and keeps 8 consecutive vectors on 8 groups.
template <int C>
CUTE_DEVICE int spread(int i) {
  constexpr int kLowBits = (C & -C) - 1;  // 2^t - 1, at most 7
  return i ^ ((i >> 3) & kLowBits);
}

// Unpacking: plane c's vectors of the step start at pixels y = x0 + d_c + 16 L (lane L; d_c < 16
// the plane's pixels from x0 to its next aligned vector), so the step reads the interleaved
// pixels [x0, x0 + 527). Lane L's vector of plane c is every C-th byte of the 16 C staged bytes
// from C (d_c + 16 L) + c: C + 1 staged vectors, shifted by an amount the same for the whole
// warp, then picked apart (shuffle).
template <int C>
constexpr int kUnpackStaged = (33 * C + 1 + 7) / 8 * 8;  // covers 527 C bytes + 15; whole runs of 8 (spread)

template <int C>
CUTE_DEVICE void unpack_realigned(unsigned char const* from, unsigned char* to, int64_t plane_stride,
                                  int64_t pixels, int64_t x0, unsigned char const* from_end, int lane, Vec* stage) {
  int64_t const span = cute::min(pixels - x0, int64_t(kRealignedStep + 15));
  auto const* run = from + x0 * C;
  int const s = offset_in_vector(run);
  // 7 and 8 channels stage 8 and 9 vectors a lane, 5 at a time: all at once took 96 registers
  // (two blocks an SM), and 64 x 299^2 x 8 unpacked at 0.61 of clone, against 0.68 this way.
  constexpr int kMaxLoads = C >= 7 ? 5 : INT_MAX;
  stage_covers<1, kUnpackStaged<C>, kMaxLoads>(run, 0, span * C, from_end, lane,
                                                [&](int i, Vec const& v) { stage[spread<C>(i)] = v; });
  __syncwarp();
  CUTE_UNROLL
  for (int c = 0; c < C; ++c) {
    unsigned char* const plane = to + c * plane_stride;
    int const d = bytes_to_vector(plane + x0);
    if (x0 == 0 && lane < d && lane < pixels) plane[lane] = run[lane * C + c];  // before the first vector
    int64_t const y = x0 + d + 16 * lane;  // this lane's vector: pixels [y, y + 16)
    if (y >= pixels) continue;
    int const at = s + (d + 16 * lane) * C + c;  // staged byte of pixel y's channel c
    Vec in[C], picked[C];
    Vec next = stage[spread<C>(at / 16)];
    CUTE_UNROLL
    for (int k = 0; k < C; ++k) {
      Vec const here = next;
      next = stage[spread<C>(at / 16 + k + 1)];
      in[k] = shift_bytes(here, next, at % 16);
    }
    shuffle<1, C, false>(in, picked);  // picked[0]: bytes 0, C, 2C, ... of in
    store_before(plane + y, picked[0], pixels - y);
  }
  __syncwarp();  // the stage is reused by the warp's next step
}

// Packing: the step's run vectors start at run bytes C x0 + e + 16 v (e < 16 the run's bytes
// before its first aligned vector; C x0 is a multiple of 16). Lane L's C vectors v = C L ..
// C L + C - 1 start e % C bytes into pixel x0 + 16 L + e / C: the lane takes 17 pixels of each
// plane from there (the step stages each plane's pixels [x0, x0 + 520)), interleaves the first
// 16 (shuffle) and shifts the result by e % C bytes, the 17th pixel filling the end. The lanes'
// vectors go out through the stage, so that each store of the warp is 512 contiguous bytes.
constexpr int kPlaneStaged = 34;  // vectors staged per plane: cover 520 bytes + 15
template <int C>
constexpr int kPackStaged = kPlaneStaged * C;

template <int C>
CUTE_DEVICE void pack_realigned(unsigned char const* from, unsigned char* to, int64_t plane_stride, int64_t pixels,
                                int64_t x0, unsigned char const* from_end, int lane, Vec* stage) {
  int64_t const span = cute::min(pixels - x0, int64_t(kRealignedStep + 8)), bytes = pixels * C;
  int const e = bytes_to_vector(to), q = e / C, r = e % C;
  if (x0 == 0 && lane < e && lane < bytes) to[lane] = from[(lane % C) * plane_stride + lane / C];  // before the first vector
  stage_covers<C, kPlaneStaged>(from + x0, plane_stride, span, from_end, lane,
                                [&](int i, Vec const& v) { stage[i] = v; });
  int s[C];  // each plane's offset from the grid at x0
  CUTE_UNROLL
  for (int c = 0; c < C; ++c) s[c] = offset_in_vector(from + c * plane_stride + x0);
  __syncwarp();
  Vec in[C], run[C];
  uint32_t tail[4] = {};  // the 17th pixel's C bytes
  CUTE_UNROLL
  for (int c = 0; c < C; ++c) {
    int const at = s[c] + q + 16 * lane;  // staged byte of the lane's first pixel
    Vec const here = stage[c * kPlaneStaged + at / 16], next = stage[c * kPlaneStaged + at / 16 + 1];
    in[c] = shift_bytes(here, next, at % 16);
    tail[c / 4] |= uint32_t(byte_of(next, at % 16)) << (8 * (c % 4));
  }
  shuffle<1, C, true>(in, run);
  if (r != 0) {
    Vec const last = {{tail[0], tail[1], tail[2], tail[3]}};
    CUTE_UNROLL
    for (int k = 0; k < C; ++k) run[k] = shift_bytes(run[k], k + 1 < C ? run[k + 1] : last, r);
  }
  __syncwarp();
  CUTE_UNROLL
  for (int k = 0; k < C; ++k) stage[spread<C>(lane * C + k)] = run[k];
  __syncwarp();
  CUTE_UNROLL
  for (int k = 0; k < C; ++k) {
    int64_t const at = x0 * C + e + 16 * (k * 32 + lane);  // the vector's first byte of the run
    if (at < bytes) store_before(to + at, stage[spread<C>(k * 32 + lane)], bytes - at);
  }
  __syncwarp();  // the stage is reused by the warp's next step
}

// Element mode (any alignment, any element size, and pixels on the interleaved side any
// distance apart: a slice x[:, :C] of wider rows too). A warp moves its 32 * K pixels one element
// per access, so that every access of the warp stays in one run: the interleaved run of
// 32 * K * C elements on one side (with gaps when pixels are more than C apart), C runs of
// 32 * K pixels on the other. Shared memory holds the run in the interleaved order, with one
// element of padding after every 32, so the lanes that walk a plane through it (C elements
// apart) fall on different banks.
CUTE_DEVICE int padded(int q) { return q + q / 32; }

// padded(q0 + 32 k) = floor_padded(q0) + 33 k for every k with q0 + 32 k >= 0, q0 of either sign
// (a lane shifted back by into_span starts before its run).
CUTE_DEVICE int floor_padded(int q0) { return q0 + (q0 >> 5); }

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

// Unpacking a dense run (no gaps skipped), the warp may read its run in the aligned 16-byte
// vectors that cover it, V = 16 / E elements each, and write their elements to the stage one by
// one (staged element head + q holds element q of the run; head: the run's elements before its
// first aligned vector). Its loads are then all in flight at once, and V times fewer. Taken
// where it measured faster on an H200 (against one element per access, bit-checked, better of
// two rounds; a grid of random unpacks that the chooser runs in element mode, seed 61):
//   2-byte elements, always: bfloat16 1.13-4.4 x (0.18-0.44 of clone to 0.74-0.96), 19 shapes;
//   4-byte elements where the run carries gaps (Gaps::Read, a slice such as x[:, 1:6] of rows of
//     6): 1.05 x over 23 shapes, two of under 16 us at 0.89 and 0.93 x; without gaps 1.00 x over
//     27 shapes, 0.94-1.09 x: left out;
//   8-byte elements: 0.71-0.95 x over 16 shapes: left out.
// Held out (seed 62), this rule: 1.28 x over 46 shapes, none under 0.97 x. docs/PERFORMANCE.md,
// "Unpacking in element mode: the run read in aligned vectors".
template <class T, Gaps G>
constexpr bool kStagesVectors = sizeof(T) == 2 || (sizeof(T) == 4 && G == Gaps::Read);

// Elements of T in a 16-byte vector.
template <class T>
constexpr int kPerVector = 16 / int(sizeof(T));

// The aligned vectors that cover a run of kRun elements (the most a warp's run holds) starting
// up to kPerVector - 1 elements into its first vector.
template <class T, int kRun>
constexpr int kRunVectors = (kRun + 2 * (kPerVector<T> - 1)) / kPerVector<T>;

// Stages the first `count` elements from `run` (stage_covers); returns head.
template <class T, int kRun>
CUTE_DEVICE int stage_run_vectors(T const* run, int count, unsigned char const* from_end, int lane, T* stage) {
  constexpr int V = kPerVector<T>;
  auto const* const bytes = reinterpret_cast<unsigned char const*>(run);
  stage_covers<1, kRunVectors<T, kRun>>(bytes, 0, int64_t(count) * int(sizeof(T)), from_end, lane,
                                        [&](int i, Vec const& v) {
                                          union {
                                            Vec v;
                                            T e[V];
                                          } const in{v};
                                          CUTE_UNROLL
                                          for (int j = 0; j < V; ++j) stage[padded(i * V + j)] = in.e[j];
                                        });
  return offset_in_vector(bytes) / int(sizeof(T));
}

// Unpacking 1-byte elements one per access, a lane makes up to C * K = 128 loads and as many
// stores. Written as run[32 i + lane] and plane[32 j + lane], each access computed its own 64-bit
// address, and the kernels held 150-210 registers (one or two blocks an SM); written as one base
// a lane plus constant steps (kStepped), they hold 40-80. On an H200, 16-channel uint8 unpacks
// ran 2.7 x as fast over 13 shapes, 2 of which first showed it (2.0-3.2 x; 0.16-0.29 of clone
// to 0.47-0.64, where eager reaches 0.12-0.46; probe-only switch, bit-checked, better of two
// rounds). Unpacks of 1-byte elements with gaps read take the same form; none was timed.
// Wider elements keep one address per access where they do not write in whole spans: the one-
// base form for their loads and stores ran 1.00 x over 55 unpacks of 4-16-byte elements, but
// 7-channel float32 ones at 0.88-0.96 x in both of two runs; for their stores alone, 0.985 x
// over 86, float32 ones with 9-10 channels at 0.74-0.78 x (probe-only switch, as above).
template <class T, bool kPack>
constexpr bool kStepped = sizeof(T) == 1 && !kPack;

// A warp that stores 32 consecutive elements of a plane, one a lane, starting r elements into an
// aligned span of 32 elements, straddles two spans: three 32-byte sectors instead of two for
// 2-byte elements, five instead of four for 4-byte ones. Where the warp read its run in aligned
// vectors (kStagesVectors), it writes its planes in whole spans instead: the lanes shift back by
// r = into_span(plane) and the warp takes one store more per plane (move_elements). Measured on
// an H200 against the unshifted stores (a probe-only switch; bit-checked, better of two rounds):
//   design grids (seeds 81-84 and the sweep's 22: 240 element-mode unpacks of 1-16-byte
//   elements, shifted wherever the element was 1-4 bytes): bfloat16 1.13x over 76 (0.95-1.29);
//   float32 with gaps read 1.02x over 40 (0.97-1.13); float32 without gaps (one element per
//   load) 1.00x over 43 (0.90-1.06): left out; uint8 (16 channels) 0.60x over 11: left out; 8-
//   and 16-byte elements were not shifted (their 0.96-1.05 spread is the noise of two runs);
//   held out (seed 85, this rule): 98 unpacks it shifts, 1.08x, none under 0.97x (three of 11-34
//   us at 0.97-0.98): bfloat16 1.12x over 63 (0.80 -> 0.90 of clone), float32 with gaps 1.02x
//   over 35 (0.86 -> 0.88); the 20 it leaves alone 1.00x.
// docs/PERFORMANCE.md, "Unpacking in element mode: planes written in whole spans".
template <class T>
CUTE_DEVICE int into_span(T const* at) {
  return int(reinterpret_cast<uintptr_t>(at) / sizeof(T) % 32);
}

template <class T, int C, bool kPack, Gaps G, bool kVectorLoads>
CUTE_DEVICE void move_elements(T const* from, T* to, int64_t plane_stride, int64_t pixel_stride, int64_t pixels,
                               int written_planes, int64_t warp_x0, int lane, T* stage,
                               unsigned char const* from_end) {
  constexpr bool kGaps = G == Gaps::Skip;
  int const written = G == Gaps::Read ? written_planes : C;
  constexpr int K = pixels_per_lane<T, C, false>();
  constexpr bool kAlignedStores = kVectorLoads;  // planes written in whole spans (into_span)
  int64_t const left = pixels - warp_x0;
  int const n = left < 32 * K ? int(left) : 32 * K;  // pixels of this warp; n <= 0: none
  int64_t const stride = kGaps ? pixel_stride : C;
  // Element q of the warp's interleaved run: channel q % C of pixel q / C.
  auto at = [&](int q) { return kGaps ? (q / C) * stride + q % C : int64_t(q); };
  T const* planes = from + warp_x0;
  T* run = to + warp_x0 * stride;
  if (kPack) {
    // Load i of the lane: pixel x(i) of plane i / K.
    auto const x = [&](int i) { return i % K * 32 + lane; };
    loads_then_stores<C * K>([&](int i) { return x(i) < n; },  // loads first (tiling.cuh)
                             [&](int i) { return planes[i / K * plane_stride + x(i)]; },
                             [&](int i, T const& v) { stage[padded(x(i) * C + i / K)] = v; });
    __syncwarp();
    CUTE_UNROLL
    for (int i = 0; i < C * K; ++i)
      if (int const q = i * 32 + lane; q < n * C) run[at(q)] = stage[padded(q)];
  } else {
    T const* in_run = from + warp_x0 * stride;
    T* out_planes = to + warp_x0;
    int const count = n * C - (C - written);  // read up to the last pixel's last written channel
    int head = 0;
    if constexpr (kVectorLoads) {
      if (n > 0) head = stage_run_vectors<T, 32 * K * C>(in_run, count, from_end, lane, stage);
    } else if constexpr (kStepped<T, kPack> && !kGaps) {  // one base a lane
      // Load i of the lane: element 32 i + lane of the run, staged at padded(32 i + lane) = lane + 33 i.
      T const* const lane_run = in_run + lane;
      loads_then_stores<C * K>([&](int i) { return 32 * i + lane < count; },  // loads first
                               [&](int i) { return lane_run[32 * i]; },
                               [&](int i, T const& v) { stage[lane + 33 * i] = v; });
    } else {
      // Load i of the lane: element q(i) of the warp's run.
      auto const q = [&](int i) { return i * 32 + lane; };
      loads_then_stores<C * K>([&](int i) { return q(i) < count; },  // loads first
                               [&](int i) { return in_run[at(q(i))]; },
                               [&](int i, T const& v) { stage[padded(q(i))] = v; });
    }
    __syncwarp();
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) {
      if (c == written) break;
      if constexpr (kAlignedStores || kStepped<T, kPack>) {
        // Store j of the lane: pixel 32 j + x0 of plane c, staged at padded(head + (32 j + x0) C + c).
        T* const plane = out_planes + c * plane_stride;
        int const x0 = lane - (kAlignedStores ? into_span(plane) : 0), p0 = floor_padded(head + x0 * C + c);
        CUTE_UNROLL
        for (int j = 0; j < K + kAlignedStores; ++j)
          if (unsigned(32 * j + x0) < unsigned(cute::max(n, 0))) plane[x0 + 32 * j] = stage[p0 + 33 * C * j];
      } else {
        CUTE_UNROLL
        for (int j = 0; j < K; ++j)
          if (int const x = j * 32 + lane; x < n) out_planes[c * plane_stride + x] = stage[padded(head + x * C + c)];
      }
    }
  }
  __syncwarp();  // the stage is reused by the next block's pixels
}

// Vector and element modes: block t of a matrix takes pixels [t * kThreads * J, (t + 1) * kThreads
// * J), each warp 32 * J of them, each lane (vector mode) J.
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
    int64_t const x0 = ((t % blocks_per_matrix) * kThreads + threadIdx.x) * K;  // this lane's first pixel
    if constexpr (kVector)
      move_vectors<T, C, kPack>(src + at.in, dst + at.out, plane_stride, pixels, x0, lane, stage);
    else
      move_elements<T, C, kPack, G, kVectorLoads>(src + at.in, dst + at.out, plane_stride, pixel_stride, pixels,
                                                  planes, x0 - lane * K, lane, stage, src_end);
  }
}

// Realigned mode: warp w of the grid takes step w % steps of matrix w / steps.
template <int C, bool kPack>
__global__ void __launch_bounds__(kThreads) realigned(Problem p, unsigned char const* src_end) {
  constexpr int kWarps = kThreads / 32, kStaged = kPack ? kPackStaged<C> : kUnpackStaged<C>;
  __shared__ Vec stages[kWarps * kStaged];
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t const pixels = kPack ? p.cols : p.rows, steps = (pixels + kRealignedStep - 1) / kRealignedStep;
  int64_t const plane_stride = kPack ? p.row_stride : p.out_col_stride;
  auto const* src = static_cast<unsigned char const*>(p.src);
  auto* dst = static_cast<unsigned char*>(p.dst);
  Vec* const stage = stages + warp * kStaged;
  for (int64_t w = int64_t(blockIdx.x) * kWarps + warp; w < p.batch.count * steps; w += int64_t(gridDim.x) * kWarps) {
    Offsets const at = p.batch(w / steps);
    int64_t const x0 = (w % steps) * kRealignedStep;
    if constexpr (kPack) pack_realigned<C>(src + at.in, dst + at.out, plane_stride, pixels, x0, src_end, lane, stage);
    else unpack_realigned<C>(src + at.in, dst + at.out, plane_stride, pixels, x0, src_end, lane, stage);
  }
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
      int64_t const warps = p.batch.count * ((pixels + kRealignedStep - 1) / kRealignedStep);
      int64_t const grid = (warps + kThreads / 32 - 1) / (kThreads / 32);
      realigned<C, kPack><<<unsigned(grid < INT_MAX ? grid : INT_MAX), kThreads, 0, stream>>>(p, input_end(p));
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
  kernel<<<unsigned(blocks < INT_MAX ? blocks : INT_MAX), kThreads, 0, stream>>>(p, per_matrix, planes, input_end(p));
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
