// Op schemas (TORCH_LIBRARY) and their CPU implementations.
//
// Every transpose variant maps (..., M, N) -> (..., N, M) and returns a new contiguous tensor
// equal to x.transpose(-2, -1).contiguous(); `copy` returns a contiguous copy of x. On the CPU
// all variants share one cache-blocked implementation: the variants differ only in how a GPU
// moves the tile through shared memory.
#include <Python.h>
#include <torch/library.h>

#include <type_traits>
#include <vector>

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
  if (!r.empty()) run_cpu(r.problem);
  return r.out;
}

struct RunCpu {
  int guard(at::Tensor const&) const { return 0; }
  void operator()(Plan const& plan) const { run_cpu(plan.problem); }
};
using CpuOps = PlanOps<RunCpu>;

#define CUTE_TRANSPOSE_CPU_FN(name) \
  at::Tensor name##_cpu(at::Tensor const& x) { return cpu_op<Kind::Transpose>(x, #name); }
CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_CPU_FN)
#undef CUTE_TRANSPOSE_CPU_FN

at::Tensor copy_cpu(at::Tensor const& x) { return cpu_op<Kind::Copy>(x, "copy"); }

// at::Tag::out marks the out= overloads as write-only into `out`, which is what lets
// torch.compile functionalize them. Older torch has no such tag: then no tags.
template <class Tag, class = void>
struct OutTag {
  static std::vector<Tag> tags() { return {}; }
};
template <class Tag>
struct OutTag<Tag, std::void_t<decltype(Tag::out)>> {
  static std::vector<Tag> tags() { return {Tag::out}; }
};

}  // namespace

TORCH_LIBRARY(cute_transpose, m) {
#define CUTE_TRANSPOSE_DEF(name) m.def(#name "(Tensor x) -> Tensor");
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_DEF)
#undef CUTE_TRANSPOSE_DEF
  m.def("copy(Tensor x) -> Tensor");
  // The best kernels for x.transpose(dim0, dim1).contiguous() and x.permute(dims).contiguous(),
  // chosen by fixed rules, and their forms that write into a preallocated contiguous `out`.
  m.def("transpose(Tensor x, int dim0=-2, int dim1=-1) -> Tensor");
  // The out= forms name their input `src`, not `x`: torch 2.14's Inductor lowers a functional
  // custom op to an .out overload whose other arguments match it by name, type and default, and
  // then passes the non-tensor arguments twice (pytorch 2.14.1). Differing names opt out.
  std::vector<at::Tag> const out_tags = OutTag<at::Tag>::tags();
  m.def("transpose.out(Tensor src, int dim0=-2, int dim1=-1, *, Tensor(a!) out) -> Tensor(a!)", out_tags);
  m.def("permute(Tensor x, int[] dims) -> Tensor");
  m.def("permute.out(Tensor src, int[] dims, *, Tensor(a!) out) -> Tensor(a!)", out_tags);
}

TORCH_LIBRARY_IMPL(cute_transpose, CPU, m) {
#define CUTE_TRANSPOSE_IMPL(name) m.impl(#name, &name##_cpu);
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_IMPL)
#undef CUTE_TRANSPOSE_IMPL
  m.impl("copy", &copy_cpu);
  m.impl("transpose", &CpuOps::transpose);
  m.impl("transpose.out", &CpuOps::transpose_out);
  m.impl("permute", &CpuOps::permute);
  m.impl("permute.out", &CpuOps::permute_out);
}

}  // namespace cute_transpose
