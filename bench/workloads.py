"""Real workloads: the layout copies models make in one forward pass, captured, then timed.

A model's forward pass copies tensors between layouts wherever its code calls
``x.permute(...).contiguous()``, ``x.transpose(...).reshape(...)`` and the like. This module runs
the forward pass of real model definitions (timm, torchvision and transformers, randomly
initialised: no weights are downloaded) under a dispatch mode that records every copy from a
strided view into a new contiguous tensor: its sizes, strides, storage offset and dtype, and how
many times one forward pass makes it. Each distinct copy becomes one benchmark cell, laid out
exactly as the model had it (`as_cell`), so that the benchmark times what a user who swaps the
model's ``.contiguous()`` for ``cute_transpose.permute`` would get, copy by copy and per forward
pass.

The libraries are optional: a model whose library is missing is skipped, and the report says so.
"""

from __future__ import annotations

import collections
import math
import sys
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional, Sequence

import torch

from bench.cases import CONTIGUOUS, Cell, View, is_contiguous
from bench.harness import first_line

Inputs = Callable[[torch.device, torch.dtype], tuple[tuple, dict]]


class Layout(NamedTuple):
    """One strided view a model copied into a contiguous tensor (sizes and offset in elements)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: str


# --------------------------------------------------------------------------------------------
# Capture
# --------------------------------------------------------------------------------------------

def layout_of(t: torch.Tensor) -> Layout:
    return Layout(tuple(t.shape), tuple(t.stride()), t.storage_offset(), str(t.dtype).removeprefix("torch."))


def is_layout_copy(source: torch.Tensor, result: torch.Tensor) -> bool:
    """A copy that moves a strided view into a new contiguous tensor of the same dtype and shape
    (what ``.contiguous()`` of a permuted or sliced view does), as opposed to a copy that keeps
    the layout, converts the dtype or broadcasts."""
    return (isinstance(source, torch.Tensor) and isinstance(result, torch.Tensor)
            and source.dtype == result.dtype and source.shape == result.shape
            and source.numel() > 1 and not source.is_contiguous() and result.is_contiguous())


class LayoutCopies(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the layout copies (`is_layout_copy`) the ops run inside it make: ``clone`` (what
    ``.contiguous()`` and ``reshape`` of a view that cannot be viewed run), ``contiguous`` and
    ``copy_`` into a contiguous tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: collections.Counter[Layout] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        packet = func.overloadpacket
        if packet in (torch.ops.aten.clone, torch.ops.aten.contiguous) and is_layout_copy(args[0], out):
            self.copies[layout_of(args[0])] += 1
        elif packet is torch.ops.aten.copy_ and is_layout_copy(args[1], args[0]):
            self.copies[layout_of(args[1])] += 1
        return out


def capture(model: torch.nn.Module, args: tuple, kwargs: dict) -> collections.Counter[Layout]:
    """The layout copies of one forward pass of `model`, gradients off. (Not inference mode:
    there ``contiguous`` and ``reshape`` reach the dispatch mode whole, where they otherwise
    reach it as the ``clone`` they run; both are counted, but a reshape only as its clone.)"""
    with torch.no_grad(), LayoutCopies() as mode:
        model(*args, **kwargs)
    return mode.copies


def as_cell(layout: Layout, name: str, group: str) -> Cell:
    """The cell whose ``x.permute(dims).contiguous()`` is this copy: x is the copied view with
    its dims ordered by stride, largest first (the layout the model held before permuting), and
    it keeps the view's exact strides and offset (a contiguous x is a plain contiguous input)."""
    order = sorted(range(len(layout.shape)), key=lambda d: (-layout.strides[d], d))
    shape = tuple(layout.shape[d] for d in order)
    strides = tuple(layout.strides[d] for d in order)
    dims = tuple(order.index(d) for d in range(len(order)))  # x.permute(dims) is the view again
    view = (CONTIGUOUS if layout.offset == 0 and is_contiguous(shape, strides)
            else View("strided", strides=strides, offset=layout.offset))
    return Cell("workloads", name, shape, dims, layout.dtype, view, group)


