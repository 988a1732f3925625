// Op schemas (TORCH_LIBRARY), the CPU implementations, and the ops that describe a plan.
//
// Every transpose variant maps (..., M, N) -> (..., N, M) and returns a new contiguous tensor
// equal to x.transpose(-2, -1).contiguous(); `copy` returns a contiguous copy of x. On the CPU
// every op runs ATen's strided copy: the variants differ only in how a GPU moves tiles, and
// ATen's CPU copy is as fast as anything we would write (the CPU path exists for correctness
// and CPU users).
#include <Python.h>
#include <torch/library.h>

#include <sstream>
#include <type_traits>
#include <vector>

#include "autotune.h"
#include "ops.h"
#include "variants.h"

// The module is a plain extension with no Python bindings: importing it runs the static
// registrations below. Ops are reached through torch.ops.cute_transpose.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}

namespace cute_transpose {

namespace {

// Whether ATen's copy takes x as it is: eager's own call (two dtype views fewer than the integer
// route below, about 1 us of host time in a small permute's 6-8). Conjugate and negative views
// always: ATen's copy resolves their bits as it copies.
bool aten_copies_as_is(at::Tensor const& x, at::Tensor const& out) {
  if (x.is_conj() || x.is_neg() || out.is_conj() || out.is_neg()) return true;
  switch (x.scalar_type()) {
    case at::kBool: case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble: case at::kComplexFloat:
    case at::kComplexDouble:
      return true;
    default:
      return false;
  }
}

}  // namespace

void aten_permute_into(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out) {
  if (aten_copies_as_is(x, out)) {
    out.copy_(x.permute(perm));
    return;
  }
  // The other dtypes (float8, complex32, unsigned 16-64-bit, bits) as integers of their size: a
  // same-size reinterpretation works for any strides; 16-byte elements are complex128.
  at::ScalarType bits = at::kComplexDouble;
  switch (x.element_size()) {
    case 1: bits = at::kByte; break;
    case 2: bits = at::kShort; break;
    case 4: bits = at::kInt; break;
    case 8: bits = at::kLong; break;
  }
  out.view(bits).copy_(x.view(bits).permute(perm));
}

at::Tensor new_result(at::Tensor const& x, at::IntArrayRef perm) {
  return at::empty(permuted_sizes(x, perm), x.options().memory_format(at::MemoryFormat::Contiguous));
}

namespace {

// ATen's copy for every op: the CPU's kernels, and on any device the conjugate and negative
// views' (below).
struct RunAten {
  static int guard(at::Tensor const&) { return 0; }
  static void best(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out, Plan const&) {
    aten_permute_into(x, perm, out);
  }
  static void forced(at::Tensor const& x, at::IntArrayRef perm, at::Tensor& out, Plan const&, Kernel, char const*) {
    aten_permute_into(x, perm, out);
  }
};
using AtenOps = PlanOps<RunAten>;


at::Tensor permute_with_cpu(at::Tensor const& x, at::IntArrayRef dims, c10::string_view kernel) {
  auto const perm = checked_permutation(x, dims, "_permute_with");
  TORCH_CHECK(kernel == "aten", "cute_transpose._permute_with: kernel '", kernel,
              "' runs on CUDA tensors only; on the CPU every op is ATen's copy ('aten')");
  at::Tensor out = new_result(x, perm);
  if (out.numel()) aten_permute_into(x, perm, out);
  return out;
}

std::string json_string(std::string const& s) {
  std::string quoted = "\"";
  for (char c : s) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return quoted + "\"";
}

// The box plan's fields, for tests that replay the Box kernel's addressing on the CPU.
std::string box_json(BoxPlan const& b) {
  std::ostringstream j;
  auto list = [&](char const* name, auto const* v, int n) {
    j << "\"" << name << "\": [";
    for (int i = 0; i < n; ++i) j << (i ? ", " : "") << v[i];
    j << "], ";
  };
  j << "{";
  list("size", b.size, b.rank);
  list("tile", b.tile, b.rank);
  list("in", b.in, b.rank);
  list("out", b.out, b.rank);
  list("smem", b.smem, b.rank);
  list("in_order", b.in_order, b.rank);
  list("out_order", b.out_order, b.rank);
  list("outer_size", b.outer_size, b.outer_rank);
  list("outer_in", b.outer_in, b.outer_rank);
  list("outer_out", b.outer_out, b.outer_rank);
  list("chunk_of", b.chunk_of, b.outer_rank);
  j << "\"vin\": " << b.vin << ", \"vout\": " << b.vout << ", \"volume\": " << b.volume
    << ", \"smem_elems\": " << b.smem_elems << ", \"boxes\": " << b.boxes
    << ", \"keeps_positions\": " << (b.keeps_positions() ? "true" : "false") << "}";
  return j.str();
}

// The plan and the CUDA kernel choice for x.permute(dims) on a GPU of compute capability
// `arch` (e.g. 90) and name `gpu` (device_rules: "" for the H100's rules), as JSON: the
// chooser's pick, or `kernel` when one is named. A fresh contiguous output is assumed (aligned
// like any allocation).
std::string explain(at::Tensor const& x, at::IntArrayRef dims, int64_t arch, c10::string_view kernel,
                    c10::string_view gpu) {
  auto const perm = checked_permutation(x, dims, "explain");
  at::Tensor const out = at::empty(permuted_sizes(x, perm), x.options().device(at::kMeta));
  std::ostringstream j;
  j << "{\"arch\": " << arch << ", ";
  auto const plan = out.numel() == 0 ? std::nullopt : plan_permute(x, perm, out);
  if (!plan) {
    j << "\"route\": " << json_string(out.numel() == 0 ? "empty" : "more than 8 dims after merging")
      << ", \"kernel\": " << json_string(out.numel() == 0 ? "none" : "aten")
      << ", \"name\": " << json_string(out.numel() == 0 ? "none" : "aten") << ", \"config\": \"\", \"class\": \"\", "
      << "\"reason\": " << json_string(out.numel() == 0 ? "an empty result launches nothing" : "ATen's strided copy")
      << ", \"dims\": []}";
    return j.str();
  }
  Device const device = device_rules(int(arch), /*tma=*/arch >= 90, std::string(gpu));
  Choice c;
  bool is_offered = true;  // the chooser would consider this kernel for this permute
  std::string timings, why;
  auto const tuned = kernel.empty() && autotune_enabled() && x.is_cuda()
                         ? remembered(*plan, device, x.device().index(), &timings)
                         : std::nullopt;
  if (kernel.empty() && (x.is_conj() || x.is_neg())) {  // transpose and permute: ATen's copy (below)
    c = *force(*plan, Kernel::Aten, device, nullptr);
    c.key = class_key(*plan);
    c.reason = std::string(x.is_conj() ? "a conjugate" : "a negative") +
               " view: ATen's copy, which resolves the bit as it copies, in one pass";
  } else if (tuned) {
    c = *tuned;
    c.key = class_key(*plan);
    c.reason = "autotuned on this device (median launches, fastest first): " + timings;
  } else if (kernel.empty()) {
    c = choose(*plan, device, /*explain=*/true);
  } else {
    auto const named = parse_kernel_name(std::string(kernel));
    if (!named) {
      std::vector<std::string> all;  // the candidates, then the seed ladder's
      for (int k = 0; k <= int(Kernel::SeedCopy); ++k) all.push_back(kernel_name(Kernel(k)));
      TORCH_CHECK(false, "cute_transpose.explain: unknown kernel '", kernel, "'; the kernels are ", c10::Join(", ", all),
                  ", ", named_forms());
    }
    auto forced = force_named(*plan, *named, device, &why);
    TORCH_CHECK(forced, "cute_transpose.explain: the ", kernel, " kernel cannot run this permute: ", why);
    c = *forced;
    c.key = class_key(*plan);
    c.reason = "named by the caller";
    is_offered = offered(c, &why);
    if (!is_offered) c.reason += "; the chooser does not offer it here: " + why;
  }
  j << "\"route\": " << json_string(plan->copy_route() ? "copy" : "transpose") << ", \"kernel\": "
    << json_string(kernel_name(c.kernel)) << ", \"name\": " << json_string(forced_name(c.kernel, c.together))
    << ", \"config\": " << json_string(c.config())
    << ", \"class\": " << json_string(c.key) << ", \"reason\": " << json_string(c.reason) << ", \"m\": " << plan->m
    << ", \"n\": " << plan->n << ", \"element_size\": " << plan->element_size
    << ", \"offered\": " << (is_offered ? "true" : "false");
  if (c.box) j << ", \"box\": " << box_json(*c.box);
  j << ", \"dims\": [";
  for (int i = 0; i < plan->rank; ++i)
    j << (i ? ", " : "") << "[" << plan->dims[i].size << ", " << plan->dims[i].in << ", " << plan->dims[i].out << "]";
  j << "]}";
  return j.str();
}

std::vector<std::string> kernels() { return candidate_names(); }

std::vector<std::string> variants() {
#define CUTE_TRANSPOSE_NAME(name, ...) #name,
  return {CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_NAME)};
#undef CUTE_TRANSPOSE_NAME
}

// Nested, sparse and quantized tensors reach the dispatcher under their own keys (autograd's
// first): answer with our message, which names what the input (the first tensor) is.
void not_dense_error(c10::OperatorHandle const& op, torch::jit::Stack* stack) {
  std::string got;
  for (c10::IValue const& arg : torch::jit::last(*stack, op.schema().arguments().size()))
    if (arg.isTensor() && !(got = not_dense(arg.toTensor())).empty()) break;
  TORCH_CHECK(false, "cute_transpose.", op.schema().name().substr(16),
              ": expected a strided (dense) tensor, got ", got.empty() ? "another kind of tensor" : got);
}

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
#define CUTE_TRANSPOSE_DEF(name, kernel) m.def(#name "(Tensor x) -> Tensor");
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_DEF)
#undef CUTE_TRANSPOSE_DEF
  m.def("copy(Tensor x) -> Tensor");
  // The best kernels for x.transpose(dim0, dim1).contiguous() and x.permute(dims).contiguous(),
  // chosen per shape (choose.h), and their forms that write into a preallocated contiguous `out`.
  m.def("transpose(Tensor x, int dim0=-2, int dim1=-1) -> Tensor");
  // The out= forms name their input `src`, not `x`: torch 2.14's Inductor lowers a functional
  // custom op to an .out overload whose other arguments match it by name, type and default, and
  // then passes the non-tensor arguments twice (pytorch 2.14.1). Differing names opt out.
  std::vector<at::Tag> const out_tags = OutTag<at::Tag>::tags();
  m.def("transpose.out(Tensor src, int dim0=-2, int dim1=-1, *, Tensor(a!) out) -> Tensor(a!)", out_tags);
  m.def("permute(Tensor x, int[] dims) -> Tensor");
  m.def("permute.out(Tensor src, int[] dims, *, Tensor(a!) out) -> Tensor(a!)", out_tags);
  // Private: one named kernel of the chooser's candidates (for tuning and tests), the plan and
  // choice in words, the candidates' names, and the ladder's variants in order.
  m.def("_permute_with(Tensor x, int[] dims, str kernel) -> Tensor");
  // Private: dst[i] = src[i] for each index of dim 0, rows contiguous and strided apart; on CUDA
  // by the copy engine (the distributed transpose's receive step).
  m.def("_copy_rows_(Tensor(a!) dst, Tensor src) -> ()");
  m.def("_explain(Tensor x, int[] dims, int arch, str kernel=\"\", str gpu=\"\") -> str", &explain);
  m.def("_kernels() -> str[]", &kernels);
  m.def("_variants() -> str[]", &variants);
}

