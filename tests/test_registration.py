"""The ops as torch.library has them: the op list, each schema, the Python functions against the
C++ registrations, and the fake (meta) kernels' shapes."""

import inspect

import pytest
import torch

import cute_transpose
from conftest import MATRIX_OPS, call, expected, op


def test_python_names_match_cpp_registrations():
    # Names starting with "_" are private helpers (the bank-map analysis), not transposes.
    registered = {name.split("::", 1)[1] for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("cute_transpose::") and not name.startswith("cute_transpose::_")}
    assert registered == set(cute_transpose.OPS) | {"transpose.out", "permute.out"}
    assert set(cute_transpose.VARIANTS) < set(cute_transpose.OPS)
    for name in cute_transpose.OPS:
        assert callable(getattr(cute_transpose, name))


# The schema of every overload. The out= forms name their input `src` (see csrc/ops.cpp).
SCHEMAS = {
    **{f"{name}.default": f"cute_transpose::{name}(Tensor x) -> Tensor"
       for name in cute_transpose.VARIANTS + ("copy",)},
    "transpose.default": "cute_transpose::transpose(Tensor x, int dim0=-2, int dim1=-1) -> Tensor",
    "transpose.out": "cute_transpose::transpose.out(Tensor src, int dim0=-2, int dim1=-1, *, "
                     "Tensor(a!) out) -> Tensor(a!)",
    "permute.default": "cute_transpose::permute(Tensor x, int[] dims) -> Tensor",
    "permute.out": "cute_transpose::permute.out(Tensor src, int[] dims, *, Tensor(a!) out) "
                   "-> Tensor(a!)",
}


@pytest.mark.parametrize("overload", list(SCHEMAS))
def test_schema(overload):
    name, overload_name = overload.split(".")
    packet = getattr(torch.ops.cute_transpose, name)
    assert str(getattr(packet, overload_name)._schema) == SCHEMAS[overload]
    # torch.Tag.out (where this torch has it) marks the out= forms, and only them.
    if hasattr(torch.Tag, "out"):
        assert (torch.Tag.out in getattr(packet, overload_name).tags) == (overload_name == "out")


def test_every_overload_has_a_schema_here():
    overloads = {f"{name}.{o}" for name in cute_transpose.OPS
                 for o in getattr(torch.ops.cute_transpose, name).overloads()}
    assert overloads == set(SCHEMAS)


@pytest.mark.parametrize("name", cute_transpose.OPS)
def test_python_signature_matches_the_schema(name):
    """The Python function takes the schema's arguments, by name and with its defaults (plus a
    keyword-only out=None where an out= overload exists)."""
    schema = op(name)._schema
    params = dict(inspect.signature(getattr(cute_transpose, name)).parameters)
    if hasattr(getattr(torch.ops.cute_transpose, name), "out"):
        out = params.pop("out")
        assert out.kind is inspect.Parameter.KEYWORD_ONLY and out.default is None
    assert list(params) == [a.name for a in schema.arguments]
    for arg in schema.arguments:
        default = params[arg.name].default
        assert (default is inspect.Parameter.empty) == (not arg.has_default_value())
        if arg.has_default_value():
            assert default == arg.default_value


# ----------------------------------------------------------------------------------------------
# Fake (meta) kernels


# name -> (op, input shape, dims): every matrix op on a batch, permute on ranks 0, 3 and 9 and empty.
META_CASES = {
    **{name: (name, (2, 5, 7), None) for name in MATRIX_OPS},
    "permute_rank3": ("permute", (2, 5, 7), (2, 0, 1)),
    "permute_rank0": ("permute", (), ()),
    "permute_empty": ("permute", (3, 0, 4), (1, 2, 0)),
    "permute_rank9": ("permute", (2, 3, 2, 3, 2, 3, 2, 3, 2), tuple(range(8, -1, -1))),
}


@pytest.mark.parametrize("case", list(META_CASES))
def test_meta_tensors_give_shapes(case):
    name, shape, dims = META_CASES[case]
    x = torch.empty(shape, device="meta", dtype=torch.bfloat16)
    out = op(name)(x) if dims is None else call(name, x, dims)
    assert out.shape == expected(name, x, dims).shape  # torch's own permute of a meta tensor
    assert out.dtype == torch.bfloat16 and out.device.type == "meta" and out.is_contiguous()
