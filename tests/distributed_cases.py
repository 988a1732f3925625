"""The multi-process cases of test_distributed.py: each rank of a process group runs every case,
in the same order (they call collectives), and writes what each case raised to a JSON file.

Run by test_distributed.py through `run_ranks`: 2 processes over gloo on the CPU, and over NCCL
on 2 GPUs where there are. Every result is compared bit-exactly with the reference computed from
the full tensor, which every rank builds from the same seed."""

import json
import os
import sys
import traceback

import torch
import torch.distributed as dist

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def run_ranks(backend, device_type, world, directory, timeout_s=240):
    """Starts `world` processes running every case; returns {rank: {case: error or None}}."""
    import multiprocessing

    import socket

    context = multiprocessing.get_context("spawn")
    with socket.socket() as probe:  # a port no one is listening on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    procs = [context.Process(target=_rank_main, args=(rank, world, backend, device_type, port, directory))
             for rank in range(world)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout_s)
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    results = {}
    for rank in range(world):
        path = os.path.join(directory, f"rank{rank}.json")
        results[rank] = json.load(open(path)) if os.path.exists(path) else None
    return results


def _rank_main(rank, world, backend, device_type, port, directory):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.path.insert(0, os.path.dirname(__file__))
    if device_type == "cuda":
        torch.cuda.set_device(rank)
    import datetime

    dist.init_process_group(backend, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    from torch.distributed.device_mesh import init_device_mesh

    import cute_transpose  # noqa: F401  (after DTensor's import too: the rules must register either way)

    mesh = init_device_mesh(device_type, (world,))
    results = {}
    for name, fn in CASES.items():
        try:
            fn(mesh)
            results[name] = None
        except Exception:  # noqa: BLE001  (reported to the test, which fails with it)
            results[name] = traceback.format_exc()
        dist.barrier()
    with open(os.path.join(directory, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()


# ----------------------------------------------------------------------------------------------
# Helpers


def _full(shape, dtype, seed, device):
    from conftest import random_tensor

    return random_tensor(shape, dtype, generator=torch.Generator().manual_seed(seed)).to(device)


def _check(result, ref, placements):
    """The placements, a contiguous local result, and the gathered values bit for bit (the
    gathered tensor's own layout is DTensor's: torch 2.11 may return a strided one)."""
    from conftest import assert_bits_equal

    assert tuple(result.placements) == tuple(placements), (tuple(result.placements), tuple(placements))
    assert result.to_local().is_contiguous()
    assert_bits_equal(result.full_tensor().contiguous(), ref)


def _position(perm, dim):
    return perm.index(dim)


# The ops and how each permutes a rank-`rank` input: (name, call(x), permutation).
def _op_calls(rank):
    import cute_transpose as ct
    from conftest import transposition

    calls = [(name, getattr(ct, name), transposition(rank, -2, -1)) for name in ct.VARIANTS]
    calls.append(("copy", ct.copy, list(range(rank))))
    calls.append(("transpose(0, -1)", lambda x: ct.transpose(x, 0, -1), transposition(rank, 0, -1)))
    calls.append(("torch.ops transpose (defaults)", torch.ops.cute_transpose.transpose,
                  transposition(rank, -2, -1)))
    perm = [rank - 1, *range(rank - 1)]
    calls.append((f"permute{perm}", lambda x: ct.permute(x, perm), perm))
    return calls


# ----------------------------------------------------------------------------------------------
# DTensor sharding rules


@case
def every_op_every_shard_dim(mesh):
    """Every op, with the input sharded on each dim (evenly and unevenly), and replicated: the
    output's placements follow the permutation and its full tensor is the reference's."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    from conftest import reference

    from conftest import IS_SM90, SM90_OPS

    dev = mesh.device_type
    # Even, then uneven over 2 ranks; on a GPU the TMA variants run only the last shape, whose
    # every shard has the 16-byte row pitches they need (and only on sm_90).
    for shape in [(4, 6, 8), (5, 7, 3), (8, 16, 16)]:
        full = _full(shape, torch.float32, 1, dev)
        for name, fn, perm in _op_calls(len(shape)):
            if dev == "cuda" and name in SM90_OPS and (shape != (8, 16, 16) or not IS_SM90):
                continue
            ref = reference(full, perm)
            for placement in [Replicate(), *[Shard(d) for d in range(len(shape))]]:
                x = distribute_tensor(full, mesh, [placement])
                want = Shard(_position(perm, placement.dim)) if isinstance(placement, Shard) else placement
                try:
                    _check(fn(x), ref, [want])
                except Exception as error:
                    raise AssertionError(f"{name} on {shape} {placement}: {error}") from error


@case
def dtypes(mesh):
    from torch.distributed.tensor import Shard, distribute_tensor

    import cute_transpose as ct
    from conftest import reference

    for dtype in (torch.uint8, torch.bfloat16, torch.float64, torch.complex64):
        full = _full((6, 10), dtype, 2, mesh.device_type)
        _check(ct.transpose(distribute_tensor(full, mesh, [Shard(1)])), reference(full, [1, 0]), [Shard(0)])


@case
def partial_stays_partial(mesh):
    """A Partial input gives a Partial output (sum and max): no communication, and the reduced
    full tensor is the permuted reduction."""
    from torch.distributed.tensor import DTensor, Partial

    import cute_transpose as ct

    rank = dist.get_rank()
    locals_ = [torch.randint(-100, 100, (3, 4, 5), generator=torch.Generator().manual_seed(s)).float()
               for s in range(dist.get_world_size())]
    for reduce_op, reduce in [("sum", lambda t: torch.stack(t).sum(0)), ("max", lambda t: torch.stack(t).amax(0))]:
        x = DTensor.from_local(locals_[rank].to(mesh.device_type), mesh, [Partial(reduce_op)])
        y = ct.permute(x, [2, 0, 1])
        assert tuple(y.placements) == (Partial(reduce_op),), y.placements
        assert torch.equal(y.full_tensor().cpu(), reduce(locals_).permute(2, 0, 1))


@case
def same_input_other_dims(mesh):
    """Two permutes of one input with different dims: the placements are not mixed up between
    calls (DTensor caches sharding decisions; dims must be part of the key)."""
    from torch.distributed.tensor import Shard, distribute_tensor

    import cute_transpose as ct
    from conftest import reference

    full = _full((4, 6, 8), torch.float32, 3, mesh.device_type)
    x = distribute_tensor(full, mesh, [Shard(0)])
    for perm in ([1, 0, 2], [0, 2, 1], [2, 1, 0], [1, 2, 0]):
        _check(ct.permute(x, perm), reference(full, perm), [Shard(perm.index(0))])


@case
def out_forms(mesh):
    """out= with the result's placements is written in place; with other placements, a clear
    error that names both."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import cute_transpose as ct
    from conftest import reference

    full = _full((4, 6, 8), torch.float32, 4, mesh.device_type)
    x = distribute_tensor(full, mesh, [Shard(2)])
    out = distribute_tensor(torch.zeros(8, 4, 6, device=mesh.device_type), mesh, [Shard(0)])
    assert ct.permute(x, [2, 0, 1], out=out) is out
    _check(out, reference(full, [2, 0, 1]), [Shard(0)])
    out_t = distribute_tensor(torch.zeros(8, 6, 4, device=mesh.device_type), mesh, [Shard(0)])
    ct.transpose(x, 0, 2, out=out_t)
    _check(out_t, reference(full, [2, 1, 0]), [Shard(0)])
    wrong = distribute_tensor(torch.zeros(8, 4, 6, device=mesh.device_type), mesh, [Replicate()])
    try:
        ct.permute(x, [2, 0, 1], out=wrong)
    except (ValueError, RuntimeError) as error:  # DTensor re-raises a rule's error as RuntimeError
        assert "out has placements (Replicate(),)" in str(error) and "has (Shard(dim=0),)" in str(error), error
    else:
        raise AssertionError("an out with the wrong placements was accepted")


@case
def other_placements_are_refused(mesh):
    """A placement the rules do not cover (FSDP2's strided shard) is a clear error, not a guess."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.placement_types import _StridedShard

    import cute_transpose as ct

    x = DTensor.from_local(torch.randn(4, 6, device=mesh.device_type), mesh,
                           [_StridedShard(0, split_factor=2)], run_check=False)
    try:
        ct.transpose(x)
    except (NotImplementedError, RuntimeError) as error:
        assert "is not supported (Shard, Replicate and Partial are)" in str(error), error
    else:
        raise AssertionError("a strided shard was accepted")


@case
def autograd(mesh):
    """The gradient of a permute of a sharded tensor is the inverse permute, sharded back."""
    from torch.distributed.tensor import Shard, distribute_tensor

    import cute_transpose as ct

    full = torch.randn(4, 6, 8, generator=torch.Generator().manual_seed(5)).to(mesh.device_type)
    weight = torch.randn(8, 4, 6, generator=torch.Generator().manual_seed(6)).to(mesh.device_type)
    x = distribute_tensor(full, mesh, [Shard(1)]).requires_grad_()
    (ct.permute(x, [2, 0, 1]) * distribute_tensor(weight, mesh, [Shard(2)])).sum().backward()
    if mesh.size() > 1:  # on a mesh of one, torch 2.11 may call the gradient replicated
        assert tuple(x.grad.placements) == (Shard(1),), x.grad.placements
    assert torch.equal(x.grad.full_tensor(), weight.permute(1, 2, 0))


@case
def compiled(mesh):
    """torch.compile of a function that calls the ops on DTensors (fullgraph)."""
    from torch.distributed.tensor import Shard, distribute_tensor

    import cute_transpose as ct
    from conftest import reference

    backend = "inductor" if mesh.device_type == "cuda" else "aot_eager"

    @torch.compile(fullgraph=True, backend=backend)
    def f(x):
        return ct.transpose(ct.permute(x, [2, 0, 1]), 0, 1) * 2

    full = _full((4, 6, 8), torch.float32, 7, mesh.device_type).clamp(-1e3, 1e3).nan_to_num()
    x = distribute_tensor(full, mesh, [Shard(1)])
    y = f(x)  # x.permute(0, 2, 1): dim 1 moves to 2
    assert tuple(y.placements) == (Shard(2),), y.placements
    assert torch.equal(y.full_tensor(), reference(full, [0, 2, 1]) * 2)


# ----------------------------------------------------------------------------------------------
# The distributed transpose


@case
def distributed_transpose_dtensor(mesh):
    """Row-sharded in, row-sharded out: even and uneven shards, trailing dims, sliced."""
    from torch.distributed.tensor import Shard, distribute_tensor

    from conftest import reference
    from cute_transpose import distributed

    world = mesh.size()
    shapes = [((8 * world, 6 * world), None), ((8 * world, 16 * world), 4), ((8 * world, 4 * world, 3), 2),
              ((7, 5), None), ((2 * world + 1, 9, 2), None), ((1, 3), None)]
    for dtype in (torch.float32, torch.bfloat16, torch.int8):
        for seed, (shape, chunks) in enumerate(shapes):
            full = _full(shape, dtype, 10 + seed, mesh.device_type)
            perm = [1, 0, *range(2, len(shape))]
            y = distributed.transpose(distribute_tensor(full, mesh, [Shard(0)]), chunks=chunks)
            try:
                _check(y, reference(full, perm), [Shard(0)])
            except Exception as error:
                raise AssertionError(f"{dtype} {shape} chunks={chunks}: {error}") from error
            assert y.to_local().is_contiguous()


@case
def distributed_transpose_all_to_all_single(mesh):
    """The same exchange with each rank's own block sent to itself, through all_to_all_single
    (SKIP_SELF off; the benchmark compares the two)."""
    from torch.distributed.tensor import Shard, distribute_tensor

    from conftest import reference
    from cute_transpose import distributed

    world = mesh.size()
    distributed.SKIP_SELF = False
    try:
        for shape, chunks in [((4 * world, 6 * world), 3), ((2 * world, 2 * world, 5), None)]:
            full = _full(shape, torch.float32, 30, mesh.device_type)
            y = distributed.transpose(distribute_tensor(full, mesh, [Shard(0)]), chunks=chunks)
            _check(y, reference(full, [1, 0, *range(2, len(shape))]), [Shard(0)])
    finally:
        distributed.SKIP_SELF = True


@case
def distributed_transpose_methods(mesh):
    """Both exchanges give the same bits: "symmetric" (the peers' memory written directly, the
    default on GPUs of one host) and "all_to_all", in several dtypes, trailing dims, a strided
    input, calls that reuse and grow the workspace, after it is freed, and under autograd. Where
    "symmetric" cannot run (the CPU), asking for it is a clear error."""
    from conftest import assert_bits_equal, reference
    from cute_transpose import distributed

    world, rank = dist.get_world_size(), dist.get_rank()
    can = mesh.device_type == "cuda" and world > 1
    assert distributed._one_host(dist.group.WORLD)  # the test's processes share this machine
    if mesh.device_type == "cpu":
        try:
            distributed.transpose(torch.zeros(2, 2 * world), method="symmetric")
        except ValueError as error:
            assert "not a CUDA GPU" in str(error) and "all_to_all" in str(error), error
        else:
            raise AssertionError("method='symmetric' ran on the CPU")
    elif can:  # more slices than the signal pad has channels: refused by "symmetric", run by "auto"
        local = _full((2, 64 * world), torch.float32, 39, mesh.device_type)
        try:
            distributed.transpose(local, method="symmetric", chunks=32)
        except ValueError as error:
            assert "chunks=32" in str(error), error
        else:
            raise AssertionError("method='symmetric' ran with chunks=32")
        full = torch.cat([_full((2, 64 * world), torch.float32, 39, mesh.device_type)] * world)
        ref = reference(full, [1, 0]).split(64)[rank]
        assert_bits_equal(distributed.transpose(local, chunks=32), ref)
    try:
        distributed.transpose(torch.zeros(2, 2 * world, device=mesh.device_type), method="nvlink")
    except ValueError as error:
        assert "method='nvlink'" in str(error), error
    else:
        raise AssertionError("method='nvlink' was accepted")
    cases = [((8 * world, 6 * world), torch.float32), ((4 * world, 2 * world, 3), torch.bfloat16),
             ((16 * world, 32 * world), torch.int8), ((2 * world, 4 * world), torch.complex128),
             ((64 * world, 40 * world), torch.bool), ((24 * world, 8 * world, 2), torch.float8_e4m3fn),
             ((128 * world, 96 * world), torch.float16)]  # the last grows the workspace again
    for seed, (shape, dtype) in enumerate(cases):
        for method in ("auto", "all_to_all") + (("symmetric",) if can else ()):
            # Two calls on different data, the first result kept: the second reuses the workspace
            # (whose slots still hold the first call's blocks) but not the first's output.
            kept = []
            for call in range(2):
                full = _full(shape, dtype, 100 * seed + call, mesh.device_type)
                local = full.split(shape[0] // world)[rank]
                ref = reference(full, [1, 0, *range(2, len(shape))]).split(shape[1] // world)[rank]
                kept.append(distributed.transpose(local, method=method))
                try:
                    assert_bits_equal(kept[-1], ref)
                except Exception as error:
                    raise AssertionError(f"{dtype} {shape} method={method} call {call}: {error}") from error
    # A strided input (every other column of a wider matrix), after the workspace is freed.
    distributed.free_workspace()
    wide = _full((4 * world, 12 * world), torch.float32, 50, mesh.device_type)
    full = wide[:, ::2]
    ref = reference(full, [1, 0]).split(6)[rank]
    assert_bits_equal(distributed.transpose(full.split(4)[rank], method="auto"), ref)
    # The gradient goes back through the same method.
    shape = (6 * world, 4 * world)
    weight = torch.randn(shape[1], shape[0], generator=torch.Generator().manual_seed(51)).to(mesh.device_type)
    local = torch.randn(shape[0] // world, shape[1], generator=torch.Generator().manual_seed(52 + rank))
    local = local.to(mesh.device_type).requires_grad_()
    mine = weight.split(shape[1] // world)[rank]
    (distributed.transpose(local) * mine).sum().backward()
    assert torch.equal(local.grad, weight.transpose(0, 1).split(shape[0] // world)[rank])


@case
def distributed_transpose_plain(mesh):
    """Plain tensors over a process group, with and without the row counts given."""
    from conftest import reference
    from cute_transpose import distributed

    world, rank = dist.get_world_size(), dist.get_rank()
    for shape in [(6 * world, 4 * world), (3 * world + 1, 2 * world + 1)]:
        full = _full(shape, torch.float32, 20, mesh.device_type)
        rows = distributed.shard_sizes(shape[0], world)
        local = full.split(rows)[rank]
        ref = reference(full, [1, 0]).split(distributed.shard_sizes(shape[1], world))[rank]
        from conftest import assert_bits_equal

        assert_bits_equal(distributed.transpose(local), ref)
        assert_bits_equal(distributed.transpose_local(local, rows=rows), ref)


@case
def distributed_transpose_custom_splits(mesh):
    """Plain tensors split by other rules than DTensor's (given as rows= and cols=), in dtypes
    that gloo cannot send as such (the exchange moves bytes)."""
    from conftest import assert_bits_equal, reference
    from cute_transpose import distributed

    world, rank = dist.get_world_size(), dist.get_rank()
    rows = [3 + 2 * r for r in range(world)]          # 3, 5, 7, ...
    cols = [world - r for r in range(world)]          # ..., 2, 1
    for dtype in (torch.int16, torch.bool, torch.complex128, torch.float8_e4m3fn):
        full = _full((sum(rows), sum(cols), 2), dtype, 21, mesh.device_type)
        ref = reference(full, [1, 0, 2]).split(cols)[rank]
        assert_bits_equal(distributed.transpose_local(full.split(rows)[rank], rows=rows, cols=cols), ref)
        even = _full((4 * world, 2 * world), dtype, 22, mesh.device_type)
        ref = reference(even, [1, 0]).split(2)[rank]
        assert_bits_equal(distributed.transpose_local(even.split(4)[rank], rows=[4] * world), ref)


@case
def distributed_transpose_autograd(mesh):
    """The gradient of the distributed transpose is the exchange back: even and uneven shards,
    DTensor and plain."""
    from torch.distributed.tensor import Shard, distribute_tensor

    from cute_transpose import distributed

    world, rank = dist.get_world_size(), dist.get_rank()
    for shape in [(4 * world, 2 * world), (2 * world + 1, 3 * world + 2, 2)]:
        weight = torch.randn(shape[1], shape[0], *shape[2:], generator=torch.Generator().manual_seed(8))
        weight = weight.to(mesh.device_type)
        full = torch.randn(shape, generator=torch.Generator().manual_seed(9)).to(mesh.device_type)
        x = distribute_tensor(full, mesh, [Shard(0)]).requires_grad_()
        (distributed.transpose(x) * distribute_tensor(weight, mesh, [Shard(0)])).sum().backward()
        assert tuple(x.grad.placements) == (Shard(0),), x.grad.placements
        assert torch.equal(x.grad.full_tensor(), weight.transpose(0, 1))
    rows, cols = [1 + r for r in range(world)], [2] * world
    local = torch.randn(rows[rank], sum(cols), device=mesh.device_type, requires_grad=True)
    distributed.transpose_local(local, rows=rows, cols=cols).sum().backward()
    assert torch.equal(local.grad, torch.ones_like(local))


@case
def distributed_transpose_errors(mesh):
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    from cute_transpose import distributed

    world = mesh.size()
    full = torch.arange(24.0 * world * world, device=mesh.device_type).view(4 * world, 6 * world)
    for placements, words in [([Replicate()], "sharded by rows"), ([Shard(1)], "Shard(dim=1)")]:
        try:
            distributed.transpose(distribute_tensor(full, mesh, placements))
        except ValueError as error:
            assert words in str(error), error
        else:
            raise AssertionError(f"{placements} was accepted")
    try:
        distributed.transpose(distribute_tensor(full, mesh, [Shard(0)]), chunks=5)
    except ValueError as error:
        assert "chunks=5" in str(error), error
    else:
        raise AssertionError("chunks=5 was accepted")
