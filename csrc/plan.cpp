#include "plan.h"

#include <algorithm>
#include <vector>

namespace cute_transpose {
namespace {

// Drops size-1 dims and merges neighbours that chain in both tensors (outer.in == inner.in *
// inner.size, the same for out). `dims` is outermost first.
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

// The input's tightest dim other than m; expanded (stride-0) dims never are. -1 if m is at least
// as tight as all of them (the copy route).
int tightest_other(Plan const& p) {
  int k = -1;
  for (int i = 0; i < p.rank; ++i)
    if (i != p.m && p.dims[i].in != 0 && (k < 0 || p.dims[i].in < p.dims[k].in)) k = i;
  if (k >= 0 && p.dims[p.m].in != 0 && p.dims[p.m].in <= p.dims[k].in) return -1;
  return k;
}


// The dims of `plan` other than those listed, outermost first.
std::vector<Dim> others(Plan const& plan, int a, int b) {
  std::vector<Dim> rest;
  for (int i = 0; i < plan.rank; ++i)
    if (i != a && i != b) rest.push_back(plan.dims[i]);
  return rest;
}

std::optional<Problem> make_problem(Plan const& plan, Dim const& m, Dim const& n, std::vector<Dim> const& rest) {
  if (rest.size() > size_t(Batch::kMaxRank)) return std::nullopt;
  Problem p;
  p.src = plan.src;
  p.dst = plan.dst;
  p.element_size = plan.element_size;
  p.rows = m.size;
  p.row_stride = m.in;
  p.out_row_stride = m.out;
  p.cols = n.size;
  p.col_stride = n.in;
  p.out_col_stride = n.out;
  p.batch = make_batch(rest);
  return p;
}

}  // namespace

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

int64_t Plan::numel() const {
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) count *= dims[i].size;
  return count;
}

std::optional<Plan> plan_permute(at::Tensor const& x, at::IntArrayRef perm, at::Tensor const& out, Shape shape) {
  int64_t const rank = static_cast<int64_t>(perm.size());
  std::vector<Dim> all;
  for (int64_t j = 0; j < rank; ++j) all.push_back({x.size(perm[j]), x.stride(perm[j]), out.stride(j)});

  Plan plan;
  plan.src = x.const_data_ptr();
  plan.dst = out.mutable_data_ptr();
  plan.element_size = static_cast<int>(x.element_size());
  plan.elements = x.numel();
  std::vector<Dim> dims;
  if (shape == Shape::LastTwoDims) {
    // The batch dims merge; the matrix dims stay as they are, m = x's dim -2 and n = x's dim -1,
    // at the output's last two positions (in either order: a transpose or a copy).
    dims = simplify({all.begin(), all.end() - 2});
    dims.push_back(all[rank - 2]);
    dims.push_back(all[rank - 1]);
    if (dims.size() > size_t(kMaxDims)) return std::nullopt;
    plan.rank = static_cast<int>(dims.size());
    std::copy(dims.begin(), dims.end(), plan.dims);
    bool const transposed = perm[rank - 1] == rank - 2;
    plan.m = transposed ? plan.rank - 1 : plan.rank - 2;
    plan.n = transposed ? plan.rank - 2 : plan.rank - 1;
    return plan;
  }

  dims = simplify(all);
  if (dims.empty()) dims.push_back({1, 1, 1});  // a single element
  // Widening: on the copy route a short innermost dim whose rows are 2, 4, 8 or 16 bytes, and
  // which every other stride steps over whole, moves as one wider element -- (A, B, 4) uint8
  // -> (B, A, 4) is a transpose of 4-byte elements. Repeats while it applies.
  while (dims.size() > 1 && dims.size() <= size_t(kMaxDims)) {
    plan.rank = static_cast<int>(dims.size());
    std::copy(dims.begin(), dims.end(), plan.dims);
    plan.m = plan.rank - 1;
    if (tightest_other(plan) >= 0) break;
    Dim const row = dims.back();
    int64_t const bytes = row.size * plan.element_size;
    bool wide = row.in == 1 && bytes <= 16 && (bytes & (bytes - 1)) == 0 &&
                reinterpret_cast<uintptr_t>(plan.src) % uint64_t(bytes) == 0 &&
                reinterpret_cast<uintptr_t>(plan.dst) % uint64_t(bytes) == 0;
    for (size_t i = 0; i + 1 < dims.size(); ++i) wide = wide && dims[i].in % row.size == 0 && dims[i].out % row.size == 0;
    if (!wide) break;
    dims.pop_back();
    for (Dim& d : dims) d = {d.size, d.in / row.size, d.out / row.size};
    dims = simplify(dims);
    plan.element_size = static_cast<int>(bytes);
  }
  if (dims.size() > size_t(kMaxDims)) return std::nullopt;
  plan.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), plan.dims);
  plan.m = plan.rank - 1;
  plan.n = tightest_other(plan);
  return plan;
}

std::optional<Problem> matrix_problem(Plan const& plan) {
  Dim const unit{1, 0, 0};
  return make_problem(plan, plan.dims[plan.m], plan.copy_route() ? unit : plan.dims[plan.n],
                      others(plan, plan.m, plan.n));
}

std::optional<Problem> output_rows_problem(Plan const& plan) {
  int const outer = plan.m - 1;  // the next dim out, if any
  Dim const unit{1, 0, 0};
  return make_problem(plan, outer >= 0 ? plan.dims[outer] : unit, plan.dims[plan.m], others(plan, plan.m, outer));
}

std::optional<Problem> rows_problem(Plan const& plan) {
  if (!plan.copy_route()) return std::nullopt;
  return output_rows_problem(plan);
}

}  // namespace cute_transpose
