// Op schemas (TORCH_LIBRARY) and their CPU implementations.
//
// Every transpose variant maps (..., M, N) -> (..., N, M) and returns a new contiguous tensor
// equal to x.transpose(-2, -1).contiguous(); `copy` returns a contiguous copy of x. On the CPU
// all variants share one cache-blocked implementation: the variants differ only in how a GPU
// moves the tile through shared memory.
#include <Python.h>
#include <torch/library.h>

#include "glue.h"
#include "variants.h"

// The module is a plain extension with no Python bindings: importing it runs the static
// registrations below. Ops are reached through torch.ops.cute_transpose.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}

namespace cute_transpose {
namespace {

template <Kind kind>
at::Tensor cpu_op(at::Tensor const& x, char const* name) {
  Prepared r = prepare(x, kind, name);
  if (!r.empty()) run_cpu(r.problem, kind);
  return r.out;
}

#define CUTE_TRANSPOSE_CPU_FN(name) \
  at::Tensor name##_cpu(at::Tensor const& x) { return cpu_op<Kind::Transpose>(x, #name); }
CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_CPU_FN)
#undef CUTE_TRANSPOSE_CPU_FN

at::Tensor copy_cpu(at::Tensor const& x) { return cpu_op<Kind::Copy>(x, "copy"); }

at::Tensor transpose_cpu(at::Tensor const& x, int64_t dim0, int64_t dim1) {
  return transpose_dims(x, dim0, dim1, [](at::Tensor const& t) { return cpu_op<Kind::Transpose>(t, "transpose"); });
}

}  // namespace

TORCH_LIBRARY(cute_transpose, m) {
#define CUTE_TRANSPOSE_DEF(name) m.def(#name "(Tensor x) -> Tensor");
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_DEF)
#undef CUTE_TRANSPOSE_DEF
  m.def("copy(Tensor x) -> Tensor");
  // The best kernel for x.transpose(dim0, dim1).contiguous(), chosen by fixed rules.
  m.def("transpose(Tensor x, int dim0=-2, int dim1=-1) -> Tensor");
}

TORCH_LIBRARY_IMPL(cute_transpose, CPU, m) {
#define CUTE_TRANSPOSE_IMPL(name) m.impl(#name, &name##_cpu);
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_IMPL)
#undef CUTE_TRANSPOSE_IMPL
  m.impl("copy", &copy_cpu);
  m.impl("transpose", &transpose_cpu);
}

}  // namespace cute_transpose
