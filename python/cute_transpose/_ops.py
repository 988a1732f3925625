"""Typed Python entry points and fake (meta) kernels for the cute_transpose ops.

The op list comes from the extension itself (csrc/variants.h, through the private ops
``_variants`` and ``_kernels``), so Python and C++ cannot disagree. Autograd is registered in
C++ (csrc/autograd.cpp), so that calls stay in C++."""

import json
import operator
from typing import Any, Callable, Optional, Sequence

import torch
from torch import Tensor
from torch._prims_common import canonicalize_dim

_lib = torch.ops.cute_transpose

# The transpose variants, in the order of the ladder (csrc/variants.h).
VARIANTS: tuple[str, ...] = tuple(_lib._variants())
# Every op the extension registers: the variants, the copy ceiling, and `transpose` and `permute`,
# which pick the fastest kernel for the shape and accept any dims (both have out= overloads).
OPS: tuple[str, ...] = VARIANTS + ("copy", "transpose", "permute")
# The kernels `transpose` and `permute` choose among on CUDA (see explain()).
KERNELS: tuple[str, ...] = tuple(_lib._kernels())


def _check_rank(x: Tensor, name: str) -> None:
    torch._check(x.dim() >= 2,
                 lambda: f"cute_transpose.{name}: expected a tensor of rank >= 2 (..., M, N), "
                         f"got rank {x.dim()} with shape {tuple(x.shape)}")


