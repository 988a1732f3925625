// Stands in for csrc/cuda/vector_tile.cuh on the host (launch.h here): the Box kernel's vectors.
#pragma once

#include "tiling.cuh"

namespace cute_transpose {

template <int W>
struct alignas(W) Words {
  uint32_t word[W / 4];
};

template <int W>
using VecOf = cute::conditional_t<(W >= 4), Words<W>, cute::conditional_t<W == 2, uint16_t, uint8_t>>;

}  // namespace cute_transpose
