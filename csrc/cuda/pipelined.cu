// The pipelined rung (sm_90): TMA loads of the next tiles stay in flight while the current one is
// transposed and stored. A persistent block owns a ring of kStages shared-memory stages:
//
//   producer warp   (one thread)  for each of the block's tiles, in order: wait until stage s is
//                   empty, then have TMA load the tile into it; the load completes on the
//                   stage's `full` barrier, which counts its bytes
//   consumer warps                for each tile: wait until stage s is full, read its V x V
//                   blocks into registers, release the stage (`empty`), then transpose the
//                   blocks in registers and store them: into an output tile in shared memory
//                   that one thread hands to a TMA store (2- to 16-byte elements,
//                   tma_store.cuh), or as 16-byte vectors straight to global memory (uint8)
//
//   prologue        every stage starts empty: the producer runs kStages tiles ahead;
//   steady state    the producer refills a stage as soon as every consumer warp released it;
//   epilogue        the producer stops after the block's last tile; the consumers drain the ring.
//
// A stage is kBoxes TMA boxes side by side, each BM rows of 128 bytes of the input, in the
// 128-byte-swizzled layout TMA writes: 16-byte chunk c of row r lands at chunk c ^ (r % 8).
// Consumer lanes take consecutive block rows, so that each warp store writes up to 512
// contiguous bytes of one output row. The 8 lanes of a shared-memory wavefront then read the
// same chunk of 8 different blocks; each lane reads its block's V rows in an order rotated by
// rotation(bm), so that the 8 rows read at once have distinct r % 8 and the swizzle spreads them
// over all 32 banks. A barrel shifter of register selects undoes the rotation.
// Both sides move in 16-byte vectors, so rows, strides and offsets are whole vectors (the
// chooser's pipelined_fits); TMA zero-fills the part of an edge tile outside the matrix, and
// the stores skip it (the TMA store clips it, the vector stores test each vector).
#include "launch.h"
#include "tma_store.cuh"
#include "vector_tile.cuh"

#include <cute/arch/copy_sm90_desc.hpp>  // mbarriers

namespace cute_transpose {
namespace {

using namespace cute;

template <class T_, int BM_, int Boxes, int Stages, bool TmaStore, int ConsumerWarps = 4>
struct PipeTile {
  using T = T_;
  using Vec = Words<16>;
  static constexpr int V = 16 / int(sizeof(T));            // elements per vector
  static constexpr int BM = BM_;                           // tile rows (m), at most 256 (a TMA box side)
  static constexpr int BN = Boxes * 128 / int(sizeof(T));  // tile columns (n): Boxes swizzle rows of 128 bytes
  static constexpr int CM = BM / V, CN = BN / V;           // V x V blocks down and across the tile
  static constexpr int kStages = Stages;
  static constexpr int kConsumerWarps = ConsumerWarps;
  static constexpr int kConsumers = 32 * ConsumerWarps;
  static constexpr int kThreads = kConsumers + 32;  // and one producer warp
  static constexpr int kBlocksPerThread = CM * CN / kConsumers;
  static constexpr int kStageBytes = BM * BN * int(sizeof(T));
  static constexpr bool kTmaStore = TmaStore;  // else 16-byte vector stores
  using Out = TmaSmem<T, BM, BN>;               // (BM,BN): the output tile a TMA store reads
  // The stages, the TMA store's output tile, then 2 * kStages barriers; 1 KiB of slack to align
  // the stages to the 1 KiB the 128-byte swizzle repeats over.
  static constexpr int kSmemBytes = (kStages + kTmaStore) * kStageBytes + 2 * kStages * 8 + 1024;
  static_assert(BM <= 256 && CM >= 8, "a TMA box side is at most 256; a wavefront takes 8 block rows");
  static_assert(CM * CN % kConsumers == 0 && kBlocksPerThread >= 1, "every consumer takes whole blocks");

  using Stage = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, Shape<Int<BM>, Int<BN>>{}));  // (BM,BN)
  using Ring = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{},
                                      Shape<Int<BM>, Int<BN>, Int<kStages>>{}));  // (BM,BN,S)
};

