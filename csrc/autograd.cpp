// Autograd, in C++ so that a call never leaves C++ (Python-registered autograd costs several
// microseconds per call, which dominates small transposes). The gradient of a transpose is the
// transpose of the gradient; the gradient of a copy is the gradient.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/WrapDimUtils.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "checks.h"
#include "variants.h"

namespace cute_transpose {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// torch.func's differentiating transforms (grad, vjp, jvp, jacrev, jacfwd, hessian) refuse C++
// autograd::Functions. They hand these kernels their wrapped tensors (FuncTorchGradWrapper); for
// those, the same values come from differentiable ATen ops, which every transform supports.
// Eager calls pay one bit test of the input's key set.
bool under_functorch(at::Tensor const& x) { return x.key_set().has(c10::DispatchKey::FuncTorchGradWrapper); }
at::Tensor contiguous_copy(at::Tensor const& view) { return view.clone(at::MemoryFormat::Contiguous); }

// Whether a call has anything for autograd to record: a gradient to track, or a forward-mode
// tangent (which the C++ Functions below refuse with torch's own error). Plain calls skip
// Function::apply, whose graph node and saved data cost every call.
bool needs_autograd(at::Tensor const& x) {
  return (at::GradMode::is_enabled() && x.requires_grad()) || x._fw_grad(/*level=*/0).defined();
}

// Runs `call` below autograd.
template <class Call>
at::Tensor below_autograd(Call&& call) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return call();
}

at::Tensor call_transpose(at::Tensor const& x, int64_t dim0, int64_t dim1) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("cute_transpose::transpose", "")
                       .typed<at::Tensor(at::Tensor const&, int64_t, int64_t)>();
  return op.call(x, dim0, dim1);
}

// Forward: the op itself, below autograd. Backward: transpose (or pass through) the gradient.
template <at::Tensor (*kForward)(at::Tensor const&), bool kTransposes>
struct LastTwoDims : torch::autograd::Function<LastTwoDims<kForward, kTransposes>> {
  static at::Tensor forward(AutogradContext*, at::Tensor const& x) {
    return below_autograd([&] { return kForward(x); });
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return {kTransposes ? call_transpose(grads[0], -2, -1) : grads[0]};
  }
};

struct AnyTwoDims : torch::autograd::Function<AnyTwoDims> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor const& x, int64_t dim0, int64_t dim1) {
    ctx->saved_data["dim0"] = dim0;
    ctx->saved_data["dim1"] = dim1;
    return below_autograd([&] { return call_transpose(x, dim0, dim1); });
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {call_transpose(grads[0], ctx->saved_data["dim0"].toInt(), ctx->saved_data["dim1"].toInt()),
            at::Tensor(), at::Tensor()};
  }
};

#define CUTE_TRANSPOSE_REDISPATCH(name, ...)                                                               \
  at::Tensor call_##name(at::Tensor const& x) {                                                         \
    static auto op =                                                                                    \
        c10::Dispatcher::singleton().findSchemaOrThrow("cute_transpose::" #name, "").typed<at::Tensor(at::Tensor const&)>(); \
    return op.call(x);                                                                                  \
  }                                                                                                     \
  at::Tensor name##_autograd(at::Tensor const& x) {                                                   \
    if (under_functorch(x)) {                                                                            \
      check_matrix(x, #name);                                                                            \
      return contiguous_copy(x.transpose(-2, -1));                                                      \
    }                                                                                                   \
    if (!needs_autograd(x)) return below_autograd([&] { return call_##name(x); });                     \
    return LastTwoDims<&call_##name, true>::apply(x);                                                   \
  }
CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_REDISPATCH)
#undef CUTE_TRANSPOSE_REDISPATCH

at::Tensor call_copy(at::Tensor const& x) {
  static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("cute_transpose::copy", "").typed<at::Tensor(at::Tensor const&)>();
  return op.call(x);
}
at::Tensor copy_autograd(at::Tensor const& x) {
  if (under_functorch(x)) {
    check_matrix(x, "copy");
    return contiguous_copy(x);
  }
  if (!needs_autograd(x)) return below_autograd([&] { return call_copy(x); });
  return LastTwoDims<&call_copy, false>::apply(x);
}

at::Tensor transpose_autograd(at::Tensor const& x, int64_t dim0, int64_t dim1) {
  if (under_functorch(x)) return contiguous_copy(x.transpose(dim0, dim1));
  if (!needs_autograd(x)) return below_autograd([&] { return call_transpose(x, dim0, dim1); });
  return AnyTwoDims::apply(x, dim0, dim1);
}

at::Tensor call_permute(at::Tensor const& x, at::IntArrayRef dims) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("cute_transpose::permute", "")
                       .typed<at::Tensor(at::Tensor const&, at::IntArrayRef)>();
  return op.call(x, dims);
}

