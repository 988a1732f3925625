// The Fill kernel: a permute whose output's innermost dim the input reads with stride 0 -- an
// expand()ed view such as x[:, None].expand(n, m), or a broadcast bias laid out channels-last --,
// so that every output row repeats one input element. A tile kernel stages that element again
// and again (the realign kernel's cp.async then sends its blocks to the same few L2 lines: 0.06
// of clone on an H200 for a bfloat16 (434909, 367) expand), and the gather kernel loads it
// once per output element. Here the output is stored in whole aligned 16-byte vectors, as a
// flat run, and each row's element is loaded once per warp (or lane) that writes it: write
// traffic only, so it can run faster than clone, which reads every byte it writes.
//
//   output          (total) elements, rows of M: element e is row e / M
//   input of row r  src + IndexWalk(r)
//
// Two forms, by how a warp's 512 bytes meet the rows:
// - span (fill_rows): a warp stores a span of 32 x U consecutive vectors (vector u * 32 + lane
//   by that lane), which touches at most 32 rows (fill_vectors_per_lane picks U so): lane i loads
//   the element of the span's row i, and each lane takes the elements of its vector's one or two
//   rows (rows are longer than a vector) from the lanes that loaded them, by shuffles.
// - lanes (fill_vectors, rows of any length, the only form for rows of 16 bytes or less): each
//   lane loads the elements of its own vector's rows (at most fill_rows_per_vector of them, one
//   after the other in the walk) and joins them; neighbouring lanes load the same few elements,
//   which the cache serves.
// The output's first elements before the 16-byte grid and its last ones after the last whole
// vector (fewer than a vector's worth each) are stored one by one, by block 0.
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

