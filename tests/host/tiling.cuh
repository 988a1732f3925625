// Stands in for csrc/cuda/tiling.cuh on the host (launch.h here): the few CuTe names the Box
// kernel uses.
#pragma once

#include <type_traits>

#include "launch.h"

#define CUTE_DEVICE inline
#define CUTE_HOST_DEVICE inline
#define CUTE_UNROLL

namespace cute {
using std::max;
using std::min;
template <int N>
using Int = std::integral_constant<int, N>;
template <bool B, class X, class Y>
using conditional_t = std::conditional_t<B, X, Y>;
struct alignas(16) uint128_t {
  uint64_t lo, hi;
};
}  // namespace cute