// The gradient of a permute is the inverse permute: output dim j was input dim dims[j].
struct Permute : torch::autograd::Function<Permute> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor const& x, at::IntArrayRef dims) {
    int64_t const rank = x.dim();
    std::vector<int64_t> inverse(dims.size());
    for (size_t j = 0; j < dims.size(); ++j) inverse[at::maybe_wrap_dim(dims[j], rank)] = int64_t(j);
    ctx->saved_data["inverse"] = inverse;
    return below_autograd([&] { return call_permute(x, dims); });
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {call_permute(grads[0], ctx->saved_data["inverse"].toIntVector()), at::Tensor()};
  }
};

at::Tensor permute_autograd(at::Tensor const& x, at::IntArrayRef dims) {
  // A wrong `dims` must fail with the op's own message, not inside the inverse above.
  if (int64_t(dims.size()) != x.dim() || (!needs_autograd(x) && !under_functorch(x)))
    return below_autograd([&] { return call_permute(x, dims); });
  if (under_functorch(x)) return contiguous_copy(x.permute(dims));
  return Permute::apply(x, dims);
}

// out= forms, like torch's: no autograd through them. They run below autograd and record the
// write to `out` in its version counter, so a saved `out` in another graph is caught.
void refuse_grad(at::Tensor const& x, at::Tensor const& out, char const* op) {
  TORCH_CHECK(!(at::GradMode::is_enabled() && (x.requires_grad() || out.requires_grad())), "cute_transpose.", op,
              ": functions with out=... arguments don't support automatic differentiation (autograd), "
              "but one of the arguments requires grad");
}

// Runs `call` (the out= op, below autograd) after refusing gradients, then bumps out's version.
template <class Call>
at::Tensor& out_below_autograd(at::Tensor const& x, at::Tensor& out, char const* op, Call&& call) {
  refuse_grad(x, out, op);
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    call();
  }
  torch::autograd::impl::bump_version(out);
  return out;
}

at::Tensor& permute_out_autograd(at::Tensor const& x, at::IntArrayRef dims, at::Tensor& out) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("cute_transpose::permute", "out")
                       .typed<at::Tensor&(at::Tensor const&, at::IntArrayRef, at::Tensor&)>();
  return out_below_autograd(x, out, "permute", [&] { op.call(x, dims, out); });
}

at::Tensor& transpose_out_autograd(at::Tensor const& x, int64_t dim0, int64_t dim1, at::Tensor& out) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("cute_transpose::transpose", "out")
                       .typed<at::Tensor&(at::Tensor const&, int64_t, int64_t, at::Tensor&)>();
  return out_below_autograd(x, out, "transpose", [&] { op.call(x, dim0, dim1, out); });
}

}  // namespace

TORCH_LIBRARY_IMPL(cute_transpose, Autograd, m) {
#define CUTE_TRANSPOSE_IMPL(name, ...) m.impl(#name, &name##_autograd);
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_IMPL)
#undef CUTE_TRANSPOSE_IMPL
  m.impl("copy", &copy_autograd);
  m.impl("transpose", &transpose_autograd);
  m.impl("transpose.out", &transpose_out_autograd);
  m.impl("permute", &permute_autograd);
  m.impl("permute.out", &permute_out_autograd);
}

}  // namespace cute_transpose
