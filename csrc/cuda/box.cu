// The Box kernel's entry point (box_transpose.cuh): the device-side view of a BoxPlan, and one
// instantiation file per element size (box_e<E>.cu).
#include "box_transpose.cuh"

namespace cute_transpose {
namespace {

BoxSide make_side(BoxPlan const& b, int const* order, int64_t const* global, int vector) {
  BoxSide s;
  s.rank = b.rank;
  for (int d = 0; d < b.rank; ++d) {
    int const k = order[d];
    s.extent[d] = cutlass::FastDivmod(int(b.tile[k]));
    s.tile[d] = int(b.tile[k]);
    s.box_dim[d] = k;
    s.smem[d] = int(b.smem[k]);
    s.global[d] = global[k];
  }
  // A vector that does not fit whole in the innermost dim wraps it, and the wrap may carry on
  // into any dim of the side's contiguous run (the chooser kept vectors inside that run).
  s.carries = b.tile[order[0]] % vector == 0 ? 0 : b.rank - 1;
  return s;
}

}  // namespace

BoxParams box_params(BoxPlan const& b) {
  BoxParams p;
  p.in = make_side(b, b.in_order, b.in, b.vin);
  p.out = make_side(b, b.out_order, b.out, b.vout);
  for (int k = 0; k < b.rank; ++k) {
    p.size[k] = b.size[k];
    p.tile[k] = b.tile[k];
  }
  p.outer_rank = b.outer_rank;
  for (int k = 0; k < b.outer_rank; ++k) {
    p.outer[k] = cutlass::FastDivmodU64(uint64_t(b.outer_size[k]));
    p.outer_in[k] = b.outer_in[k];
    p.outer_out[k] = b.outer_out[k];
    p.chunk_of[k] = b.chunk_of[k];
  }
  p.boxes = b.boxes;
  p.volume = int(b.volume);
  p.keep = b.keeps_positions();
  p.src = b.src;
  p.dst = b.dst;
  return p;
}

cudaError_t launch_box(BoxPlan const& b, cudaStream_t stream) {
  switch (b.element_size) {
    case 1: return launch_box_e1(b, stream);
    case 2: return launch_box_e2(b, stream);
    case 4: return launch_box_e4(b, stream);
    case 8: return launch_box_e8(b, stream);
    case 16: return launch_box_e16(b, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cute_transpose