// The TMA load descriptor for (BM,BN) tiles of the input: (M,N,B), n contiguous. At most one
// batch dim (pipelined_fits): TMA takes 16-byte elements as pairs of 8-byte ones.
template <class Cfg>
auto make_tma_load(Problem const& p) {
  using T = typename Cfg::T;
  using Internal = conditional_t<sizeof(T) == 16, uint64_t, T>;
  int64_t const batch_stride = p.batch.rank == 1 ? p.batch.in_stride[0] : p.rows * p.row_stride;
  Tensor gIn = make_tensor(make_gmem_ptr(static_cast<T const*>(p.src)),  // (M,N,B)
                           make_layout(make_shape(p.rows, p.cols, p.batch.count),
                                       make_stride(p.row_stride, Int<1>{}, batch_stride)));
  return make_tma_copy<Internal>(SM90_TMA_LOAD{}, gIn, typename Cfg::Stage{}, Shape<Int<Cfg::BM>, Int<Cfg::BN>>{},
                                 Int<1>{});
}

template <class Cfg>
using TmaLoad = decltype(make_tma_load<Cfg>(std::declval<Problem const&>()));

struct NoStore {};

// The TMA store descriptor for the configurations that store through TMA.
template <class Cfg>
auto make_store(Problem const& p) {
  if constexpr (Cfg::kTmaStore) {
    return make_tma_store<typename Cfg::T, Cfg::BM, Cfg::BN>(p);
  } else {
    return NoStore{};
  }
}

template <class Cfg>
using StoreOf = decltype(make_store<Cfg>(std::declval<Problem const&>()));

// A barrier of the consumer warps alone (named barrier 1; the producer never waits on it).
template <int Threads>
CUTE_DEVICE void consumers_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(Threads) : "memory");
}

// The row a block starts reading at: blocks bm = 8w .. 8w+7 (one wavefront) start at rows whose
// r % 8 are all distinct, V * bm + rotation(bm) mod 8 (for V = 4: 0, 4, 1, 5, 2, 6, 3, 7).
template <int V>
CUTE_HOST_DEVICE int rotation(int bm) {
  return V >= 8 ? bm % V : (bm * V / 8) % V;
}

// Consumer q's block of the tile (q = thread + k * kConsumers): block row q % CM, block column
// q / CM; and the stage row it reads at step i of its block. Shared by the kernel and its bank
// map (smem_access_map_pipelined).
template <class Cfg>
CUTE_HOST_DEVICE int block_row(int q) { return q % Cfg::CM; }
template <class Cfg>
CUTE_HOST_DEVICE int block_column(int q) { return q / Cfg::CM; }
template <class Cfg>
CUTE_HOST_DEVICE int read_row(int bm, int i) { return bm * Cfg::V + ((i + rotation<Cfg::V>(bm)) & (Cfg::V - 1)); }

// a[k] <- a[(k - r) mod V], with constant register indices (a barrel shifter of selects).
template <int V, class Vec>
CUTE_DEVICE void rotate(Vec (&a)[V], int r) {
  CUTE_UNROLL
  for (int s = 1; s < V; s *= 2) {
    bool const take = r & s;
    Vec b[V];
    CUTE_UNROLL
    for (int k = 0; k < V; ++k) b[k] = take ? a[(k - s + V) % V] : a[k];
    CUTE_UNROLL
    for (int k = 0; k < V; ++k) a[k] = b[k];
  }
}

// CuTe's mbarrier wait and arrive are asm statements without a memory clobber, so the compiler
// may move ordinary shared-memory loads across them -- below the release, where the stage may
// already be refilled -- unless a clobber stops it; these add one.
CUTE_DEVICE void wait_full(uint64_t& barrier, uint32_t phase) {
  wait_barrier(barrier, phase);
  asm volatile("" ::: "memory");
}
CUTE_DEVICE void release(uint64_t& barrier) {
  asm volatile("" ::: "memory");
  arrive_barrier(barrier);
}

// The ring position: stage index and the barrier phase parity of the current pass.
struct RingState {
  int stage = 0;
  uint32_t phase = 0;
  template <int Stages>
  CUTE_DEVICE void advance() {
    if (++stage == Stages) stage = 0, phase ^= 1;
  }
};

