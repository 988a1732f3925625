"""A distributed transpose that keeps the sharded dim: for a matrix sharded by rows over the ranks
of a process group, its transpose, sharded by rows too.

This is the all-to-all step of a distributed FFT, and of moving attention activations from
sequence-sharded ``(S, H, D)`` to head-sharded ``(H, S, D)``: any dims after the first two ride
along, so an ``(M, N, *rest)`` tensor sharded on dim 0 becomes ``(N, M, *rest)`` sharded on dim 0.

Rank ``r`` holds rows ``M_r`` of the ``(M, N)`` matrix and will hold rows ``N_r`` of the
``(N, M)`` result. The block it sends rank ``j`` is the transpose of its columns ``N_j``. The
``"all_to_all"`` method (across hosts, on the CPU, for shards of different sizes):

1. transpose the local rows ``(M_r, N) -> (N, M_r)`` with cute_transpose's kernel straight into
   the all-to-all's send buffer, where the rows for rank ``j`` are already one contiguous block
   (the rank's own block goes straight to its place in the receive buffer);
2. the all-to-all (NCCL on GPUs, gloo on the CPU), as one batch of sends and receives between
   each pair of ranks: rank ``r`` receives a block ``(N_r, M_s)`` from each rank ``s``, one
   after another;
3. interleave the received blocks into the result's rows, ``(P, N_r, M_s) -> (N_r, P, M_s)``,
   with cute_transpose's permute (a copy of contiguous runs of ``M_s`` elements).

A result row takes one column block from every rank, so step 3 is needed whatever the order of
the others. For large matrices the three steps run in ``chunks`` slices of the result's rows, so
that the all-to-all of one slice overlaps the transposes of its neighbours (the collective runs
on its own stream); docs/PERFORMANCE.md has the measurements behind the default.

On GPUs of one host (NCCL; the ``"symmetric"`` method, the default there) the exchange needs no
collective and no copy on the sending side, through PyTorch's symmetric memory
(``torch.distributed._symmetric_memory``), in slices of the result's rows:

1. a barrier (every rank has pulled what it needed from the last call's workspaces);
2. for each other rank ``j``: transpose a slice of columns ``N_j`` of the local rows into this
   rank's workspace, and signal ``j`` that the slice is ready;
3. on each rank, the copy engine pulls every ready slice from its owner's workspace, over
   NVLink, straight into the owner's columns of the result (one row-by-row copy, which needs no
   SM); meanwhile the SMs transpose the next slices, and then the rank's own block.

The workspace, ``(P - 1) / P`` of the result's bytes on every rank, is kept for the next call
(`free_workspace` gives it back).

Shard sizes follow DTensor's (and ``torch.chunk``'s) rule: with ``P`` ranks, each holds
``ceil(M / P)`` rows except the last ones. Uneven shards work; they take the unsliced path.
"""

import math
import socket
import warnings
from typing import Any, Optional, Sequence

import torch
import torch.distributed as dist
from torch import Tensor

from ._ops import permute as _permute
from ._ops import transpose as _transpose

# Slices of about this many bytes of a rank's block: on 2 x H200 over NVLink (bench/distributed.py,
# docs/PERFORMANCE.md) slices of 1 GiB ran best or within 0.01 of the best slice count from 1 to
# 16 GiB matrices (2 slices at 4 GiB: 0.60 of a bare all-to-all's bandwidth, 8 slices 0.55; 8
# at 16 GiB: 0.70, 1 slice 0.62); below it, one slice.
_SLICE_ABOVE_BYTES = 1 << 30
_MAX_SLICES = 8


