// Autograd, in C++ so that a call never leaves C++ (Python-registered autograd costs several
// microseconds per call, which dominates small transposes). The gradient of a transpose is the
// transpose of the gradient; the gradient of a copy is the gradient.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "variants.h"

namespace cute_transpose {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

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
    at::AutoDispatchBelowADInplaceOrView guard;
    return kForward(x);
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return {kTransposes ? call_transpose(grads[0], -2, -1) : grads[0]};
  }
};

struct AnyTwoDims : torch::autograd::Function<AnyTwoDims> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor const& x, int64_t dim0, int64_t dim1) {
    ctx->saved_data["dim0"] = dim0;
    ctx->saved_data["dim1"] = dim1;
    at::AutoDispatchBelowADInplaceOrView guard;
    return call_transpose(x, dim0, dim1);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {call_transpose(grads[0], ctx->saved_data["dim0"].toInt(), ctx->saved_data["dim1"].toInt()),
            at::Tensor(), at::Tensor()};
  }
};

#define CUTE_TRANSPOSE_REDISPATCH(name)                                                                 \
  at::Tensor call_##name(at::Tensor const& x) {                                                         \
    static auto op =                                                                                    \
        c10::Dispatcher::singleton().findSchemaOrThrow("cute_transpose::" #name, "").typed<at::Tensor(at::Tensor const&)>(); \
    return op.call(x);                                                                                  \
  }                                                                                                     \
  at::Tensor name##_autograd(at::Tensor const& x) { return LastTwoDims<&call_##name, true>::apply(x); }
CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_REDISPATCH)
#undef CUTE_TRANSPOSE_REDISPATCH

at::Tensor call_copy(at::Tensor const& x) {
  static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("cute_transpose::copy", "").typed<at::Tensor(at::Tensor const&)>();
  return op.call(x);
}
at::Tensor copy_autograd(at::Tensor const& x) { return LastTwoDims<&call_copy, false>::apply(x); }

at::Tensor transpose_autograd(at::Tensor const& x, int64_t dim0, int64_t dim1) {
  return AnyTwoDims::apply(x, dim0, dim1);
}

}  // namespace

TORCH_LIBRARY_IMPL(cute_transpose, Autograd, m) {
#define CUTE_TRANSPOSE_IMPL(name) m.impl(#name, &name##_autograd);
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_IMPL)
#undef CUTE_TRANSPOSE_IMPL
  m.impl("copy", &copy_autograd);
  m.impl("transpose", &transpose_autograd);
}

}  // namespace cute_transpose
