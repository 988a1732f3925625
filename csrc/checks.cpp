#include "checks.h"

#include <ATen/WrapDimUtils.h>

#include <cctype>

namespace cute_transpose {

namespace {

std::string python_name(at::Layout layout) {
  switch (layout) {
    case at::kSparse: return "torch.sparse_coo";
    case at::kSparseCsr: return "torch.sparse_csr";
    case at::kSparseCsc: return "torch.sparse_csc";
    case at::kSparseBsr: return "torch.sparse_bsr";
    case at::kSparseBsc: return "torch.sparse_bsc";
    default: return c10::str(layout);
  }
}

std::string python_name(at::ScalarType dtype) {  // QUInt8 -> torch.quint8
  std::string name = c10::toString(dtype);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "torch." + name;
}

}  // namespace

std::string not_dense(at::Tensor const& x) {
  if (x.is_nested()) return "a nested tensor";
  if (x.is_quantized())
    return "a quantized tensor (dtype " + python_name(x.scalar_type()) +
           "); x.dequantize() gives a strided one";
  if (x.layout() != at::kStrided)
    return "a tensor of layout " + python_name(x.layout()) + "; x.to_dense() gives a strided one";
  return "";
}

void check_tensor(at::Tensor const& x, char const* op) {
  std::string const got = not_dense(x);
  TORCH_CHECK(got.empty(), "cute_transpose.", op, ": expected a strided (dense) tensor, got ", got);
  int64_t const esize = x.element_size();
  TORCH_CHECK(esize == 1 || esize == 2 || esize == 4 || esize == 8 || esize == 16, "cute_transpose.", op,
              ": unsupported element size ", esize, " bytes (dtype ", x.scalar_type(), ")");
}

void check_matrix(at::Tensor const& x, char const* op) {
  TORCH_CHECK(x.dim() >= 2, "cute_transpose.", op, ": expected a tensor of rank >= 2 (..., M, N), got rank ",
              x.dim(), " with shape ", x.sizes());
  check_tensor(x, op);
}

std::vector<int64_t> checked_permutation(at::Tensor const& x, at::IntArrayRef dims, char const* op) {
  check_tensor(x, op);
  int64_t const rank = x.dim();
  TORCH_CHECK(int64_t(dims.size()) == rank, "cute_transpose.", op, ": dims ", dims, " has ", dims.size(),
              " entries, but the input has rank ", rank, " (shape ", x.sizes(), ")");
  std::vector<int64_t> perm(dims.begin(), dims.end());
  std::vector<bool> seen(rank, false);
  for (int64_t& d : perm) {
    d = at::maybe_wrap_dim(d, rank);
    TORCH_CHECK(!seen[d], "cute_transpose.", op, ": dims ", dims, " is not a permutation: dim ", d,
                " appears more than once");
    seen[d] = true;
  }
  return perm;
}

std::vector<int64_t> transpose_permutation(at::Tensor const& x, int64_t dim0, int64_t dim1, char const* op) {
  check_tensor(x, op);
  int64_t const rank = x.dim();
  dim0 = at::maybe_wrap_dim(dim0, rank);
  dim1 = at::maybe_wrap_dim(dim1, rank);
  std::vector<int64_t> perm(rank);
  for (int64_t d = 0; d < rank; ++d) perm[d] = d;
  if (rank > 0) std::swap(perm[dim0], perm[dim1]);
  return perm;
}

std::vector<int64_t> permuted_sizes(at::Tensor const& x, at::IntArrayRef perm) {
  std::vector<int64_t> sizes;
  for (int64_t d : perm) sizes.push_back(x.size(d));
  return sizes;
}

void check_out(at::Tensor const& x, at::Tensor const& out, at::IntArrayRef sizes, char const* op) {
  TORCH_CHECK(out.device() == x.device(), "cute_transpose.", op, ": out is on device ", out.device(),
              " but the input is on ", x.device());
  TORCH_CHECK(out.scalar_type() == x.scalar_type(), "cute_transpose.", op, ": out has dtype ", out.scalar_type(),
              " but the input has dtype ", x.scalar_type());
  TORCH_CHECK(out.sizes() == sizes, "cute_transpose.", op, ": out has shape ", out.sizes(),
              " but the result has shape ", sizes);
  TORCH_CHECK(out.layout() == at::kStrided && out.is_contiguous(), "cute_transpose.", op,
              ": out must be a contiguous tensor (got strides ", out.strides(), ")");
  if (out.numel() == 0 || x.numel() == 0) return;
  // Byte ranges: a result written over its own input would read overwritten elements.
  auto span = [](at::Tensor const& t) {
    auto const* base = static_cast<char const*>(t.const_data_ptr());
    int64_t extent = 1;
    for (int64_t d = 0; d < t.dim(); ++d) extent += (t.size(d) - 1) * t.stride(d);
    return std::make_pair(base, base + extent * t.element_size());
  };
  auto const [x_begin, x_end] = span(x);
  auto const [o_begin, o_end] = span(out);
  TORCH_CHECK(o_end <= x_begin || x_end <= o_begin, "cute_transpose.", op,
              ": out overlaps the input in memory; pass a separate tensor");
}

void check_copy_rows(at::Tensor const& dst, at::Tensor const& src) {
  TORCH_CHECK(dst.dtype() == src.dtype() && dst.sizes() == src.sizes(), "cute_transpose._copy_rows_: dst ",
              dst.sizes(), " ", dst.dtype(), " and src ", src.sizes(), " ", src.dtype(), " differ");
  TORCH_CHECK(dst.dim() >= 1 && dst.device() == src.device(), "cute_transpose._copy_rows_: expected tensors of "
              "rank >= 1 on one device, got ", dst.device(), " and ", src.device());
  if (dst.numel() == 0) return;
  TORCH_CHECK(dst[0].is_contiguous() && src[0].is_contiguous() && dst.stride(0) >= dst[0].numel() &&
                  src.stride(0) >= src[0].numel(),
              "cute_transpose._copy_rows_: each row must be contiguous and rows must not overlap (dst strides ",
              dst.strides(), ", src strides ", src.strides(), ")");
}

}  // namespace cute_transpose