template <class Cfg, class Load, class Store>
__global__ void __launch_bounds__(Cfg::kThreads) pipelined_transpose(Problem p, CUTE_GRID_CONSTANT Load const tma,
                                                                     CUTE_GRID_CONSTANT Store const tma_out) {
#if defined(CUTE_ARCH_TMA_SM90_ENABLED)
  using T = typename Cfg::T;
  using Vec = typename Cfg::Vec;
  constexpr int V = Cfg::V, S = Cfg::kStages;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  Tensor sRing = make_tensor(make_smem_ptr(reinterpret_cast<T*>(smem)), typename Cfg::Ring{});  // (BM,BN,S)
  Tensor sOut = make_tensor(make_smem_ptr(reinterpret_cast<T*>(smem + S * Cfg::kStageBytes)),  // (BM,BN)
                            typename Cfg::Out{});  // with kTmaStore only
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + (S + Cfg::kTmaStore) * Cfg::kStageBytes);  // S: TMA bytes landed
  uint64_t* empty = full + S;                                                  // S: consumers done

  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      initialize_barrier(full[s], 1);                      // the producer's arrive, plus the bytes
      initialize_barrier(empty[s], Cfg::kConsumerWarps);  // one arrive per consumer warp
    }
  }
  __syncthreads();

  TileWalk const walk(p, Cfg::BM, Cfg::BN);
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  RingState ring;

  if (warp == Cfg::kConsumerWarps) {
    //
    // Producer: one thread issues every load.
    //
    if (lane == 0) {
      prefetch_tma_descriptor(tma.get_tma_descriptor());
      Tensor mIn = tma.get_tma_tensor(make_shape(p.rows, p.cols, p.batch.count));  // (M,N,B)
      auto cta_tma = tma.get_slice(Int<0>{});
      // Problem::keep_inputs: the loads ask L2 to keep the input's lines (evict_last), as the
      // tile kernel's 16-byte loads do (choose.cpp, keeps_inputs).
      auto const hint = p.keep_inputs ? TMA::CacheHintSm90::EVICT_LAST : TMA::CacheHintSm90::EVICT_NORMAL;
      for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x, ring.advance<S>()) {
        TileCoord const tile = walk(t, p.batch);
        wait_barrier(empty[ring.stage], ring.phase ^ 1);  // a fresh barrier counts as released
        set_barrier_transaction_bytes(full[ring.stage], Cfg::kStageBytes);
        Tensor gIn = local_tile(mIn(_, _, tile.b), Shape<Int<Cfg::BM>, Int<Cfg::BN>>{},  // (BM,BN)
                                make_coord(tile.m, tile.n));
        copy(tma.with(full[ring.stage], 0, hint), cta_tma.partition_S(gIn), cta_tma.partition_D(sRing(_, _, ring.stage)));
      }
    }
    return;
  }

  //
  // Consumers: thread i takes the blocks q = i + k * kConsumers, at block row q % CM and block
  // column q / CM of the tile.
  //
  using OutTile = Shape<Int<Cfg::BN>, Int<Cfg::CM>>;                       // output tile, in vectors along m
  Tensor cOut = make_identity_tensor(make_shape(p.cols, p.rows / V));  // (N,M/V)
  for (int64_t t = blockIdx.x; t < walk.count; t += gridDim.x, ring.advance<S>()) {
    TileCoord const tile = walk(t, p.batch);
    Tensor sTile = sRing(_, _, ring.stage);  // (BM,BN)
    Vec rows[Cfg::kBlocksPerThread][V];
    wait_full(full[ring.stage], ring.phase);
    CUTE_UNROLL
    for (int k = 0; k < Cfg::kBlocksPerThread; ++k) {
      int const q = threadIdx.x + k * Cfg::kConsumers, bm = block_row<Cfg>(q), bn = block_column<Cfg>(q);
      CUTE_UNROLL
      for (int i = 0; i < V; ++i) rows[k][i] = *reinterpret_cast<Vec const*>(&sTile(read_row<Cfg>(bm, i), bn * V));
    }
    __syncwarp();
    if (lane == 0) release(empty[ring.stage]);  // the stage may be refilled

    // Transposes this thread's blocks in registers and hands each vector of the output tile to
    // put(n, mv, v): output row n, vector mv along m.
    auto const for_each_output_vector = [&](auto&& put) {
      CUTE_UNROLL
      for (int k = 0; k < Cfg::kBlocksPerThread; ++k) {
        int const q = threadIdx.x + k * Cfg::kConsumers, bm = block_row<Cfg>(q), bn = block_column<Cfg>(q);
        rotate<V>(rows[k], rotation<V>(bm));  // rows[k][i] is now row i of the block
        Vec cols[V];
        transpose_block<T, V>(rows[k], cols);
        CUTE_UNROLL
        for (int j = 0; j < V; ++j) put(bn * V + j, bm, cols[j]);
      }
    };
    if constexpr (Cfg::kTmaStore) {
      // Into the output tile (8 lanes of a wavefront write 8 consecutive 16-byte chunks of one
      // swizzled 128-byte row, as in tma.cu; ncu still counts 7% of the wavefronts conflicted),
      // once TMA has read the previous tile out of it; then one thread has TMA store it, and the
      // consumers go on to the next stage meanwhile.
      if (threadIdx.x == 0) tma_store_wait<0>();
      consumers_sync<Cfg::kConsumers>();
      for_each_output_vector([&](int n, int mv, Vec const& v) { *reinterpret_cast<Vec*>(&sOut(mv * V, n)) = v; });
      tma_store_fence();  // the writes, visible to the TMA unit
      consumers_sync<Cfg::kConsumers>();
      if (threadIdx.x == 0) issue_tma_store(tma_out, sOut, p, tile);
    } else {
      Tensor gOut = local_tile(output_vectors<Cfg>(p, tile.at), OutTile{}, make_coord(tile.n, tile.m));  // (BN,CM)
      Tensor cTile = local_tile(cOut, OutTile{}, make_coord(tile.n, tile.m));                           // (BN,CM)
      for_each_output_vector([&](int n, int mv, Vec const& v) {
        if (tile.interior || elem_less(cTile(n, mv), shape(cOut))) gOut(n, mv) = v;
      });
    }
  }
  if constexpr (Cfg::kTmaStore) {
    if (threadIdx.x == 0) tma_store_wait<0>();  // shared memory stays until TMA has read it
  }
