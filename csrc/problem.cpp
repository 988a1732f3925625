#include "glue.h"

#include <ATen/ATen.h>

namespace cute_transpose {

Prepared prepare(at::Tensor const& x, Kind kind, char const* op) {
  TORCH_CHECK(x.dim() >= 2, "cute_transpose.", op,
              ": expected a tensor of rank >= 2 (..., M, N), got rank ", x.dim(),
              " with shape ", x.sizes());
  TORCH_CHECK(x.layout() == at::kStrided, "cute_transpose.", op,
              ": expected a strided (dense) tensor, got layout ", x.layout());
  int64_t const esize = x.element_size();
  TORCH_CHECK(esize == 1 || esize == 2 || esize == 4 || esize == 8 || esize == 16,
              "cute_transpose.", op, ": unsupported element size ", esize, " bytes (dtype ",
              x.scalar_type(), ")");

  int64_t const rows = x.size(-2);
  int64_t const cols = x.size(-1);
  auto out_sizes = x.sizes().vec();
  if (kind == Kind::Transpose) std::swap(out_sizes[x.dim() - 2], out_sizes[x.dim() - 1]);

  Prepared r;
  r.out = at::empty(out_sizes, x.options().memory_format(at::MemoryFormat::Contiguous));
  if (r.out.numel() == 0) return r;

  r.input = x.reshape({-1, rows, cols});
  r.problem.src = r.input.const_data_ptr();
  r.problem.dst = r.out.mutable_data_ptr();
  r.problem.batch = r.input.size(0);
  r.problem.rows = rows;
  r.problem.cols = cols;
  r.problem.batch_stride = r.input.stride(0);
  r.problem.row_stride = r.input.stride(1);
  r.problem.col_stride = r.input.stride(2);
  r.problem.element_size = static_cast<int>(esize);
  return r;
}

}  // namespace cute_transpose
