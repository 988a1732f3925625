"""The ops as PyTorch sees them: registrations, opcheck, torch.compile, autograd, errors, streams."""

import pytest
import torch

import cute_transpose
from conftest import MATRIX_OPS, DEVICES, HAS_CUDA, IS_SM90, assert_bits_equal, expected, op, random_tensor

ALL_OPS = MATRIX_OPS


def test_python_names_match_cpp_registrations():
    # Names starting with "_" are private helpers (the bank-map analysis), not transposes.
    registered = {name.split("::", 1)[1] for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("cute_transpose::") and not name.startswith("cute_transpose::_")}
    assert registered == set(cute_transpose.OPS) | {"transpose.out", "permute.out"}
    assert set(cute_transpose.VARIANTS) < set(cute_transpose.OPS)
    for name in cute_transpose.OPS:
        assert callable(getattr(cute_transpose, name))


def sample(name, device, dtype=torch.float32, requires_grad=False):
    # (batch, M, N) with M * 4 bytes a multiple of 16, so `tma` accepts it on sm_90.
    x = torch.randn(3, 36, 20, dtype=dtype, device=device)
    return x.requires_grad_(requires_grad)


def skip_if_unsupported(name, device):
    if name == "tma" and device == "cuda" and not IS_SM90:
        pytest.skip("tma needs sm_90")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ALL_OPS)
def test_opcheck(name, device):
    skip_if_unsupported(name, device)
    for requires_grad in (False, True):
        torch.library.opcheck(op(name), (sample(name, device, requires_grad=requires_grad),))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ALL_OPS)
def test_torch_compile_fullgraph(name, device, dynamic):
    skip_if_unsupported(name, device)
    fn = getattr(cute_transpose, name)
    torch._dynamo.reset()  # every parametrization compiles the same lambda: start fresh
    compiled = torch.compile(lambda x: fn(x) + 1, fullgraph=True, dynamic=dynamic)
    for shape in [(3, 36, 20), (5, 44, 24)]:  # a second shape exercises the dynamic graph
        x = torch.randn(shape, device=device)
        assert torch.equal(compiled(x), expected(name, x) + 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ALL_OPS)
def test_gradient(name, device):
    skip_if_unsupported(name, device)
    x = sample(name, device, dtype=torch.float64, requires_grad=True)
    y = getattr(cute_transpose, name)(x)
    g = torch.randn_like(y)
    y.backward(g)
    assert torch.equal(x.grad, g if name == "copy" else g.transpose(-2, -1))
    small = torch.randn(2, 4, 3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(getattr(cute_transpose, name), (small,))


@pytest.mark.parametrize("device", DEVICES + ["meta"])
@pytest.mark.parametrize("name", ALL_OPS)
@pytest.mark.parametrize("shape", [(), (7,)], ids=["rank0", "rank1"])
def test_rank_below_two_is_a_clear_error(name, device, shape):
    # `transpose` names the dim that does not exist, as torch.transpose does.
    with pytest.raises((RuntimeError, IndexError), match=r"rank >= 2|Dimension out of range"):
        op(name)(torch.zeros(shape, device=device))


@pytest.mark.parametrize("name", ALL_OPS)
def test_meta_tensors_give_shapes(name):
    out = op(name)(torch.empty(2, 5, 7, device="meta", dtype=torch.bfloat16))
    assert out.shape == ((2, 5, 7) if name == "copy" else (2, 7, 5))
    assert out.dtype == torch.bfloat16 and out.device.type == "meta"


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("name", ALL_OPS)
def test_runs_on_the_current_stream(name):
    """The op must be ordered after earlier work on the current (non-default) stream: the input
    is written there after a long sleep, so a kernel on another stream would read stale data."""
    skip_if_unsupported(name, "cuda")
    src = random_tensor((3, 64, 48), torch.float32, "cuda")
    x = torch.zeros_like(src)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time on this stream
        x.copy_(src)
        out = op(name)(x)
    stream.synchronize()
    assert_bits_equal(out, expected(name, src))


@pytest.mark.skipif(not HAS_CUDA or IS_SM90, reason="needs a CUDA GPU older than sm_90")
def test_tma_on_an_older_gpu_names_sm90():
    with pytest.raises(RuntimeError, match="sm_90"):
        cute_transpose.tma(torch.randn(32, 32, device="cuda"))


@pytest.mark.skipif(not IS_SM90, reason="needs an sm_90 GPU")
def test_tma_misaligned_pitch_is_a_clear_error():
    with pytest.raises(RuntimeError, match="multiple of 16 bytes"):
        cute_transpose.tma(torch.randn(33, 64, device="cuda"))