#endif
}

template <class Cfg>
auto kernel_of() {
  return pipelined_transpose<Cfg, TmaLoad<Cfg>, StoreOf<Cfg>>;
}

template <class Cfg>
cudaError_t launch_config(Problem const& p, cudaStream_t stream) {
  auto const kernel = kernel_of<Cfg>();
  // More than 48 KiB of dynamic shared memory needs the opt-in, per device.
  if (cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes);
      err != cudaSuccess)
    return err;
  static int const per_sm = blocks_per_sm(kernel, Cfg::kThreads, Cfg::kSmemBytes);  // asked once
  auto const tma = make_tma_load<Cfg>(p);
  kernel<<<persistent_grid(per_sm, TileWalk(p, Cfg::BM, Cfg::BN).count), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
      p, tma, make_store<Cfg>(p));
  return cudaGetLastError();
}

// The configurations, by element size: (BM rows, boxes, stages, store), one consumer warpgroup.
// Picked on the H100 among 2-6 stages, 1-4 boxes, BM 32-256, one or two consumer warpgroups and
// vector or TMA stores (the numbers are in docs/PERFORMANCE.md): the stage count hardly
// mattered; wider stages helped vector stores by 0.01-0.02 of clone, and TMA stores of half as
// wide stages 2- to 16-byte elements by up to 0.016 more; uint8 kept vector stores.
template <class T> struct PipeConfig { using type = PipeTile<T, 64, 2, 3, true>; };  // 16 KiB stages
template <> struct PipeConfig<uint16_t> { using type = PipeTile<uint16_t, 128, 1, 3, true>; };
template <> struct PipeConfig<uint8_t> { using type = PipeTile<uint8_t, 256, 1, 4, false>; };

}  // namespace

// Where the consumers read a stage (SmemAccessMap, launch.h), from the kernel's own stage layout
// and block assignment. Phase 1 has no lanes: TMA writes the stage.
SmemAccessMap smem_access_map_pipelined(int element_size) {
  SmemAccessMap map;
  with_element_type(element_size, [&](auto t) {
    using T = decltype(t);
    using Cfg = typename PipeConfig<T>::type;
    auto const stage = as_position_independent_swizzle_layout(typename Cfg::Stage{});  // (BM,BN)
    auto const bytes = [&](int m, int n) { return int64_t(stage(m, n)) * int64_t(sizeof(T)); };
    for (int k = 0; k < Cfg::kBlocksPerThread; ++k)
      for (int i = 0; i < Cfg::V; ++i)
        for (int lane = 0; lane < 32; ++lane) {
          int const q = lane + k * Cfg::kConsumers;
          map.load.push_back(bytes(read_row<Cfg>(block_row<Cfg>(q), i), block_column<Cfg>(q) * Cfg::V));
        }
    map.element_size = sizeof(T);
    map.rows = Cfg::BM;
    map.cols = Cfg::BN;
    for (int m = 0; m < map.rows; ++m)
      for (int n = 0; n < map.cols; ++n) map.tile.push_back(bytes(m, n));
    return cudaSuccess;
  });
  return map;
}

cudaError_t launch_pipelined(Problem const& p, cudaStream_t stream) {
  if (cudaError_t err = bind_current_context(); err != cudaSuccess) return err;
  return with_element_type(p.element_size, [&](auto t) {
    return launch_config<typename PipeConfig<decltype(t)>::type>(p, stream);
  });
}

}  // namespace cute_transpose
