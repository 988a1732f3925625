#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>

#include <algorithm>
#include <climits>

#include "glue.h"

namespace cute_transpose {
namespace {

// One dim of the work: its size, and its strides in the input and in the output (in elements).
struct Dim {
  int64_t size, in, out;
};

// Drops size-1 dims and merges neighbours that chain in both tensors (outer.in == inner.in *
// inner.size, the same for out), the way x.view would. `dims` is outermost first.
std::vector<Dim> simplify(std::vector<Dim> const& dims) {
  std::vector<Dim> merged;
  for (Dim const& d : dims) {
    if (d.size == 1) continue;
    if (!merged.empty()) {
      Dim& outer = merged.back();
      if (outer.in == d.in * d.size && outer.out == d.out * d.size) {
        outer = {outer.size * d.size, d.in, d.out};
        continue;
      }
    }
    merged.push_back(d);
  }
  return merged;
}

Batch make_batch(std::vector<Dim> const& dims) {
  Batch b;
  b.rank = static_cast<int>(dims.size());
  for (int i = 0; i < b.rank; ++i) {
    b.size[i] = dims[i].size;
    b.in_stride[i] = dims[i].in;
    b.out_stride[i] = dims[i].out;
    b.count *= dims[i].size;
  }
  return b;
}

void check_tensor(at::Tensor const& x, char const* op) {
  TORCH_CHECK(x.layout() == at::kStrided, "cute_transpose.", op,
              ": expected a strided (dense) tensor, got layout ", x.layout());
  int64_t const esize = x.element_size();
  TORCH_CHECK(esize == 1 || esize == 2 || esize == 4 || esize == 8 || esize == 16,
              "cute_transpose.", op, ": unsupported element size ", esize, " bytes (dtype ",
              x.scalar_type(), ")");
}

// Takes from `rest` the outer dim of each short side of p (see Plan::split).
SplitProblem split_short_sides(Problem const& p, std::vector<Dim> rest) {
  auto take = [&](auto stride_of) {
    auto best = std::min_element(rest.begin(), rest.end(),
                                 [&](Dim const& a, Dim const& b) { return stride_of(a) < stride_of(b); });
    Outer o{best->size, best->in, best->out};
    rest.erase(best);
    return o;
  };
  SplitProblem s{p, {}, {}};
  if (p.rows < kSplitBelow) s.m = take([](Dim const& d) { return d.out; });
  if (p.cols < kSplitBelow && !rest.empty())
    s.n = take([](Dim const& d) { return d.in == 0 ? INT64_MAX : d.in; });
  s.problem.batch = make_batch(rest);
  return s;
}

}  // namespace

Prepared prepare(at::Tensor const& x, Kind kind, char const* op, bool single_batch) {
  TORCH_CHECK(x.dim() >= 2, "cute_transpose.", op,
              ": expected a tensor of rank >= 2 (..., M, N), got rank ", x.dim(),
              " with shape ", x.sizes());
  check_tensor(x, op);
  int64_t const rank = x.dim(), rows = x.size(-2), cols = x.size(-1);
  auto out_sizes = x.sizes().vec();
  if (kind == Kind::Transpose) std::swap(out_sizes[rank - 2], out_sizes[rank - 1]);

  Prepared r;
  r.out = at::empty(out_sizes, x.options().memory_format(at::MemoryFormat::Contiguous));
  if (r.out.numel() == 0) return r;

  r.input = x;
  std::vector<Dim> lead;
  for (int64_t d = 0; d < rank - 2; ++d) lead.push_back({x.size(d), x.stride(d), r.out.stride(d)});
  lead = simplify(lead);
  if (lead.size() > size_t(single_batch ? 1 : Batch::kMaxRank)) {
    r.input = x.reshape({-1, rows, cols});
    lead = simplify({{r.input.size(0), r.input.stride(0), rows * cols}});
  }

  Problem& p = r.problem;
  p.src = r.input.const_data_ptr();
  p.dst = r.out.mutable_data_ptr();
  p.rows = rows;
  p.cols = cols;
  p.row_stride = r.input.stride(-2);
  p.col_stride = r.input.stride(-1);
  p.out_row_stride = kind == Kind::Transpose ? 1 : cols;
  p.out_col_stride = kind == Kind::Transpose ? rows : 1;
  p.batch = make_batch(lead);
  p.element_size = static_cast<int>(x.element_size());
  return r;
}

std::optional<Plan> plan_permute(at::Tensor const& x, at::IntArrayRef perm, at::Tensor const& out) {
  std::vector<Dim> all;
  for (size_t j = 0; j < perm.size(); ++j) all.push_back({x.size(perm[j]), x.stride(perm[j]), out.stride(j)});
  std::vector<Dim> dims = simplify(all);
  if (dims.empty()) dims.push_back({1, 1, 1});  // a single element
  int64_t const n = static_cast<int64_t>(dims.size());
  if (n > Batch::kMaxRank + 2) return std::nullopt;

  Dim const last = dims.back();  // the output's innermost dim (output stride 1)
  // The input's tightest other dim; stride-0 (expanded) dims never are.
  int64_t k = -1;
  for (int64_t i = 0; i + 1 < n; ++i)
    if (dims[i].in != 0 && (k < 0 || dims[i].in < dims[k].in)) k = i;

  Plan plan;
  Problem& p = plan.problem;
  p.src = x.const_data_ptr();
  p.dst = out.mutable_data_ptr();
  p.element_size = static_cast<int>(x.element_size());
  std::vector<Dim> rest;
  if (k < 0 || last.in <= dims[k].in) {
    // Copy: rows of the innermost dim (n), batched over the next one (m) and the rest.
    plan.route = Kind::Copy;
    Dim const m = n >= 2 ? dims[n - 2] : Dim{1, 0, last.size};
    p.rows = m.size;
    p.row_stride = m.in;
    p.out_row_stride = m.out;
    rest.assign(dims.begin(), dims.end() - std::min<int64_t>(n, 2));
  } else {
    // Transpose: m is the output's innermost dim, n the input's tightest one.
    plan.route = Kind::Transpose;
    p.rows = last.size;
    p.row_stride = last.in;
    p.out_row_stride = last.out;
    for (int64_t i = 0; i + 1 < n; ++i)
      if (i != k) rest.push_back(dims[i]);
  }
  Dim const nd = plan.route == Kind::Copy ? last : dims[k];
  p.cols = nd.size;
  p.col_stride = nd.in;
  p.out_col_stride = nd.out;
  p.batch = make_batch(rest);
  if (plan.route == Kind::Transpose && (p.rows < kSplitBelow || p.cols < kSplitBelow) && !rest.empty())
    plan.split = split_short_sides(p, rest);
  return plan;
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
  TORCH_CHECK(out.scalar_type() == x.scalar_type(), "cute_transpose.", op, ": out has dtype ",
              out.scalar_type(), " but the input has dtype ", x.scalar_type());
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

}  // namespace cute_transpose
