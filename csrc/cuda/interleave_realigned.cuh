// The Interleave kernel's realigned mode: vector mode for uint8 planes or runs off the 16-byte
// grid. Its loads of the aligned vectors that cover a run (stage_covers) serve element mode too.
// interleave.cuh has the kernels, their launch and an overview.
#pragma once

#include "interleave_vector.cuh"

namespace cute_transpose {
namespace interleave_detail {

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

}  // namespace interleave_detail
}  // namespace cute_transpose
