// The Interleave kernel's element mode: one element per access, any alignment and element size,
// the warp's run staged in shared memory. interleave.cuh has the kernels, their launch and an
// overview.
#pragma once

#include "interleave_realigned.cuh"

namespace cute_transpose {
namespace interleave_detail {

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

}  // namespace interleave_detail
}  // namespace cute_transpose
