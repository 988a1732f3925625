"""The ops as torch.library has them: the op list, the Python functions against the C++
registrations, and the fake (meta) kernels' shapes."""

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
