"""Sharded tensors: the DTensor sharding rules of every op, and the distributed transpose.

Two processes run every case of distributed_cases.py (over gloo on the CPU; over NCCL on two
GPUs where a machine has them); each test below asserts that its case passed on every rank."""

import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

import distributed_cases
from conftest import DEVICES

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")



def _nccl(world):
    """NCCL over `world` GPUs: one process per GPU."""
    ready = torch.cuda.is_available() and torch.cuda.device_count() >= world and dist.is_nccl_available()
    return pytest.param(("nccl", "cuda", world), id=f"nccl-cuda-{world}", marks=[
        pytest.mark.gpu, pytest.mark.skipif(not ready, reason=f"needs {world} GPU(s) and NCCL")])


# (backend, device type, processes): 2 and 3 processes on the CPU (3 shards unevenly what 2 do
# not); 2 GPUs where there are, and 1 (the CUDA kernels under DTensor, a group of one) on any GPU.
BACKENDS = [pytest.param(("gloo", "cpu", 2), id="gloo-cpu-2"),
            pytest.param(("gloo", "cpu", 3), id="gloo-cpu-3"),
            _nccl(2), _nccl(1)]


@pytest.fixture(scope="module", params=BACKENDS)
def rank_results(request, tmp_path_factory):
    backend, device_type, world = request.param
    results = distributed_cases.run_ranks(backend, device_type, world, str(tmp_path_factory.mktemp(backend)))
    missing = [rank for rank, got in results.items() if got is None]
    assert not missing, f"ranks {missing} did not finish (crashed or timed out)"
    return results


@pytest.mark.parametrize("name", list(distributed_cases.CASES))
def test_case(rank_results, name):
    errors = {rank: got[name] for rank, got in rank_results.items() if got[name] is not None}
    assert not errors, "\n".join(f"rank {rank}:\n{error}" for rank, error in errors.items())


def test_import_does_not_load_dtensor():
    """`import cute_transpose` leaves torch.distributed.tensor unloaded (it costs most of a
    second), and the rules register when DTensor is imported afterwards."""
    code = (
        "import sys, cute_transpose, torch\n"
        "assert 'torch.distributed.tensor' not in sys.modules, 'imported DTensor'\n"
        "from torch.distributed.tensor import DTensor\n"
        "strategies = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs\n"
        "assert torch.ops.cute_transpose.permute.default in strategies\n"
        "assert torch.ops.cute_transpose.swizzled.default in strategies\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_shard_sizes_follow_dtensor():
    from torch.distributed.tensor import Shard

    from cute_transpose.distributed import shard_sizes

    for size in range(0, 13):
        for ranks in range(1, 6):
            want = [Shard(0)._local_shard_size_and_offset(size, ranks, r)[0] for r in range(ranks)]
            assert shard_sizes(size, ranks) == want, (size, ranks)


def test_default_chunks_divide_the_rows():
    from cute_transpose.distributed import default_chunks

    assert default_chunks(1000, 1 << 20) == 1
    assert default_chunks(4096, 4 << 30) == 4  # slices of 1 GiB
    assert default_chunks(4096, 8 << 30) == 8
    assert default_chunks(4095, 8 << 30) == 7
    assert default_chunks(4096, 64 << 30) == 8  # at most 8
    # The symmetric method: slices of 512 MiB.
    assert default_chunks(4096, 256 << 20, symmetric=True) == 1
    assert default_chunks(4096, 2 << 30, symmetric=True) == 4
    assert default_chunks(4096, 8 << 30, symmetric=True) == 8
    assert default_chunks(4095, 2 << 30, symmetric=True) == 3
    for rows in range(1, 40):
        assert rows % default_chunks(rows, 8 << 30) == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.complex128])
def test_copy_rows_writes_each_row_into_its_place(device, dtype):
    """The private op the symmetric exchange pulls with: rows of a contiguous block copied into
    rows of a wider, strided destination (on CUDA by the copy engine); the rest of the
    destination is left as it was."""
    from conftest import as_bytes, poisoned, random_tensor

    src = random_tensor((37, 5, 3), dtype, device)
    dst = poisoned((37, 4, 5, 3), dtype, device)
    before = dst.clone()
    torch.ops.cute_transpose._copy_rows_(dst[:, 2], src)
    assert torch.equal(as_bytes(dst[:, 2].contiguous()), as_bytes(src))
    for other in (0, 1, 3):
        assert torch.equal(as_bytes(dst[:, other].contiguous()), as_bytes(before[:, other].contiguous()))


@pytest.mark.parametrize("device", DEVICES)
def test_copy_rows_refuses_what_it_cannot_copy(device):
    dst = torch.zeros(4, 8, device=device)
    with pytest.raises(RuntimeError, match="differ"):
        torch.ops.cute_transpose._copy_rows_(dst[:, :4], torch.zeros(4, 3, device=device))
    with pytest.raises(RuntimeError, match="contiguous"):
        torch.ops.cute_transpose._copy_rows_(dst[:, ::2], torch.zeros(4, 4, device=device))
    with pytest.raises(RuntimeError, match="overlap"):
        torch.ops.cute_transpose._copy_rows_(dst.view(-1)[:20].as_strided((4, 8), (2, 1)),
                                             torch.zeros(4, 8, device=device))
