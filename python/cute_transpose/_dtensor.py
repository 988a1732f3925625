"""DTensor sharding rules for every cute_transpose op.

A permute moves elements between positions and never combines them, so each rank can permute its
own shard with the local kernel and no communication: the output's placement on each mesh dim
follows the input's, through the permutation.

- ``Shard(d)`` becomes ``Shard(j)``, where ``j`` is the output position of input dim ``d``
  (uneven shards too: a shard's size along ``d`` becomes its size along ``j``);
- ``Replicate()`` stays ``Replicate()``;
- ``Partial(op)`` stays ``Partial(op)``: sum, average, max and min all commute with moving
  elements.

``out=`` forms need ``out`` to carry the result's placements already (DTensor writes each rank's
shard into ``out``'s local tensor); any other placement is an error that names both.

The rules are registered when ``torch.distributed.tensor`` is first imported (at once if it
already is), so that ``import cute_transpose`` does not pay for importing DTensor.
"""

import importlib.abc
import importlib.util
import sys
from typing import Any, Callable, Optional, Sequence

import torch

from ._ops import VARIANTS, _transposition

_DTENSOR = "torch.distributed.tensor"


# For each op: the permutation it applies, from the input's rank and the op's other arguments.
_PERMUTATIONS: dict[str, Callable[..., list[int]]] = {
    "copy": lambda rank: list(range(rank)),
    "transpose": lambda rank, dim0=-2, dim1=-1: _transposition(rank, dim0, dim1),
    "permute": lambda rank, dims: [d % rank for d in dims],
    "_permute_with": lambda rank, dims, kernel: [d % rank for d in dims],
}


def output_placements(placements: Sequence[Any], perm: Sequence[int]) -> list[Any]:
    """The placements of ``x.permute(perm)`` for an input with ``placements``, mesh dim by mesh
    dim: a sharded dim keeps its shards at its new position; anything else is unchanged."""
    from torch.distributed.tensor import Shard

    position = {d: j for j, d in enumerate(perm)}
    return [Shard(position[p.dim]) if type(p) is Shard else p for p in placements]


def _strategies(name: str, perm_of: Callable[..., list[int]]) -> Callable[..., list]:
    """The sharding function of one op: for each placement the input may have on one mesh dim,
    the output's. DTensor expands these over the mesh's dims and keeps the input's own
    placements, since every one of them is listed."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    def sharding(x: Any, *args: Any, out: Optional[Any] = None, **kwargs: Any) -> list:
        perm = perm_of(x.ndim, *args, **kwargs)
        non_tensor = [None] * len(args)

        def option(output: Any, input_: Any) -> tuple[list, list]:
            # Inputs: x, the other positional arguments (not tensors), then out= if given,
            # which must already have the output's placement.
            return [output], [input_, *non_tensor, *([output] if out is not None else [])]

        options = [option(Replicate(), Replicate())]
        options += [option(Shard(j), Shard(d)) for j, d in enumerate(perm)]
        options += [option(p, p) for p in {p for p in x.placements if isinstance(p, Partial)}]
        unsupported = [p for p in x.placements if not isinstance(p, (Replicate, Shard, Partial))
                       or (isinstance(p, Shard) and type(p) is not Shard)]
        if unsupported:
            raise NotImplementedError(
                f"cute_transpose.{name}: DTensor placement {unsupported[0]} is not supported "
                f"(Shard, Replicate and Partial are); redistribute the input first")
        if out is not None:
            expected = tuple(output_placements(x.placements, perm))
            if tuple(out.placements) != expected:
                raise ValueError(
                    f"cute_transpose.{name}: out has placements {tuple(out.placements)}, but the "
                    f"result of this input ({tuple(x.placements)}) has {expected}; pass an out "
                    f"with the result's placements")
        return options

    return sharding


def register() -> None:
    """Registers the rules with DTensor (done for you when DTensor is imported)."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo
    from torch.distributed.tensor.experimental import register_sharding

    lib = torch.ops.cute_transpose
    overloads: list[tuple[str, Any, Callable[..., list[int]]]] = []
    for name in VARIANTS:
        overloads.append((name, getattr(lib, name).default, lambda rank: _transposition(rank, -2, -1)))
    for name, perm_of in _PERMUTATIONS.items():
        packet = getattr(lib, name)
        for overload in packet.overloads():
            overloads.append((name, getattr(packet, overload), perm_of))
    propagator = DTensor._op_dispatcher.sharding_propagator
    for name, op, perm_of in overloads:
        register_sharding(op)(_strategies(name, perm_of))
        # Every argument after the input decides the output's placements (register_sharding
        # would leave an int[] such as permute's dims out of its cache key), and so does out's
        # spec, which the rule checks.
        has_out = any(argument.is_out for argument in op._schema.arguments)
        propagator.op_to_schema_info[op] = RuntimeSchemaInfo(
            static_argnum=1, static_kwargkey=["out"] if has_out else None, needs_pytree=False)


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``torch.distributed.tensor`` is about to be imported, it wraps
    that module's loader so that `register` runs once the module has loaded."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _DTENSOR:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            register()

        spec.loader.exec_module = exec_then_register  # type: ignore[method-assign]
        return spec


def register_when_imported() -> None:
    if not torch.distributed.is_available():
        return
    if _DTENSOR in sys.modules:
        register()
    else:
        sys.meta_path.insert(0, _RegisterAfterImport())
