"""Autograd and the torch.compile stack: gradients of every op, gradcheck, backward of permute
and transpose, torch.library.opcheck, torch.compile(fullgraph=True), static and dynamic, out=
included, and torch.export (dynamic dims, saved and loaded). CPU always; CUDA where a GPU is
present."""

import pytest
import torch

import cute_transpose
from conftest import (SM90_OPS, DEVICES, IS_SM90, MATRIX_OPS, assert_bits_equal, call, dims_id, expected,
                      inverse, op)


def skip_if_unsupported(name, device):
    if name in SM90_OPS and device == "cuda" and not IS_SM90:
        pytest.skip(f"{name} needs sm_90")


def sample(device, dtype=torch.float32, requires_grad=False):
    # (batch, M, N) with M and N * 4 bytes multiples of 16, so `tma` and `pipelined` accept it on sm_90.
    x = torch.randn(3, 36, 20, dtype=dtype, device=device)
    return x.requires_grad_(requires_grad)


# ----------------------------------------------------------------------------------------------
# Autograd


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", MATRIX_OPS)
def test_gradient(name, device):
    skip_if_unsupported(name, device)
    x = sample(device, dtype=torch.float64, requires_grad=True)
    y = getattr(cute_transpose, name)(x)
    g = torch.randn_like(y)
    y.backward(g)
    assert_bits_equal(x.grad, g if name == "copy" else g.transpose(-2, -1).contiguous())
    small = torch.randn(2, 4, 6, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(getattr(cute_transpose, name), (small,))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    x = torch.randn(2, 3, 4, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: cute_transpose.permute(t, (2, 0, 1)), (x,))
    assert torch.autograd.gradcheck(lambda t: cute_transpose.permute(t, (1, -1, 0)), (x,))
    assert torch.autograd.gradcheck(lambda t: cute_transpose.transpose(t, 0, 1), (x,))
    y = torch.randn(2, 3, 2, 3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: cute_transpose.transpose(t, 0, -2), (y,))


@pytest.mark.parametrize("dims", [(2, 0, 1), (1, 2, 0), (3, 1, 0, 2), (-1, 0, -2, 1), (0,), ()],
                         ids=dims_id)
@pytest.mark.parametrize("device", DEVICES)
def test_backward_is_the_inverse_permute(device, dims):
    shape = {0: (), 1: (5,), 3: (3, 4, 5), 4: (2, 3, 4, 5)}[len(dims)]
    x = torch.randn(shape, dtype=torch.float64, device=device, requires_grad=True)
    y = cute_transpose.permute(x, dims)
    g = torch.randn_like(y)
    y.backward(g)
    inv = inverse([d % max(len(dims), 1) for d in dims])
    assert_bits_equal(x.grad, g.permute(inv).contiguous())
    # A non-contiguous incoming gradient.
    x.grad = None
    y = cute_transpose.permute(x, dims)
    g = torch.randn(tuple(y.shape)[::-1], dtype=torch.float64, device=device).permute(
        list(range(y.dim() - 1, -1, -1)))
    y.backward(g)
    assert_bits_equal(x.grad, g.permute(inv).contiguous())


@pytest.mark.parametrize("dims", [(0, 1), (0, 2), (-1, 1), (1, 1)], ids=dims_id)
@pytest.mark.parametrize("device", DEVICES)
def test_backward_of_transpose(device, dims):
    x = torch.randn(3, 4, 5, dtype=torch.float64, device=device, requires_grad=True)
    y = cute_transpose.transpose(x, *dims)
    g = torch.randn_like(y)
    y.backward(g)
    assert_bits_equal(x.grad, g.transpose(*dims).contiguous())


# ----------------------------------------------------------------------------------------------
# opcheck


def opcheck_cases(device):
    """name -> (op overload, args, kwargs, also with requires_grad): every matrix op on a batch,
    then permute and transpose over other dims, and the out= overloads."""
    ops = torch.ops.cute_transpose
    x = torch.randn(3, 4, 5, device=device)
    strided = torch.randn(2, 3, 4, 5, device=device)[:, ::2].transpose(0, 3)
    return {
        **{name: (op(name), (sample(device),), {}, True) for name in MATRIX_OPS},
        "permute": (ops.permute.default, (x, [2, 0, 1]), {}, True),
        "permute_negative_dims": (ops.permute.default, (x, [-1, 1, 0]), {}, True),
        "permute_strided": (ops.permute.default, (strided, [3, 1, 0, 2]), {}, True),
        "permute_rank0": (ops.permute.default, (torch.randn((), device=device), []), {}, True),
        "transpose_0_2": (ops.transpose.default, (x, 0, 2), {}, True),
        "permute.out": (ops.permute.out, (x, [2, 0, 1]),
                        {"out": torch.empty(5, 3, 4, device=device)}, False),
        "transpose.out": (ops.transpose.out, (x, 0, 2),
                          {"out": torch.empty(5, 4, 3, device=device)}, False),
        "transpose.out_default_dims": (ops.transpose.out, (x,),
                                       {"out": torch.empty(3, 5, 4, device=device)}, False),
    }


def out_ops_functionalize():
    """Whether this torch can trace out= custom ops (torch.compile, opcheck's AOT test): it needs
    torch.Tag.out on the schema (set where torch has it) and auto-functionalization of out ops.
    torch 2.11 lacks them and stops with "Found a custom (non-ATen) operator whose output has
    alias annotations"; torch 2.14 has both."""
    from torch._higher_order_ops.auto_functionalize import can_auto_functionalize
    return can_auto_functionalize(torch.ops.cute_transpose.permute.out)


needs_out_tracing = pytest.mark.skipif(not out_ops_functionalize(),
                                       reason="this torch cannot functionalize out= custom ops")



@pytest.mark.parametrize("case", list(opcheck_cases("cpu")))
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device, case):
    skip_if_unsupported(case, device)
    overload, args, kwargs, with_grad = opcheck_cases(device)[case]
    if "out" in overload._overloadname and not out_ops_functionalize():
        # Everything but the AOT (functionalization) test, which this torch cannot pass.
        torch.library.opcheck(overload, args, kwargs,
                              test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))
        pytest.skip("this torch cannot functionalize out= custom ops (AOT test skipped)")
    torch.library.opcheck(overload, args, kwargs)
    if with_grad:
        x = args[0].detach().clone().requires_grad_(True)
        torch.library.opcheck(overload, (x, *args[1:]), kwargs)


