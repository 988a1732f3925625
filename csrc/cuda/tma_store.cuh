// TMA stores (sm_90+), shared by the `tma` and `pipelined` variants: the output tile is staged in
// shared memory in the 128-byte-swizzled "MN-major" layout TMA understands (m contiguous, rows
// of 128 bytes), and one thread hands it to the TMA unit, which writes it to global memory and
// clips it at the matrix edges by itself. The output's row pitch (M * element size) must be a
// multiple of 16 bytes.
#pragma once

#include "tiling.cuh"

#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>  // the 128-byte-swizzled shared-memory layout atoms

namespace cute_transpose {

// The output tile as TMA stores it: (BM,BN) in input coordinates, m contiguous, 128-byte swizzle.
template <class T, int BM, int BN>
using TmaSmem = decltype(cute::tile_to_shape(cute::GMMA::Layout_MN_SW128_Atom<T>{},
                                             cute::Shape<cute::Int<BM>, cute::Int<BN>>{}));

// The TMA store descriptor for (BM,BN) tiles of the output, viewed in input coordinates: (M,N,B)
// with m contiguous. At most one batch dim (the torch glue copies the others first).
template <class T, int BM, int BN>
auto make_tma_store(Problem const& p) {
  using namespace cute;
  // TMA has no 16-byte element type: move 16-byte elements as pairs of 8-byte ones.
  using Internal = conditional_t<sizeof(T) == 16, uint64_t, T>;
  int64_t const batch_stride = p.batch.rank == 1 ? p.batch.out_stride[0] : p.rows * p.cols;
  Tensor gOut = make_tensor(make_gmem_ptr(static_cast<T*>(p.dst)),            // (M,N,B)
                            make_layout(make_shape(p.rows, p.cols, p.batch.count),
                                        make_stride(Int<1>{}, p.out_col_stride, batch_stride)));
  return make_tma_copy<Internal>(SM90_TMA_STORE{}, gOut, TmaSmem<T, BM, BN>{}, Shape<Int<BM>, Int<BN>>{},
                                 Int<1>{});
}

template <class T, int BM, int BN>
using TmaStore = decltype(make_tma_store<T, BM, BN>(std::declval<Problem const&>()));

// Has TMA store the staged tile sOut (BM,BN) at `tile`, and commits the store as a bulk group
// (tma_store_wait waits for it). One thread calls it, after a fence (tma_store_fence) and a
// barrier have made every thread's writes to sOut visible to the TMA unit.
template <class Store, class SOut>
CUTE_DEVICE void issue_tma_store(Store const& tma, SOut const& sOut, Problem const& p, TileCoord const& tile) {
  using namespace cute;
  Tensor mOut = tma.get_tma_tensor(make_shape(p.rows, p.cols, p.batch.count));                         // (M,N,B)
  Tensor gOut = local_tile(mOut(_, _, tile.b), product_each(shape(sOut)), make_coord(tile.m, tile.n));  // (BM,BN)
  auto cta_tma = tma.get_slice(Int<0>{});
  copy(tma, cta_tma.partition_S(sOut), cta_tma.partition_D(gOut));
  tma_store_arrive();
}

}  // namespace cute_transpose
