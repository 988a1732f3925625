// Every op's body, written once for every device: check the arguments, allocate the result (or
// check `out`), plan the work (plan.h), and hand the plan to the device's Runner:
//   Runner::guard(out)                 selects the device;
//   Runner::best(x, perm, out, plan)   runs `transpose` and `permute` (the chooser's pick on CUDA);
//   Runner::forced(x, perm, out, plan, kernel, op)  runs one named kernel (the seed ladder, `copy`).
// Empty results launch nothing; plans with more dims than a kernel takes use ATen's copy.
#pragma once

#include <ATen/ATen.h>

#include "checks.h"
#include "choose.h"
#include "plan.h"

namespace cute_transpose {

// x.permute(perm) into `out` with ATen's strided copy: eager's own call for the dtypes it copies,
// the bits moved as integers of the element's size for the others (so every dtype works).
void aten_permute_into(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out);

at::Tensor new_result(at::Tensor const& x, at::IntArrayRef perm);

template <class Runner>
at::Tensor& permute_into(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out) {
  if (out.numel() == 0) return out;
  [[maybe_unused]] auto const guard = Runner::guard(out);
  if (auto plan = plan_permute(x, perm, out)) {
    Runner::best(x, perm, out, *plan);
  } else {
    aten_permute_into(x, perm, out);
  }
  return out;
}

// The seed ladder and `copy` on x's last two dims: `perm` swaps them (or not, for `copy`).
template <class Runner>
at::Tensor run_forced(at::Tensor const& x, Kernel kernel, char const* op) {
  check_matrix(x, op);
  std::vector<int64_t> perm(x.dim());
  for (int64_t d = 0; d < x.dim(); ++d) perm[d] = d;
  if (kernel != Kernel::SeedCopy) std::swap(perm[x.dim() - 2], perm[x.dim() - 1]);
  at::Tensor out = new_result(x, perm);
  if (out.numel() == 0) return out;
  [[maybe_unused]] auto const guard = Runner::guard(out);
  if (auto plan = plan_permute(x, perm, out, Shape::LastTwoDims)) {
    Runner::forced(x, perm, out, *plan, kernel, op);
  } else {
    aten_permute_into(x, perm, out);
  }
  return out;
}

// A ladder variant (or `copy`), as the function a TORCH_LIBRARY_IMPL registers.
template <class Runner, Kernel K>
at::Tensor ladder_op(at::Tensor const& x) {
  return run_forced<Runner>(x, K, kernel_name(K));
}

// transpose, permute and their out= forms, as the functions a TORCH_LIBRARY_IMPL registers.
template <class Runner>
struct PlanOps {
  static at::Tensor permute(at::Tensor const& x, at::IntArrayRef dims) {
    auto const perm = checked_permutation(x, dims, "permute");
    at::Tensor out = new_result(x, perm);
    return permute_into<Runner>(x, perm, out);
  }
  static at::Tensor& permute_out(at::Tensor const& x, at::IntArrayRef dims, at::Tensor& out) {
    auto const perm = checked_permutation(x, dims, "permute");
    check_out(x, out, permuted_sizes(x, perm), "permute");
    return permute_into<Runner>(x, perm, out);
  }
  static at::Tensor transpose(at::Tensor const& x, int64_t dim0, int64_t dim1) {
    auto const perm = transpose_permutation(x, dim0, dim1, "transpose");
    at::Tensor out = new_result(x, perm);
    return permute_into<Runner>(x, perm, out);
  }
  static at::Tensor& transpose_out(at::Tensor const& x, int64_t dim0, int64_t dim1, at::Tensor& out) {
    auto const perm = transpose_permutation(x, dim0, dim1, "transpose");
    check_out(x, out, permuted_sizes(x, perm), "transpose");
    return permute_into<Runner>(x, perm, out);
  }
};

}  // namespace cute_transpose