# ----------------------------------------------------------------------------------------------
# torch.compile


def _matrix_op_case(name):
    fn = getattr(cute_transpose, name)
    return lambda x: fn(x) + 1, lambda x: expected(name, x) + 1


# name -> (the function compiled, its value computed by torch)
COMPILED = {
    **{name: _matrix_op_case(name) for name in MATRIX_OPS},
    "permute": (lambda x: cute_transpose.permute(x, (2, 0, 1)) + 1,
                lambda x: expected("permute", x, (2, 0, 1)) + 1),
    "permute_negative": (lambda x: cute_transpose.permute(x, (-1, 0, -2)) * 2,
                         lambda x: expected("permute", x, (-1, 0, -2)) * 2),
    "transpose_0_2": (lambda x: cute_transpose.transpose(x, 0, 2) + 1,
                      lambda x: expected("transpose", x, (0, 2)) + 1),
}


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", list(COMPILED))
def test_torch_compile_fullgraph(fn, device, dynamic):
    skip_if_unsupported(fn, device)
    eager, ref = COMPILED[fn]
    torch._dynamo.reset()  # every parametrization compiles a fresh graph
    compiled = torch.compile(eager, fullgraph=True, dynamic=dynamic)
    for shape in [(3, 36, 20), (5, 44, 24)]:  # a second shape exercises the dynamic graph
        x = torch.randn(shape, device=device)
        y = compiled(x)
        assert_bits_equal(y, eager(x))
        assert_bits_equal(y, ref(x))


@pytest.fixture
def no_compile_caches():
    """Compile from scratch: a graph found in the on-disk caches (compiled against an earlier
    build of the ops, say) skips functionalization, where out= ops fail or pass."""
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        yield
    torch._dynamo.reset()