// Block 0's part in either form: the `head` elements before the first whole vector and those
// after the last one, one element per thread.
template <class T, class Index>
CUTE_DEVICE void store_ends(T const* src, T* dst, IndexWalk<Index> const& rows,
                            typename IndexWalk<Index>::Divider const& by_row, Index total, Index head, Index vectors) {
  constexpr int V = 16 / sizeof(T);
  Index const tail = head + vectors * V, e = Index(threadIdx.x) < head ? Index(threadIdx.x) : tail + Index(threadIdx.x) - head;
  Index at;
  if (Index(threadIdx.x) < head + (total - tail)) dst[e] = src[rows(by_row.divmod(at, e))];
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
  if (blockIdx.x == 0) store_ends(src, dst, rows, by_row, total, head, vectors);
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

// The lanes form: vector j by thread j of the grid's walk. Its first element is element `at` of
// row r, so row r + i starts at its element i M - at (while that is under V); the lane loads each
// row's element (the walk steps on from row r, no division) and joins the repeated copies.
template <class T, class Index, int Rows>
__global__ void __launch_bounds__(kThreads)
    fill_vectors(T const* src, T* dst, IndexWalk<Index> rows, typename IndexWalk<Index>::Divider by_row, int64_t M,
                 Index total, Index head, Index vectors) {
  constexpr int V = 16 / sizeof(T);
  if (blockIdx.x == 0) store_ends(src, dst, rows, by_row, total, head, vectors);
  for (Index j = Index(blockIdx.x) * kThreads + Index(threadIdx.x); j < vectors; j += Index(gridDim.x) * kThreads) {
    Index at;
    Index const r = by_row.divmod(at, head + j * V);
    Index coord[IndexWalk<Index>::kMaxRank];
    int64_t offset = rows.start(r, coord);
    T x[Rows] = {src[offset]};  // the elements of rows r, r + 1, ...
    CUTE_UNROLL
    for (int i = 1; i < Rows; ++i)
      if (int64_t(i) * M - int64_t(at) < V) {
        rows.step(coord, offset);
        x[i] = src[offset];
      }
    Words<16> v = repeated(x[0]);
    CUTE_UNROLL
    for (int i = 1; i < Rows; ++i)
      if (int64_t const k = int64_t(i) * M - int64_t(at); k < V) v = join(v, repeated(x[i]), int(k) * int(sizeof(T)));
    reinterpret_cast<Words<16>*>(dst + head)[j] = v;
  }
}

// Runs `kernel`, either form, over the output of p: its rows walked innermost dim first, the
// elements before dst's first 16-byte boundary, and the whole vectors after them, a warp to
// `vectors_per_warp` of them (at least one block: block 0 stores the ends).
template <class T, class Index, class Kernel>
cudaError_t launch_form(Kernel kernel, Problem const& p, int vectors_per_warp, cudaStream_t stream) {
  IndexWalk<Index> rows;
  rows.add(p.rows, p.row_stride);
  for (int d = p.batch.rank - 1; d >= 0; --d) rows.add(p.batch.size[d], p.batch.in_stride[d]);
  Index const total = Index(uint64_t(p.batch.count) * p.rows * p.cols);
  Index const head = cute::min(total, Index((16 - reinterpret_cast<uintptr_t>(p.dst) % 16) % 16 / sizeof(T)));
  Index const vectors = (total - head) / Index(16 / sizeof(T));
  uint64_t const warps = (uint64_t(vectors) + vectors_per_warp - 1) / vectors_per_warp;
  uint64_t const blocks = std::min<uint64_t>(std::max<uint64_t>(1, (warps + kWarps - 1) / kWarps), INT_MAX);
  kernel<<<unsigned(blocks), kThreads, 0, stream>>>(static_cast<T const*>(p.src), static_cast<T*>(p.dst), rows,
                                                    typename IndexWalk<Index>::Divider(Index(p.cols)), p.cols, total,
                                                    head, vectors);
  return cudaGetLastError();
}

template <class T, class Index>
cudaError_t launch_fill_of(Problem const& p, bool lanes, cudaStream_t stream) {
  if (!lanes) {  // a warp to 32 x U vectors
    switch (fill_vectors_per_lane(p.cols, sizeof(T))) {
      case 4: return launch_form<T, Index>(fill_rows<T, Index, 4>, p, 32 * 4, stream);
      case 2: return launch_form<T, Index>(fill_rows<T, Index, 2>, p, 32 * 2, stream);
      case 1: return launch_form<T, Index>(fill_rows<T, Index, 1>, p, 32, stream);
    }
    return cudaErrorInvalidValue;
  }
  // A lane to one vector at a time, built for the most rows it can touch (fill_rows_per_vector),
  // rounded up to 1, 2, 3, 5 or 9 (rows of at least 2 elements: at most V / 2 + 1).
  int const rows = fill_rows_per_vector(p.cols, sizeof(T));
  if constexpr (sizeof(T) == 16) {
    return launch_form<T, Index>(fill_vectors<T, Index, 1>, p, 32, stream);  // a vector is one element
  } else {
    if (rows <= 2) return launch_form<T, Index>(fill_vectors<T, Index, 2>, p, 32, stream);
    if constexpr (sizeof(T) <= 4)
      if (rows <= 3) return launch_form<T, Index>(fill_vectors<T, Index, 3>, p, 32, stream);
    if constexpr (sizeof(T) <= 2)
      if (rows <= 5) return launch_form<T, Index>(fill_vectors<T, Index, 5>, p, 32, stream);
    if constexpr (sizeof(T) == 1)
      if (rows <= 9) return launch_form<T, Index>(fill_vectors<T, Index, 9>, p, 32, stream);
    return cudaErrorInvalidValue;
  }
}

}  // namespace

// The chooser (choose.cpp) checked that the output is the contiguous (batch..., M, N) tensor,
// that the input reads N with stride 0, and, for the span form, that rows are long enough
// (fill_vectors_per_lane).
cudaError_t launch_fill(Problem const& p, bool lanes, cudaStream_t stream) {
  if (p.col_stride != 0) return cudaErrorInvalidValue;
  return with_element_type(p.element_size, [&](auto t) {
    using T = decltype(t);
    uint64_t const total = uint64_t(p.batch.count) * p.rows * p.cols;
    if (total < kIntWalkLimit) return launch_fill_of<T, int>(p, lanes, stream);
    return launch_fill_of<T, uint64_t>(p, lanes, stream);
  });
}

}  // namespace cute_transpose