# --------------------------------------------------------------------------------------------
# The models
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """One model's forward pass. `build(device, dtype)` returns the model (on the device, in
    `dtype`, in eval mode) and `inputs(device, dtype)` the (args, kwargs) of its forward pass."""

    name: str
    library: str
    dtype: str
    batch: str                                     # what one forward pass takes, for the report
    build: Callable[[torch.device, torch.dtype], torch.nn.Module]
    inputs: Inputs
    quick: bool = False                            # also in --quick


def images(batch: int, size: int = 224) -> Inputs:
    return lambda device, dtype: ((torch.randn(batch, 3, size, size, device=device, dtype=dtype),), {})


def pixels(batch: int, size: int) -> Inputs:
    """transformers' image models take ``pixel_values``."""
    return lambda device, dtype: ((), {"pixel_values": torch.randn(batch, 3, size, size, device=device, dtype=dtype)})


def audio(batch: int, length: int) -> Inputs:
    """Whisper: log-mel features of 30 s clips and `length` decoder tokens."""
    return lambda device, dtype: ((), {"input_features": torch.randn(batch, 80, 3000, device=device, dtype=dtype),
                                       "decoder_input_ids": torch.randint(0, 1000, (batch, length), device=device)})


def tokens(batch: int, length: int, decoder: bool = False) -> Inputs:
    def make(device: torch.device, dtype: torch.dtype) -> tuple[tuple, dict]:
        ids = torch.randint(0, 1000, (batch, length), device=device)
        return (), {"input_ids": ids, **({"decoder_input_ids": ids} if decoder else {})}
    return make