TORCH_LIBRARY_IMPL(cute_transpose, CPU, m) {
#define CUTE_TRANSPOSE_IMPL(name, kernel) m.impl(#name, &ladder_op<RunAten, Kernel::kernel>);
  CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_IMPL)
  CUTE_TRANSPOSE_IMPL(copy, SeedCopy)
#undef CUTE_TRANSPOSE_IMPL
  m.impl("transpose", &AtenOps::transpose);
  m.impl("transpose.out", &AtenOps::transpose_out);
  m.impl("permute", &AtenOps::permute);
  m.impl("permute.out", &AtenOps::permute_out);
  m.impl("_permute_with", &permute_with_cpu);
  m.impl("_copy_rows_", [](at::Tensor& dst, at::Tensor const& src) {
    check_copy_rows(dst, src);
    dst.copy_(src);
  });
}

// Conjugate and negative views (x.conj(), x.conj().imag) keep their sign flip as a bit. torch's
// fallback for those keys would first resolve the bit into a copy, which the op would then copy
// again; ATen's copy resolves it as it copies, in the one pass that eager's .contiguous() takes.
// So `transpose` and `permute` run ATen's copy on them, on every device. (The seed ladder's
// variants keep the fallback: they are there to run their own kernel.)
// explain() sees the view itself, too, and says so.
#define CUTE_TRANSPOSE_LAZY_BIT(key)                        \
  TORCH_LIBRARY_IMPL(cute_transpose, key, m) {              \
    m.impl("transpose", &AtenOps::transpose);               \
    m.impl("transpose.out", &AtenOps::transpose_out);       \
    m.impl("permute", &AtenOps::permute);                   \
    m.impl("permute.out", &AtenOps::permute_out);           \
    m.impl("_explain", &explain);                           \
  }
