// CPU implementation shared by every op: a cache-blocked strided copy, parallel over tiles.
#include <ATen/Parallel.h>

#include <cstring>

#include "glue.h"

namespace cute_transpose {
namespace {

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

template <int Bytes> struct BitsOf;
template <> struct BitsOf<1> { using type = uint8_t; };
template <> struct BitsOf<2> { using type = uint16_t; };
template <> struct BitsOf<4> { using type = uint32_t; };
template <> struct BitsOf<8> { using type = uint64_t; };
template <> struct BitsOf<16> { using type = Bytes16; };

constexpr int64_t kTile = 32;  // 32 x 32 tiles: source and destination lines stay in L1

template <class T>
void run_tiles(Problem const& p) {
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  int64_t const tiles_m = (p.rows + kTile - 1) / kTile;
  int64_t const tiles_n = (p.cols + kTile - 1) / kTile;
  int64_t const tiles = p.batch.count * tiles_m * tiles_n;
  at::parallel_for(0, tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      Offsets const o = p.batch(t / (tiles_m * tiles_n));
      int64_t const i0 = (t / tiles_n) % tiles_m * kTile;
      int64_t const j0 = t % tiles_n * kTile;
      int64_t const i1 = std::min(i0 + kTile, p.rows);
      int64_t const j1 = std::min(j0 + kTile, p.cols);
      T const* s = src + o.in;
      T* d = dst + o.out;
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j)
          d[i * p.out_row_stride + j * p.out_col_stride] = s[i * p.row_stride + j * p.col_stride];
    }
  });
}

}  // namespace

void run_cpu(Problem const& p) {
  switch (p.element_size) {
    case 1: return run_tiles<BitsOf<1>::type>(p);
    case 2: return run_tiles<BitsOf<2>::type>(p);
    case 4: return run_tiles<BitsOf<4>::type>(p);
    case 8: return run_tiles<BitsOf<8>::type>(p);
    case 16: return run_tiles<BitsOf<16>::type>(p);
  }
  TORCH_CHECK(false, "cute_transpose: unsupported element size ", p.element_size);
}

}  // namespace cute_transpose
