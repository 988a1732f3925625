// Argument checks shared by every op and device. Each error names the op.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace cute_transpose {

// What a tensor the ops cannot read is (nested, sparse, quantized), with the call that gives a
// strided dense one; empty for a strided dense tensor.
std::string not_dense(at::Tensor const& x);

// A strided tensor of 1-, 2-, 4-, 8- or 16-byte elements.
void check_tensor(at::Tensor const& x, char const* op);

// The seed ladder and `copy` take (..., M, N): rank 2 or more.
void check_matrix(at::Tensor const& x, char const* op);

// `dims` as a permutation of x's dims (negative dims wrapped), or a clear error.
std::vector<int64_t> checked_permutation(at::Tensor const& x, at::IntArrayRef dims, char const* op);

// The permutation that swaps dim0 and dim1 (wrapped; out-of-range dims are torch's IndexError).
std::vector<int64_t> transpose_permutation(at::Tensor const& x, int64_t dim0, int64_t dim1, char const* op);

std::vector<int64_t> permuted_sizes(at::Tensor const& x, at::IntArrayRef perm);

// A preallocated `out`: contiguous, of `sizes`, x's dtype and device, not overlapping x.
void check_out(at::Tensor const& x, at::Tensor const& out, at::IntArrayRef sizes, char const* op);

// _copy_rows_: dst and src of one shape, dtype and device, rank >= 1, each index of dim 0 a
// contiguous row, rows not overlapping.
void check_copy_rows(at::Tensor const& dst, at::Tensor const& src);

}  // namespace cute_transpose