CUTE_TRANSPOSE_LAZY_BIT(Conjugate)
CUTE_TRANSPOSE_LAZY_BIT(Negative)
#undef CUTE_TRANSPOSE_LAZY_BIT

#define CUTE_TRANSPOSE_NOT_DENSE_IMPL(name, ...) \
  m.impl(#name, torch::CppFunction::makeFromBoxedFunction<&not_dense_error>());
#define CUTE_TRANSPOSE_NOT_DENSE(key)                                                         \
  TORCH_LIBRARY_IMPL(cute_transpose, key, m) {                                                \
    CUTE_TRANSPOSE_FOR_EACH_VARIANT(CUTE_TRANSPOSE_NOT_DENSE_IMPL)                            \
    for (char const* name : {"copy", "transpose", "transpose.out", "permute", "permute.out",  \
                             "_permute_with", "_explain"})                                     \
      m.impl(name, torch::CppFunction::makeFromBoxedFunction<&not_dense_error>());            \
  }
CUTE_TRANSPOSE_NOT_DENSE(AutogradNestedTensor)
CUTE_TRANSPOSE_NOT_DENSE(NestedTensorCPU)
CUTE_TRANSPOSE_NOT_DENSE(NestedTensorCUDA)
CUTE_TRANSPOSE_NOT_DENSE(SparseCPU)
CUTE_TRANSPOSE_NOT_DENSE(SparseCUDA)
CUTE_TRANSPOSE_NOT_DENSE(SparseCsrCPU)
CUTE_TRANSPOSE_NOT_DENSE(SparseCsrCUDA)
CUTE_TRANSPOSE_NOT_DENSE(QuantizedCPU)
CUTE_TRANSPOSE_NOT_DENSE(QuantizedCUDA)
#undef CUTE_TRANSPOSE_NOT_DENSE
#undef CUTE_TRANSPOSE_NOT_DENSE_IMPL

}  // namespace cute_transpose