@needs_out_tracing
@pytest.mark.usefixtures("no_compile_caches")
@pytest.mark.filterwarnings("ignore:dynamo_pgo force disabled")
@pytest.mark.parametrize("kind", ["permute", "transpose"])
@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_out(device, kind):
    """out= under torch.compile: the result (which is `buf`) is used, and the mutation of the
    graph input `buf` is kept. (Name the buffer anything but `out`: a parameter named `out`
    takes another path through torch.compile.)"""
    dims = (2, 0, 1) if kind == "permute" else (0, 2)

    def fn(x, buf):
        return call(kind, x, dims, out=buf) + 1

    compiled = torch.compile(fn, fullgraph=True)
    x = torch.randn(3, 36, 20, device=device)
    ref = expected(kind, x, dims)
    buf = torch.zeros(ref.shape, device=device)
    assert_bits_equal(compiled(x, buf), ref + 1)
    assert_bits_equal(buf, ref)



class Heads(torch.nn.Module):
    """An attention layout change written with the ops: (B, S, H, D) -> (B, H, D, S)."""

    def forward(self, x):
        return cute_transpose.transpose(cute_transpose.permute(x, (0, 2, 1, 3)), -2, -1) * 2


@pytest.mark.parametrize("device", DEVICES)
def test_torch_export_dynamic_batch_saved_and_loaded(device, tmp_path):
    """torch.export keeps the ops in the exported graph (their fake kernels give the shapes), with
    a dynamic batch dim, and the program saved and loaded runs them."""
    x = torch.randn(2, 16, 4, 8, device=device)
    program = torch.export.export(Heads(), (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2)}})
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert {"cute_transpose.permute.default", "cute_transpose.transpose.default"} <= targets, targets
    torch.export.save(program, tmp_path / "heads.pt2")
    loaded = torch.export.load(tmp_path / "heads.pt2")
    for batch in (2, 5):
        x = torch.randn(batch, 16, 4, 8, device=device)
        ref = x.permute(0, 2, 3, 1).contiguous() * 2
        assert_bits_equal(program.module()(x), ref)
        assert_bits_equal(loaded.module()(x), ref)


# ----------------------------------------------------------------------------------------------
# torch.func: under the differentiating transforms the ops compute their values with ATen's
# differentiable ops (C++ autograd::Functions are refused there); eager keeps the C++ autograd.

FUNC_CASES = [
    ("permute", lambda t: cute_transpose.permute(t, (2, 0, 1)), lambda t: t.permute(2, 0, 1)),
    ("transpose", lambda t: cute_transpose.transpose(t, 0, 2), lambda t: t.transpose(0, 2)),
    ("swizzled", lambda t: cute_transpose.swizzled(t), lambda t: t.transpose(-2, -1)),
    ("copy", lambda t: cute_transpose.copy(t), lambda t: t),
]


@pytest.mark.parametrize("name, ours, torchs", FUNC_CASES, ids=[c[0] for c in FUNC_CASES])
def test_torch_func_transforms(name, ours, torchs):
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    w = torch.randn_like(torchs(x).contiguous())
    loss = lambda f: (lambda t: (f(t) * w).sum())  # noqa: E731
    assert torch.equal(torch.func.grad(loss(ours))(x), torch.func.grad(loss(torchs))(x))
    out, pullback = torch.func.vjp(ours, x)
    assert torch.equal(out, torchs(x).contiguous()) and out.is_contiguous()
    assert torch.equal(pullback(w)[0], torch.func.vjp(torchs, x)[1](w)[0])
    assert torch.equal(torch.func.jacrev(ours)(x), torch.func.jacrev(torchs)(x))
    assert torch.equal(torch.func.jacfwd(ours)(x), torch.func.jacfwd(torchs)(x))
    batched = torch.randn(5, 2, 3, 4, dtype=torch.float64)
    assert torch.equal(torch.func.vmap(torch.func.grad(loss(ours)))(batched),
                       torch.func.vmap(torch.func.grad(loss(torchs)))(batched))


def test_eager_autograd_stays_in_cpp():
    x = torch.randn(3, 4, requires_grad=True)
    assert type(cute_transpose.permute(x, (1, 0)).grad_fn).__name__ == "CppFunction"
