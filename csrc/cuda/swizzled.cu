// Swizzled shared memory: the row-major tile composed with a Swizzle, an XOR of the row index
// into the column bits. No memory is wasted, and both phases are conflict-free.
//
// A tile row is one 128-byte line (32 banks). Swizzle<B,M,S> XORs the B bits that sit S bits
// above bit M into bits M .. M+B-1. For 4-byte elements the seeds' Swizzle<5,0,5>:
// column' = column ^ (row % 32), so a warp walking down a column visits 32 different banks.
// Other element sizes use the same idea at the right granularity; `python -m
// cute_transpose.banks swizzled --dtype ...` shows each one conflict-free:
//   1 byte   Swizzle<5,2,5>  rows of 128 elements; XOR the row into the word index (bits 2..6)
//   2 bytes  Swizzle<5,1,5>  rows of 64 elements;  XOR the row into the word index (bits 1..5)
//   4 bytes  Swizzle<5,0,5>  rows of 32 elements
//   8 bytes  Swizzle<4,0,4>  rows of 16 elements; a warp's 8-byte accesses go 16 threads at a time
//  16 bytes  Swizzle<3,0,3>  rows of 8 elements;  16-byte accesses go 8 threads at a time
#include "launch.h"
#include "smem_transpose.cuh"

namespace cute_transpose {
namespace {

template <int Bytes> struct SwizzleFor;
template <> struct SwizzleFor<1> { using type = cute::Swizzle<5, 2, 5>; };
template <> struct SwizzleFor<2> { using type = cute::Swizzle<5, 1, 5>; };
template <> struct SwizzleFor<4> { using type = cute::Swizzle<5, 0, 5>; };
template <> struct SwizzleFor<8> { using type = cute::Swizzle<4, 0, 4>; };
template <> struct SwizzleFor<16> { using type = cute::Swizzle<3, 0, 3>; };

template <class T>
struct SwizzledSmem {  // Swizzle o (bM,bN):(bN,1)
  using RowMajor = cute::Layout<typename SeedTile<T>::Shape, cute::Stride<typename SeedTile<T>::BN, cute::_1>>;
  using type = decltype(cute::composition(typename SwizzleFor<sizeof(T)>::type{}, RowMajor{}));
};

}  // namespace

cudaError_t launch_swizzled(Problem const& p, cudaStream_t s) { return launch_smem_transpose<SwizzledSmem>(p, s); }

SmemAccessMap smem_access_map_swizzled(int element_size) { return smem_access_map<SwizzledSmem>(element_size); }

}  // namespace cute_transpose
