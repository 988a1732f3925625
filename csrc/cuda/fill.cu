// The Fill kernel: a permute whose output's innermost dim the input reads with stride 0 -- an
// expand()ed view such as x[:, None].expand(n, m), or a broadcast bias laid out channels-last --,
// so that every output row repeats one input element. A tile kernel stages that element again
// and again (the realign kernel's cp.async then sends its blocks to the same few L2 lines: 0.06
// of clone on an H200 for a bfloat16 (434909, 367) expand), and the gather kernel loads it
// once per output element. Here the output is stored in whole aligned 16-byte vectors, as a
// flat run, and each row's element is loaded once per warp that writes it: write traffic only,
// so it can run faster than clone, which reads every byte it writes.
//
//   output          (total) elements, rows of M: element e is row e / M
//   input of row r  src + IndexWalk(r)
//   span            32 x U consecutive vectors, one warp: vector u * 32 + lane by that lane
//
// A span touches at most 32 rows (fill_vectors_per_lane picks U so): lane i loads the element of
// the span's row i, and each lane takes the elements of its vector's one or two rows (rows are
// longer than a vector) from the lanes that loaded them, by shuffles. The output's first
// elements before the 16-byte grid and its last ones after the last whole vector (fewer than a
// vector's worth each) are stored one by one, by block 0.
#include "index_walk.cuh"
#include "launch.h"
#include "vector_tile.cuh"

namespace cute_transpose {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;

// x of lane `from`, for elements of any size.
template <class T>
CUTE_DEVICE T shuffle(T x, int from) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  uint32_t w[kWords] = {};
  memcpy(w, &x, sizeof(T));
  CUTE_UNROLL
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_sync(0xffffffffu, w[k], from);
  memcpy(&x, w, sizeof(T));
  return x;
}

// A 16-byte vector of copies of x.
template <class T>
CUTE_DEVICE Words<16> repeated(T x) {
  T copies[16 / sizeof(T)];
  CUTE_UNROLL
  for (auto& c : copies) c = x;
  Words<16> v;
  memcpy(&v, copies, sizeof(v));
  return v;
}

// The first `bytes` bytes of a, the rest of b.
CUTE_DEVICE Words<16> join(Words<16> const& a, Words<16> const& b, int bytes) {
  Words<16> v;
  CUTE_UNROLL
  for (int k = 0; k < 4; ++k) {
    int const keep = cute::min(cute::max(bytes - 4 * k, 0), 4);
    uint32_t const mask = keep == 4 ? ~0u : (1u << (8 * keep)) - 1;
    v.word[k] = (a.word[k] & mask) | (b.word[k] & ~mask);
  }
  return v;
}

template <class T, class Index, int U>
__global__ void __launch_bounds__(kThreads)
    fill_rows(T const* src, T* dst, IndexWalk<Index> rows, typename IndexWalk<Index>::Divider by_row, int64_t M,
              Index total, Index head, Index vectors) {
  constexpr int V = 16 / sizeof(T);
  int const lane = threadIdx.x % 32;
  auto const row_of = [&](Index e) {  // e / M
    Index at;
    return by_row.divmod(at, e);
  };
  if (blockIdx.x == 0) {  // the elements before the first whole vector and after the last
    Index const tail = head + vectors * V, e = Index(threadIdx.x) < head ? Index(threadIdx.x) : tail + Index(threadIdx.x) - head;
    if (Index(threadIdx.x) < head + (total - tail)) dst[e] = src[rows(row_of(e))];
  }
  Index const spans = (vectors + 32 * U - 1) / (32 * U);
  for (Index span = Index(blockIdx.x) * kWarps + Index(threadIdx.x / 32); span < spans;
       span += Index(gridDim.x) * kWarps) {
    Index const first = span * 32 * U, last = cute::min(vectors, first + 32 * U);  // vectors [first, last)
    Index const top = row_of(head + first * V), bottom = row_of(head + last * V - 1);
    T const mine = top + Index(lane) <= bottom ? src[rows(top + Index(lane))] : T{};  // row top + lane's
    CUTE_UNROLL
    for (int u = 0; u < U; ++u) {
      Index const j = cute::min(first + Index(u * 32 + lane), last - 1);
      Index at;  // the vector's first element is element `at` of row r
      Index const r = by_row.divmod(at, head + j * V);
      Words<16> const a = repeated(shuffle(mine, int(r - top)));
      Words<16> const b = repeated(shuffle(mine, cute::min(int(r - top) + 1, 31)));
      int64_t const in_row = M - int64_t(at);  // elements of the vector in row r
      if (first + Index(u * 32 + lane) < last)
        reinterpret_cast<Words<16>*>(dst + head)[j] = in_row >= V ? a : join(a, b, int(in_row) * int(sizeof(T)));
    }
  }
}

template <class T, class Index, int U>
cudaError_t launch_fill_with(Problem const& p, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  IndexWalk<Index> rows;  // the output's rows, innermost dim first
  rows.add(p.rows, p.row_stride);
  for (int d = p.batch.rank - 1; d >= 0; --d) rows.add(p.batch.size[d], p.batch.in_stride[d]);
  Index const total = Index(uint64_t(p.batch.count) * p.rows * p.cols);
  // elements before dst's first 16-byte boundary
  Index const head = cute::min(total, Index((16 - reinterpret_cast<uintptr_t>(p.dst) % 16) % 16 / sizeof(T)));
  Index const vectors = (total - head) / V;
  uint64_t const spans = (uint64_t(vectors) + 32 * U - 1) / (32 * U);
  uint64_t const blocks = std::min<uint64_t>(std::max<uint64_t>(1, (spans + kWarps - 1) / kWarps), INT_MAX);
  fill_rows<T, Index, U><<<unsigned(blocks), kThreads, 0, stream>>>(
      static_cast<T const*>(p.src), static_cast<T*>(p.dst), rows, typename IndexWalk<Index>::Divider(Index(p.cols)),
      p.cols, total, head, vectors);
  return cudaGetLastError();
}

template <class T, class Index>
cudaError_t launch_fill_of(Problem const& p, cudaStream_t stream) {
  switch (fill_vectors_per_lane(p.cols, sizeof(T))) {
    case 4: return launch_fill_with<T, Index, 4>(p, stream);
    case 2: return launch_fill_with<T, Index, 2>(p, stream);
    case 1: return launch_fill_with<T, Index, 1>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

// The chooser (choose.cpp) checked that the output is the contiguous (batch..., M, N) tensor,
// that the input reads N with stride 0, and that rows are long enough (fill_vectors_per_lane).
cudaError_t launch_fill(Problem const& p, cudaStream_t stream) {
  if (p.col_stride != 0) return cudaErrorInvalidValue;
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    uint64_t const total = uint64_t(p.batch.count) * p.rows * p.cols;
    if (total < kIntWalkLimit) return launch_fill_of<T, int>(p, stream);
    return launch_fill_of<T, uint64_t>(p, stream);
  });
}

}  // namespace cute_transpose