def _register_matrix_op(name: str, transposes: bool, doc: str) -> Callable[[Tensor], Tensor]:
    op = getattr(_lib, name).default  # the overload itself: no overload resolution per call

    @torch.library.register_fake(f"cute_transpose::{name}")
    def _fake(x: Tensor) -> Tensor:
        _check_rank(x, name)
        return x.new_empty((*x.shape[:-2], x.shape[-1], x.shape[-2]) if transposes else x.shape)

    def fn(x: Tensor) -> Tensor:
        return op(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


for _name in VARIANTS:
    globals()[_name] = _register_matrix_op(
        _name, True, f"x.transpose(-2, -1).contiguous() computed by the `{_name}` kernel.")
copy = _register_matrix_op(
    "copy", False, "A contiguous copy of x with the seed kernels' tiles and scalar accesses: their "
                   "ceiling. (torch's clone, with wide vector accesses, is the device's.)")


def _dims_list(dims: Sequence[Any]) -> list[int]:
    """dims as Python ints; a float (or a float tensor) is an error, as it is for torch.permute."""
    try:
        return [operator.index(d) for d in dims]
    except TypeError:
        raise TypeError(f"cute_transpose: dims must be integers, got {list(dims)!r}") from None


def _permutation(x: Tensor, dims: Sequence[int], name: str) -> list[int]:
    rank = x.dim()
    torch._check(len(dims) == rank,
                 lambda: f"cute_transpose.{name}: dims {list(dims)} has {len(dims)} entries, "
                         f"but the input has rank {rank} (shape {tuple(x.shape)})")
    perm = [canonicalize_dim(rank, d) for d in dims]  # IndexError as torch's, for a bad dim
    torch._check(len(set(perm)) == rank,
                 lambda: f"cute_transpose.{name}: dims {list(dims)} is not a permutation")
    return perm


def _transposition(rank: int, dim0: int, dim1: int) -> list[int]:
    """The permutation of range(rank) that swaps dim0 and dim1 (an IndexError, as torch's, for a
    bad dim)."""
    a, b = canonicalize_dim(rank, dim0), canonicalize_dim(rank, dim1)
    perm = list(range(rank))
    if perm:
        perm[a], perm[b] = perm[b], perm[a]
    return perm


def _check_out(x: Tensor, out: Tensor, perm: list[int], name: str) -> None:
    shape = tuple(x.shape[d] for d in perm)
    torch._check(out.device == x.device,
                 lambda: f"cute_transpose.{name}: out is on device {out.device} but the input is on {x.device}")
    torch._check(out.dtype == x.dtype,
                 lambda: f"cute_transpose.{name}: out has dtype {out.dtype} but the input has dtype {x.dtype}")
    torch._check(tuple(out.shape) == shape,
                 lambda: f"cute_transpose.{name}: out has shape {tuple(out.shape)} but the result has shape {shape}")
    torch._check(out.is_contiguous(), lambda: f"cute_transpose.{name}: out must be a contiguous tensor")


def _check_no_alias(x: Tensor, out: Tensor, name: str) -> None:
    """out may not share memory with x: the kernel would read what it has overwritten. Eager
    calls check byte ranges in C++; the fake kernels below check shared storage, which fake
    tensors keep, so torch.compile refuses the same calls as eager."""
    torch._check(x.untyped_storage()._cdata != out.untyped_storage()._cdata,
                 lambda: f"cute_transpose.{name}: out overlaps the input in memory; pass a separate tensor")


@torch.library.register_fake("cute_transpose::transpose")
def _transpose_fake(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    return x.new_empty([x.shape[d] for d in _transposition(x.dim(), dim0, dim1)])


@torch.library.register_fake("cute_transpose::transpose.out")
def _transpose_out_fake(src: Tensor, dim0: int = -2, dim1: int = -1, *, out: Tensor) -> Tensor:
    _check_out(src, out, _transposition(src.dim(), dim0, dim1), "transpose")
    _check_no_alias(src, out, "transpose")
    return out


@torch.library.register_fake("cute_transpose::permute")
def _permute_fake(x: Tensor, dims: Sequence[int]) -> Tensor:
    return x.new_empty([x.shape[d] for d in _permutation(x, dims, "permute")])


@torch.library.register_fake("cute_transpose::permute.out")
def _permute_out_fake(src: Tensor, dims: Sequence[int], *, out: Tensor) -> Tensor:
    _check_out(src, out, _permutation(src, dims, "permute"), "permute")
    _check_no_alias(src, out, "permute")
    return out


@torch.library.register_fake("cute_transpose::_permute_with")
def _permute_with_fake(x: Tensor, dims: Sequence[int], kernel: str) -> Tensor:
    return x.new_empty([x.shape[d] for d in _permutation(x, dims, "_permute_with")])


# The overloads the functions below call (an overload packet would resolve one per call).
_transpose, _transpose_out = _lib.transpose.default, _lib.transpose.out
_permute, _permute_out = _lib.permute.default, _lib.permute.out


def transpose(x: Tensor, dim0: int = -2, dim1: int = -1, *, out: Optional[Tensor] = None) -> Tensor:
    """x.transpose(dim0, dim1).contiguous() with the fastest kernel for the shape and dtype.

    Any two dims of any rank, any strides. With ``out`` (contiguous, of the result's shape, dtype
    and device, not sharing memory with x) the result is written there and ``out`` is returned."""
    if out is None:
        return _transpose(x, operator.index(dim0), operator.index(dim1))
    return _transpose_out(x, operator.index(dim0), operator.index(dim1), out=out)


def permute(x: Tensor, dims: Sequence[int], *, out: Optional[Tensor] = None) -> Tensor:
    """x.permute(dims).contiguous() with the fastest kernel for the shape and dtype.

    Dims that stay adjacent are merged, then the kernel is chosen for the shape (see
    ``explain``). Strided views are read in place. With ``out`` (contiguous, of the result's
    shape, dtype and device, not sharing memory with x) the result is written there and ``out``
    is returned."""
    dims = _dims_list(dims)
    if out is None:
        return _permute(x, dims)
    return _permute_out(x, dims, out=out)


def explain(x: Tensor, dims: Optional[Sequence[int]] = None, *, kernel: Optional[str] = None,
            gpu: Optional[str] = None) -> dict:
    """How ``permute(x, dims)`` (``transpose(x)`` when dims is None) runs: a dict with

    - ``route``: "copy" (the innermost dim stays innermost), "transpose", or "empty";
    - ``kernel``: the kernel that runs (one of KERNELS on CUDA; "aten" on the CPU);
    - ``name``: the name that runs the same kernel in the same block order through
      ``torch.ops.cute_transpose._permute_with`` and in ``autotune_cache()`` ("rows/together"
      where its blocks read neighbouring runs together; "aten" on the CPU);
    - ``config``: its configuration (tile, vector widths, box);
    - ``class``: the shape class the chooser looked up, and ``reason``: why this kernel;
    - ``dims``: the merged dims as [size, input stride, output stride], the output's order.

    For a CPU tensor, ``kernel`` is "aten" (every CPU op is ATen's strided copy) and ``cuda``
    holds what the same call would run on an sm_90 GPU: an H100, or the GPU that ``gpu`` names
    as torch.cuda.get_device_name does (a few rules differ by model: "NVIDIA H200" walks some
    tiles m-tiles first, copies rows in smaller blocks, runs the tile kernel's large-tile work
    in wide or lean tiles, sends narrow row copies over many dims, and row copies the table gives
    ATen's copy in rows of 16 bytes or more, to the gather kernel, and unpacks 2-3 channels of
    8-byte elements, or 4 of 16-byte elements into output rows of 600 or more, whose run
    continues, in the split kernel, passes over the box kernel for 2-byte elements, runs the padded
    kernel's 4- and 8-byte transposes in lean where lean's tiles would be under half full,
    2-byte transposes that the table gives ATen's copy, and 1-byte ones that skip gaps, in
    interleave where it moves them one element at a time into output rows of 2048 bytes or
    more, 1-byte planes that interleave would pack skipping gaps in gather, and those packs in
    split where gather would load a sector for every element, and row copies of 4-byte elements in
    runs of one to three that gather would take,
    where the data beside each run comes back 8192 or more elements later, in ATen's
    copy, and has rows and gather read row copies in runs under 256 bytes whose next run lies
    1 MiB or more further on in the output with neighbouring runs together, runs split picks
    moved one element per access in short tiles in gather (16-byte elements over four or more
    dims in ATen's copy), 1-byte transposes of under 2^22 elements that the table gives the
    padded kernel in lean's square tiles, transposes that the table gives realign in the
    tile kernel (8-byte elements) or in padded (2- and 4-byte elements into output rows of
    256-2047 bytes from input rows of 2048 or more, 1-byte ones into output rows of 2048 bytes
    or more from input rows of 256 or more), and 8-byte transposes that the table gives padded
    in lean, else split, into rows of 256-2047 bytes on both sides, or in the tile kernel from
    broadcast inputs into rows of 2048 bytes or more on both sides, and 4-byte transposes that
    the table gives the tile kernel one element per access in lean where gather's reads would
    be scattered, else in gather, and transposes of elements up to 4 bytes that the table gives
    ATen's copy in gather where the lanes of its loads share 32-byte sectors; and it does not
    have the kernels ask the caches to keep a large transpose's input lines, as
    the H100 does from 128 MiB of output loaded in 16-byte vectors, nor run in gather the
    broadcast picks of ATen's copy of elements of up to 4 bytes whose neighbours lie near in the
    output, as the H100 does). A CUDA tensor's own
    device is described, whatever ``gpu`` says.
    ``kernel=`` names one of KERNELS to describe instead of the chooser's pick (an error if it
    cannot run the permute), or one of its forms as ``torch.ops.cute_transpose._permute_with``
    takes them ("split/tall", "lean/large", "rows/together", "fill/lanes", "box/small", ...); ``offered``
    then says whether the chooser would consider it for this permute at all (it does not offer
    some kernels on shapes where they run but lose, and says why in ``reason``)."""
    if dims is None:
        dims = _transposition(x.dim(), -2, -1) if x.dim() >= 2 else list(range(x.dim()))
    dims = _dims_list(dims)
    on_cuda = x.device.type == "cuda"
    major, minor = torch.cuda.get_device_capability(x.device) if on_cuda else (9, 0)
    name = torch.cuda.get_device_name(x.device) if on_cuda else (gpu or "")
    plan = json.loads(_lib._explain(x, dims, 10 * major + minor, kernel or "", name))
    if on_cuda:
        return {"device": str(x.device), **plan}
    return {"device": str(x.device), "route": plan["route"], "kernel": "aten", "name": "aten",
            "reason": "on the CPU every op is ATen's strided copy", "dims": plan["dims"], "cuda": plan}


class autotune:
    """Per-shape autotuning of ``transpose`` and ``permute`` on CUDA, on or off for the process.

    With it on, the first call of each shape (dims, strides, dtype and alignment, per device)
    times every kernel of KERNELS that can run it, with the L2 cache flushed before each launch,
    and remembers the fastest (by median launch; the tuning table's pick where no other is
    faster by more than 2%); later calls of that shape run it without timing. Off (the
    default), the tuning table picks by shape class, with no timing at any call. The first call
    of a shape blocks the host while it times (a few milliseconds; docs/PERFORMANCE.md has the
    measured cost); a call on a stream being captured into a CUDA graph does not time, and runs
    the remembered kernel or the table's. Every kernel writes the same bits, so the results do
    not change, only their speed. ``CUTE_TRANSPOSE_AUTOTUNE=1`` in the environment turns it on
    at import. Call it outside torch.compile'd functions.

        cute_transpose.autotune()           # on from here
        with cute_transpose.autotune():     # on inside the block, then as before
            y = cute_transpose.permute(x, (0, 2, 3, 1))
        cute_transpose.autotune(False)      # off (remembered picks are kept: autotune_cache)
    """

    def __init__(self, enabled: bool = True) -> None:
        self._before = _lib._set_autotune(bool(enabled))

    def __enter__(self) -> "autotune":
        return self

    def __exit__(self, *exc: object) -> None:
        _lib._set_autotune(self._before)


def autotune_enabled() -> bool:
    """Whether per-shape autotuning is on (see ``autotune``)."""
    return bool(_lib._autotune_enabled())


def autotune_cache(clear: bool = False) -> list[dict]:
    """The kernels autotuning picked so far: one dict per shape with its ``key`` (device, element
    size, alignment and merged dims as size:input stride:output stride), the ``kernel`` (by the
    name ``_permute_with`` takes: ``rows/together`` where rows runs with its blocks reading
    neighbouring runs together; rows and gather are timed in both orders) and the ``timings`` of
    the candidates, fastest first. ``clear=True`` forgets them (after returning them): the next
    call of each shape times again."""
    entries = json.loads(_lib._autotune_cache())
    if clear:
        _lib._clear_autotune_cache()
    return entries