def timm_model(name: str) -> Callable[[torch.device, torch.dtype], torch.nn.Module]:
    def build(device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
        import timm
        with device:
            return timm.create_model(name, pretrained=False).to(dtype).eval()
    return build


def torchvision_model(name: str) -> Callable[[torch.device, torch.dtype], torch.nn.Module]:
    def build(device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
        import torchvision
        with device:
            return getattr(torchvision.models, name)(weights=None).to(dtype).eval()
    return build


def transformers_model(config: str, **fields) -> Callable[[torch.device, torch.dtype], torch.nn.Module]:
    """transformers.AutoModel of `config` (a class name of transformers) with `fields` set."""
    def build(device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
        import transformers
        with device:
            return transformers.AutoModel.from_config(getattr(transformers, config)(**fields)).to(dtype).eval()
    return build


WHISPER_BASE = dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                    decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048)
LLAMA_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                num_key_value_heads=8, vocab_size=32000)  # Llama 3.2 1B's layers (a smaller vocabulary)

IMAGES = "32 images of 224²"
WORKLOADS: tuple[Workload, ...] = (
    Workload("ViT-B/16", "timm", "float32", IMAGES, timm_model("vit_base_patch16_224"), images(32), quick=True),
    Workload("Swin-T", "timm", "float32", IMAGES, timm_model("swin_tiny_patch4_window7_224"), images(32)),
    Workload("MaxViT-T", "timm", "float32", IMAGES, timm_model("maxvit_tiny_tf_224"), images(32)),
    Workload("LeViT-128", "timm", "float32", IMAGES, timm_model("levit_128"), images(32)),
    Workload("CoaT-Lite Tiny", "timm", "float32", IMAGES, timm_model("coat_lite_tiny"), images(32)),
    Workload("EfficientFormer-L1", "timm", "float32", IMAGES, timm_model("efficientformer_l1"), images(32)),
    Workload("ConvNeXt-T", "timm", "float32", IMAGES, timm_model("convnext_tiny"), images(32)),
    Workload("ShuffleNet v2 1.0", "torchvision", "float32", IMAGES, torchvision_model("shufflenet_v2_x1_0"),
             images(32), quick=True),
    Workload("Swin-T", "torchvision", "float32", IMAGES, torchvision_model("swin_t"), images(32)),
    Workload("Swin-V2-T", "torchvision", "float32", "32 images of 256²", torchvision_model("swin_v2_t"),
             images(32, 256)),
    Workload("MaxViT-T", "torchvision", "float32", IMAGES, torchvision_model("maxvit_t"), images(32)),
    Workload("ViT-B/16", "torchvision", "float32", IMAGES, torchvision_model("vit_b_16"), images(32)),
    Workload("SegFormer-B0", "transformers", "float32", "16 images of 512²", transformers_model("SegformerConfig"),
             pixels(16, 512)),
    Workload("BERT-base", "transformers", "bfloat16", "8 sequences of 512 tokens",
             transformers_model("BertConfig"), tokens(8, 512), quick=True),
    Workload("GPT-2", "transformers", "bfloat16", "8 sequences of 512 tokens",
             transformers_model("GPT2Config"), tokens(8, 512)),
    Workload("T5-small", "transformers", "bfloat16", "8 sequences of 512 tokens (encoder and decoder)",
             transformers_model("T5Config"), tokens(8, 512, decoder=True)),
    Workload("Whisper-base", "transformers", "bfloat16", "8 clips of 30 s (80 x 3000 features), 64 tokens",
             transformers_model("WhisperConfig", **WHISPER_BASE), audio(8, 64)),
    Workload("Llama 3.2 1B layers", "transformers", "bfloat16", "2 sequences of 2048 tokens",
             transformers_model("LlamaConfig", **LLAMA_1B), tokens(2, 2048)),
)


def label(w: Workload) -> str:
    return f"{w.library} {w.name}"


@dataclass
class Captured:
    """What the capture found: one cell per distinct copy, the copies per forward pass of each
    cell (by cell_key), and the workloads that could not run, with why."""

    cells: list[Cell]
    calls: dict[str, int]
    skipped: dict[str, str]
    workloads: dict[str, dict]      # label -> {library, dtype, batch, copies, distinct}


def capture_workloads(device: torch.device, quick: bool = False,
                      workloads: Sequence[Workload] = WORKLOADS,
                      log: Optional[Callable[[str], None]] = None) -> Captured:
    """Runs each workload's forward pass once on `device` and turns its copies into cells."""
    log = log or (lambda text: print(text, file=sys.stderr))
    found = Captured([], {}, {}, {})
    for w in workloads:
        if quick and not w.quick:
            continue
        dtype = getattr(torch, w.dtype)
        try:
            model = w.build(device, dtype)
            args, kwargs = w.inputs(device, dtype)
            copies = capture(model, args, kwargs)
        except Exception as e:  # noqa: BLE001  (a missing library or model: reported, not fatal)
            found.skipped[label(w)] = f"{type(e).__name__}: {first_line(e)}"
            log(f"workloads: {label(w)} skipped ({found.skipped[label(w)]})")
            continue
        finally:
            model = args = kwargs = None  # noqa: F841  (free the model before the next one)
            if device.type == "cuda":
                torch.cuda.empty_cache()
        found.workloads[label(w)] = {"library": w.library, "model": w.name, "dtype": w.dtype,
                                     "batch": w.batch, "copies": sum(copies.values()),
                                     "distinct": len(copies)}
        for k, (layout, n) in enumerate(sorted(copies.items(), key=lambda item: -item[1] * math.prod(item[0].shape))):
            cell = as_cell(layout, f"{w.name} #{k + 1}", label(w))
            found.cells.append(cell)
            found.calls[cell_key(cell)] = n
        log(f"workloads: {label(w)}: {sum(copies.values())} layout copies per forward pass, "
            f"{len(copies)} distinct")
    return found


def cell_key(cell: Cell) -> str:
    """A cell's key in Captured.calls (cell names repeat across libraries, groups do not)."""
    return f"{cell.group} / {cell.name}"