def shard_sizes(size: int, ranks: int) -> list[int]:
    """The rows each of ``ranks`` ranks holds of a dim of ``size``, by DTensor's rule (that of
    ``torch.chunk``): ``ceil(size / ranks)`` each, the last ones fewer or none."""
    full = -(-size // ranks) if ranks else 0
    return [max(0, min(full, size - full * rank)) for rank in range(ranks)]


# The "symmetric" method pipelines transposes and copy-engine pulls in slices of at least this
# many bytes of a rank's block, up to _MAX_SLICES of them. On 2 x H200 (docs/PERFORMANCE.md),
# 4 GiB matrices ran best in 4 slices (0.89 of a bare all-to-all's bandwidth in float32, 0.87
# with 2 or 8; bfloat16 0.87, against 0.86 and 0.85), 16 GiB ones in 8 (float32 0.91, 4: 0.90).
_SYMMETRIC_SLICE_BYTES = 512 << 20
# Slice c is signalled on channel 1 + c of the workspace's signal pad (channel 0 is the barrier's).
_MAX_SYMMETRIC_SLICES = 31


def default_chunks(rows: int, local_bytes: int, symmetric: bool = False) -> int:
    """The number of slices the result's ``rows`` (this rank's) are moved in: by the
    ``"all_to_all"`` method one below ``_SLICE_ABOVE_BYTES``, else up to ``_MAX_SLICES`` slices of
    at least that size; by the ``"symmetric"`` one, slices of ``_SYMMETRIC_SLICE_BYTES``. The
    count divides the rows evenly."""
    slice_bytes = _SYMMETRIC_SLICE_BYTES if symmetric else _SLICE_ABOVE_BYTES
    want = max(1, min(_MAX_SLICES, local_bytes // slice_bytes))
    return next(c for c in range(want, 0, -1) if rows % c == 0)


def _check_local(x: Tensor, name: str) -> None:
    if x.dim() < 2:
        raise ValueError(f"cute_transpose.distributed.{name}: expected a tensor of rank >= 2 "
                         f"(rows, columns, ...), got shape {tuple(x.shape)}")


def transpose_local(x: Tensor, group: Optional[dist.ProcessGroup] = None, *,
                    rows: Optional[Sequence[int]] = None, cols: Optional[Sequence[int]] = None,
                    chunks: Optional[int] = None, method: str = "auto") -> Tensor:
    """Rank r's rows of the transpose of a row-sharded tensor, from rank r's rows of it.

    ``x`` is this rank's ``(M_r, N, *rest)`` block of an ``(M, N, *rest)`` tensor whose rows are
    split over ``group``'s ranks in rank order. Returns this rank's ``(N_r, M, *rest)`` block of
    the ``(N, M, *rest)`` result. ``rows`` lists every rank's ``M_s``; without it the ranks
    exchange their row counts first (one small all-gather). ``cols`` lists every rank's ``N_j``,
    the result's rows it gets; by default DTensor's rule (`shard_sizes`). Every rank must call
    this together, with tensors of the same dtype, columns and trailing dims.
    ``chunks`` (the slice count; by default from the size and the method, `default_chunks`)
    must divide this rank's result rows; shards of different sizes move in one slice whatever
    it says.
    ``method``: ``"symmetric"`` (each rank's copy engine pulls the blocks the others transposed
    straight into its result; CUDA tensors, NCCL, every rank on one host), ``"all_to_all"``
    (NCCL or gloo collectives), or
    ``"auto"``: ``"symmetric"`` where it can run and the shards are even, else ``"all_to_all"``.

    Differentiable: the gradient is the same exchange the other way, ``rows`` and ``cols``
    swapped."""
    _check_local(x, "transpose_local")
    group = group if group is not None else dist.group.WORLD
    ranks, rank = dist.get_world_size(group), dist.get_rank(group)
    if rows is None:
        counts = torch.tensor([x.shape[0]], dtype=torch.int64, device=x.device)
        gathered = [torch.empty_like(counts) for _ in range(ranks)]
        dist.all_gather(gathered, counts, group=group)
        rows = [int(c.item()) for c in gathered]
    rows = [int(r) for r in rows]
    cols = shard_sizes(x.shape[1], ranks) if cols is None else [int(c) for c in cols]
    if len(rows) != ranks or rows[rank] != x.shape[0]:
        raise ValueError(f"cute_transpose.distributed.transpose_local: rows {rows} must list "
                         f"the {ranks} ranks' row counts, and rank {rank} holds {x.shape[0]}")
    if len(cols) != ranks or sum(cols) != x.shape[1] or min(cols) < 0:
        raise ValueError(f"cute_transpose.distributed.transpose_local: cols {cols} must split "
                         f"the {x.shape[1]} columns over the {ranks} ranks")
    even = len(set(rows)) == 1 and len(set(cols)) == 1
    symmetric = _use_symmetric(x, group, method, even, chunks)
    if even and chunks is None:
        chunks = default_chunks(cols[rank], x.numel() * x.element_size(), symmetric)
    if even and (chunks < 1 or cols[rank] % chunks):
        raise ValueError(f"cute_transpose.distributed.transpose_local: chunks={chunks} must "
                         f"divide this rank's {cols[rank]} result rows")
    return _Exchange.apply(x, group, rows, cols, chunks if even else 0, symmetric)


METHODS = ("auto", "symmetric", "all_to_all")


def _use_symmetric(x: Tensor, group: Any, method: str, even: bool, chunks: Optional[int] = None) -> bool:
    """Whether the exchange pulls from the peers' memory (see the module's docstring). The
    answer is the same on every rank: it depends on the arguments, which every rank passes
    alike, and on `_one_host`, which asks every rank once per group."""
    if method not in METHODS:
        raise ValueError(f"cute_transpose.distributed: method={method!r}; expected one of {METHODS}")
    if method == "all_to_all":
        return False
    why = None
    if dist.get_world_size(group) == 1:
        return False  # nothing to exchange
    if not x.is_cuda:
        why = f"the tensor is on {x.device}, not a CUDA GPU"
    elif "nccl" not in str(dist.get_backend(group)):
        why = f"the group's backend is {dist.get_backend(group)}, not nccl"
    elif not even:
        why = "the shards differ in size"
    elif chunks is not None and chunks > _MAX_SYMMETRIC_SLICES:
        why = f"chunks={chunks}: it signals each slice on its own channel, {_MAX_SYMMETRIC_SLICES} at most"
    elif _symm_mem() is None:
        why = "this torch has no torch.distributed._symmetric_memory"
    elif not _one_host(group):
        why = "the group's ranks are on more than one host"
    if why is None:
        return True
    if method == "symmetric":
        raise ValueError(f"cute_transpose.distributed: method='symmetric' cannot run: {why}; "
                         f"use method='all_to_all' (or 'auto')")
    return False


def _symm_mem() -> Any:
    try:
        import torch.distributed._symmetric_memory as symm_mem
    except ImportError:
        return None
    return symm_mem if hasattr(symm_mem, "rendezvous") and hasattr(symm_mem, "empty") else None


_HOSTS: dict[str, bool] = {}


def _one_host(group: Any) -> bool:
    """Whether every rank of ``group`` runs on one host, under one kernel (asked once per group,
    of every rank)."""
    name = group.group_name
    if name not in _HOSTS:
        hosts: list = [None] * dist.get_world_size(group)
        dist.all_gather_object(hosts, _host_id(), group=group)
        _HOSTS[name] = len(set(hosts)) == 1
    return _HOSTS[name]


def _host_id() -> str:
    """The running kernel's boot id, which containers on one host share and two machines never
    do (even under one host name); the host name where there is none."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return socket.gethostname()


class _Exchange(torch.autograd.Function):
    """The exchange, and its gradient: the exchange of the gradient the other way round."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, group: Any, rows: list[int], cols: list[int], chunks: int,
                symmetric: bool) -> Tensor:
        ctx.group, ctx.rows, ctx.cols, ctx.even, ctx.symmetric = group, rows, cols, chunks > 0, symmetric
        return _exchange(x, group, rows, cols, chunks, symmetric)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        rank = dist.get_rank(ctx.group)
        nbytes = grad.numel() * grad.element_size()
        chunks = default_chunks(ctx.rows[rank], nbytes, ctx.symmetric) if ctx.even else 0
        return _exchange(grad, ctx.group, ctx.cols, ctx.rows, chunks, ctx.symmetric), None, None, None, None, None


def _exchange(x: Tensor, group: Any, rows: list[int], cols: list[int], chunks: int, symmetric: bool) -> Tensor:
    """The result of `transpose_local`; ``chunks`` 0 for shards of different sizes."""
    rank = dist.get_rank(group)
    out = x.new_empty((cols[rank], sum(rows), *x.shape[2:]))
    if symmetric:
        if out.numel():  # (even shards: every rank's is empty, or none's)
            _exchange_symmetric(x, out, group, len(rows), chunks)
    elif chunks:
        _exchange_even(x, out, group, len(rows), chunks)
    else:
        _exchange_uneven(x, out, group, rows, cols)
    return out


def _exchange_symmetric(x: Tensor, out: Tensor, group: Any, ranks: int, chunks: int) -> None:
    """Every rank holds the same rows m and receives the same result rows n, moved in ``chunks``
    slices of w = n / chunks result rows. Rank r transposes its block for each other rank j,
    x[:, j*n : (j+1)*n], into slot (j - r - 1) mod P of its own workspace (P - 1 slots of
    (C, w, m, *rest)), slice by slice, and signals rank j as each slice is ready; rank j's copy
    engine pulls the slice over NVLink straight into rank r's columns of its result. The copy
    engine takes no SM, so the transposes of the next slices, and of the rank's own block, run
    while it moves the last ones."""
    m, rest = x.shape[0], tuple(x.shape[2:])
    n, rank = out.shape[0], dist.get_rank(group)
    w = n // chunks
    swap = [1, 0, *range(2, 2 + len(rest))]                     # (m, w, *rest) -> (w, m, *rest)
    blocks = x.unflatten(1, (ranks, chunks, w))                 # (m, P, C, w, *rest), a view
    parts = out.view(chunks, w, ranks, m, *rest)                # slice c of block s: parts[c, :, s]
    slot = (chunks, w, m, *rest)
    slot_numel = math.prod(slot)
    handle = _workspace(group, x.device, (ranks - 1) * slot_numel * x.element_size())

    def staged(owner: int, peer: int) -> Tensor:                # owner's slot for peer, (C, w, m, *rest)
        return handle.get_buffer(owner, slot, x.dtype, ((peer - owner - 1) % ranks) * slot_numel)

    wide_rows = math.prod((m, *rest)) * x.element_size() >= _COPY_ENGINE_MIN_ROW_BYTES
    main, copier = torch.cuda.current_stream(x.device), _copy_stream(x.device)
    handle.barrier(channel=0)                                   # every rank pulled the last call's slots
    copier.wait_stream(main)
    for c in range(chunks):
        for step in range(1, ranks):
            peer = (rank + step) % ranks
            _permute(blocks[:, peer, c], swap, out=staged(rank, peer)[c])
            handle.put_signal(peer, channel=1 + c)
        with torch.cuda.stream(copier):
            for step in range(1, ranks):
                sender = (rank - step) % ranks
                handle.wait_signal(sender, channel=1 + c)
                if wide_rows:                                   # the copy engine, row by row
                    _copy_rows(parts[c, :, sender], staged(sender, rank)[c])
                else:                                           # rows too short for it: SMs
                    _copy_words(parts[c, :, sender], staged(sender, rank)[c])
    # The rank's own block, while the copy engine pulls the others'.
    own = x.new_empty((n, m, *rest))
    _permute(blocks[:, rank].flatten(1, 2), swap, out=own)
    _copy_words(out.view(n, ranks, m, *rest)[:, rank], own)
    main.wait_stream(copier)


def _copy_words(dst: Tensor, src: Tensor) -> None:
    """dst.copy_(src), through the widest integer view both take (up to 8 bytes): ATen's strided
    copy moves one element per access (on an H200 it copied a 1 GiB block into every other row
    block in 0.80 ms as float32, 1.28 ms as bfloat16)."""
    for word in (torch.int64, torch.int32, torch.int16):
        if word.itemsize <= src.element_size():
            break
        try:
            dst, src = dst.view(word), src.view(word)
            break
        except RuntimeError:  # a row, a stride or an offset that is not a whole number of words
            continue
    dst.copy_(src)


# The copy engine pulls a slice row by row. On 2 x H200 it pulled 256 MiB from the peer in
# 0.78 ms with rows of 256 B to 64 KiB, where SM copies took 1.31-1.34 ms; with rows of 64 B it
# took 1.51 ms, SM copies 1.34. Narrower rows than this go by SM copies.
_COPY_ENGINE_MIN_ROW_BYTES = 256
_copy_rows = torch.ops.cute_transpose._copy_rows_.default


# Each group's symmetric workspace on each device: (tensor, handle).
_WORKSPACES: dict[tuple[str, int], tuple[Tensor, Any]] = {}
_COPY_STREAMS: dict[int, Any] = {}


def _workspace(group: Any, device: torch.device, nbytes: int) -> Any:
    """The symmetric-memory handle of a workspace of at least ``nbytes`` on every rank of
    ``group``, grown (on every rank together) when a call needs more."""
    key = (group.group_name, device.index)
    held = _WORKSPACES.get(key)
    if held is None or held[0].numel() < nbytes:
        symm_mem = _symm_mem()
        if held is not None:  # the last call may still be reading it on the GPU
            torch.cuda.synchronize(device)
            del _WORKSPACES[key], held
        enabled = getattr(symm_mem, "is_symm_mem_enabled_for_group", None)
        if enabled is not None and not enabled(group.group_name):
            with warnings.catch_warnings():  # deprecated, and needed, depending on the version
                warnings.simplefilter("ignore", FutureWarning)
                symm_mem.enable_symm_mem_for_group(group.group_name)
        tensor = symm_mem.empty(nbytes, dtype=torch.uint8, device=device)
        held = (tensor, symm_mem.rendezvous(tensor, group.group_name))
        _WORKSPACES[key] = held
    return held[1]


def free_workspace() -> None:
    """Gives back the symmetric-memory workspaces the ``"symmetric"`` method keeps between calls
    (call it on every rank together, when no exchange is running)."""
    if _WORKSPACES and torch.cuda.is_available():
        torch.cuda.synchronize()
    _WORKSPACES.clear()


def _copy_stream(device: torch.device) -> Any:
    """The stream of the pulls, at high priority: its signal waits take an SM as soon as one
    frees, ahead of the transposes' blocks (on 2 x H200: 0.89 of a bare all-to-all's bandwidth
    against 0.68, bfloat16 4 GiB in 4 slices)."""
    if device.index not in _COPY_STREAMS:
        _COPY_STREAMS[device.index] = torch.cuda.Stream(device, priority=-1)
    return _COPY_STREAMS[device.index]


def _exchange_even(x: Tensor, out: Tensor, group: Any, ranks: int, chunks: int) -> None:
    """Every rank holds the same rows m and receives the same result rows n, moved in ``chunks``
    slices of w = n / chunks result rows. Slice c of the block for rank j is
    x[:, j*n + c*w : j*n + (c+1)*w]. The rank's own block is transposed straight into its
    place among the received ones instead of being sent to itself (`SKIP_SELF`)."""
    m, rest = x.shape[0], tuple(x.shape[2:])
    n, rank = out.shape[0], dist.get_rank(group)
    w = n // chunks
    trailing = list(range(3, 3 + len(rest)))
    blocks = x.unflatten(1, (ranks, chunks, w))                 # (m, P, C, w, *rest), a view
    send = x.new_empty((chunks, ranks, w, m, *rest))            # slice c: (P to j, w, m, *rest)
    recv = torch.empty_like(send)                               # slice c: (P from s, w, m, *rest)
    slabs = out.view(chunks, w, ranks, m, *rest)                # slice c: (w, P, m, *rest), rows c*w..
    # Every slice's transposes and exchange first: an exchange waits only for its own slice's
    # transposes, so the collective's stream never waits for an interleave, and the local stream
    # never waits for the collective until the interleaves, which then follow the slices as
    # they land.
    pending: list[list] = []
    for c in range(chunks):
        if SKIP_SELF:
            own = blocks[:, rank, c]                            # (m, w, *rest) -> (w, m, *rest)
            _permute(own, [1, 0, *(d - 1 for d in trailing)], out=recv[c, rank])
            for lo, hi in ((0, rank), (rank + 1, ranks)):
                if lo < hi:                                     # (m, j, w) -> (j, w, m)
                    _permute(blocks[:, lo:hi, c], [1, 2, 0, *trailing], out=send[c, lo:hi])
            works = _exchange_with_peers(send[c], recv[c], group, rank)
        else:
            _permute(blocks[:, :, c], [1, 2, 0, *trailing], out=send[c])  # (m, P, w) -> (P, w, m)
            works = [dist.all_to_all_single(_bytes(recv[c]), _bytes(send[c]), group=group, async_op=True)]
        pending.append(works)
    for c, works in enumerate(pending):
        for work in works:
            work.wait()
        _permute(recv[c], [1, 0, 2, *trailing], out=slabs[c])            # (P, w, m) -> (w, P, m)


# Whether a rank's own block skips the exchange (it saves the collective a copy of 1/P of the
# bytes); False sends it to itself through one all_to_all_single per slice, as DTensor does.
# bench/distributed.py times both.
SKIP_SELF = True


def _exchange_with_peers(send: Tensor, recv: Tensor, group: Any, rank: int) -> list:
    """Sends block j of ``send`` to rank j and receives rank s's into block s of ``recv``, for
    every other rank, as one batch of point-to-point operations (asynchronous)."""
    ops = []
    for peer in range(send.shape[0]):
        if peer != rank:
            global_peer = dist.get_global_rank(group, peer)
            ops.append(dist.P2POp(dist.isend, _bytes(send[peer]), global_peer, group))
            ops.append(dist.P2POp(dist.irecv, _bytes(recv[peer]), global_peer, group))
    return dist.batch_isend_irecv(ops) if ops else []


def _bytes(t: Tensor) -> Tensor:
    """A contiguous tensor's bytes: the collectives move any dtype (gloo refuses some, such as
    int16), and the bytes are all a transpose needs."""
    return t.view(torch.uint8)


def _exchange_uneven(x: Tensor, out: Tensor, group: Any, rows: list[int], cols: list[int]) -> None:
    """Shards of different sizes: one slice, and the received blocks copied into their columns."""
    rank, rest = dist.get_rank(group), math.prod(x.shape[2:])
    send = _transpose(x, 0, 1)                                  # (N, M_r, *rest): block j = rows of j
    mine = out.shape[0]
    recv = x.new_empty(mine * out.shape[1] * rest)
    nbytes = rest * x.element_size()
    dist.all_to_all_single(_bytes(recv), _bytes(send.view(-1)), group=group,
                           output_split_sizes=[mine * m * nbytes for m in rows],
                           input_split_sizes=[n * rows[rank] * nbytes for n in cols])
    start = 0
    for s, block in enumerate(recv.split([mine * m * rest for m in rows])):
        out[:, start:start + rows[s]].copy_(block.view(mine, rows[s], *x.shape[2:]))
        start += rows[s]


def transpose(x: Any, group: Optional[dist.ProcessGroup] = None, *, chunks: Optional[int] = None,
              method: str = "auto") -> Any:
    """The transpose of dims 0 and 1 of a row-sharded tensor, sharded by rows too.

    - A DTensor on a 1-D device mesh with placements ``(Shard(0),)`` and shape ``(M, N, *rest)``
      gives a DTensor of shape ``(N, M, *rest)`` on the same mesh, placements ``(Shard(0),)``.
    - A plain tensor is this rank's rows of such a tensor over ``group`` (default: the world);
      see `transpose_local`.

    Compared with ``x.transpose(0, 1).redistribute(mesh, [Shard(0)])``, each rank transposes its
    rows once, into a workspace the other ranks pull from (``method="symmetric"``, GPUs of one
    host) or into the all-to-all's send buffer (``"all_to_all"``). ``chunks`` and ``method``: see
    `transpose_local`."""
    from torch.distributed.tensor import DTensor, Shard

    if not isinstance(x, DTensor):
        return transpose_local(x, group, chunks=chunks, method=method)
    mesh = x.device_mesh
    if mesh.ndim != 1 or tuple(x.placements) != (Shard(0),):
        raise ValueError(f"cute_transpose.distributed.transpose: expected a DTensor sharded by "
                         f"rows on a 1-D mesh, placements (Shard(dim=0),), got "
                         f"{tuple(x.placements)} on a {mesh.ndim}-D mesh; redistribute it first")
    if group is not None:
        raise ValueError("cute_transpose.distributed.transpose: a DTensor brings its own group "
                         "(its mesh's); pass group only with a plain tensor")
    _check_local(x, "transpose")
    rows = shard_sizes(x.shape[0], mesh.size())
    local = transpose_local(x.to_local(), mesh.get_group(), rows=rows, chunks=chunks, method=method)
    shape = (x.shape[1], x.shape[0], *x.shape[2:])
    return DTensor.from_local(local, mesh, [Shard(0)], run_check=False, shape=torch.Size(shape),
                              stride=torch.empty(shape, device="meta").stride())
