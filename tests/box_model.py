"""A replay of the Box kernel's addressing (csrc/cuda/box_transpose.cuh) on the CPU, from the
plan the chooser made (explain(x, dims, kernel="box")["cuda"]["box"]), with numpy. It moves the
elements exactly as the kernel's threads would -- box by box, vector by vector, through a
shared-memory array -- and checks the invariants the kernel relies on:

- every vector is whole: its elements are consecutive in global memory (and, on the input
  side, in shared memory), lie all inside or all outside the box's limits, and start aligned;
- where the plan keeps positions (the kernel's fast path), each side has at most 1024 vectors
  and an output vector's elements lie one innermost-dim step apart in shared memory (the fast
  path gathers them without carrying into outer dims);
- shared memory holds the box without collisions, within its size;
- phase 2 reads only what phase 1 of the same box wrote;
- every output element is written exactly once.

So the planner's choices (box dims, chunks, vectors, pads) are checked where CI runs, without a
GPU; the GPU tests check the kernel itself."""

import numpy as np

KEPT_VECTORS = 1024  # BoxPlan::kKeptVectors: the kernel's 256 threads, 4 vectors each


def side(plan, order, index):
    """Box coordinates (one array per box dim) of linear indices along a side's order."""
    coords = {}
    for d, k in enumerate(order):
        if d + 1 < len(order):
            coords[k] = index % plan["tile"][k]
            index = index // plan["tile"][k]
        else:
            coords[k] = index
    return coords


def replay(plan, storage, base, out_numel):
    """The kernel's output (a flat array of out_numel elements, -1 where never written) for an
    input whose elements are storage[base + offset]. `storage` holds element indices, so every
    element is distinct."""
    rank, vin, vout = len(plan["size"]), plan["vin"], plan["vout"]
    tile, volume = plan["tile"], plan["volume"]
    out = np.full(out_numel, -1, dtype=np.int64)
    writes = np.zeros(out_numel, dtype=np.int64)
    assert plan["volume"] == int(np.prod(tile))
    assert base % vin == 0, "the input's data pointer is not vector-aligned"
    kept = KEPT_VECTORS >= max(volume // vin, volume // vout) and tile[plan["out_order"][0]] % vout == 0
    assert plan["keeps_positions"] == kept
    for t in range(plan["boxes"]):
        # where the box starts, and its limits
        rest, at_in, at_out, limit = t, 0, 0, list(tile)
        for k in reversed(range(len(plan["outer_size"]))):
            i = rest % plan["outer_size"][k] if k > 0 else rest
            rest //= plan["outer_size"][k] if k > 0 else 1
            at_in += i * plan["outer_in"][k]
            at_out += i * plan["outer_out"][k]
            d = plan["chunk_of"][k]
            if d >= 0:
                limit[d] = min(tile[d], plan["size"][d] - i * tile[d])
        smem = np.full(plan["smem_elems"], -1, dtype=np.int64)
        for phase, order, v_len, strides, at in (("in", plan["in_order"], vin, plan["in"], at_in),
                                                 ("out", plan["out_order"], vout, plan["out"], at_out)):
            first = np.arange(volume // v_len) * v_len
            elems = [side(plan, order, first + e) for e in range(v_len)]
            inside = [np.all([elems[e][k] < limit[k] for k in range(rank)], axis=0) for e in range(v_len)]
            goff = [sum(elems[e][k] * strides[k] for k in range(rank)) for e in range(v_len)]
            soff = [sum(elems[e][k] * plan["smem"][k] for k in range(rank)) for e in range(v_len)]
            for e in range(v_len):
                assert np.array_equal(inside[e], inside[0]), f"{phase}: a vector straddles the box's edge"
                assert np.array_equal(goff[e], goff[0] + e), f"{phase}: a vector is not contiguous in memory"
                if phase == "in":
                    assert np.array_equal(soff[e], soff[0] + e), "in: a vector is not contiguous in shared memory"
                elif plan["keeps_positions"]:
                    step = plan["smem"][order[0]]
                    assert np.array_equal(soff[e], soff[0] + e * step), "out: a kept vector wraps its innermost dim"
            live = inside[0]
            assert np.all((at + goff[0][live]) % v_len == 0), f"{phase}: a vector starts unaligned"
            for e in range(v_len):
                s = soff[e][live]
                assert s.size == 0 or (s.min() >= 0 and s.max() < plan["smem_elems"]), "shared memory overflows"
                if phase == "in":
                    assert np.all(smem[s] == -1), "two elements share a shared-memory slot"
                    smem[s] = storage[base + at + goff[e][live]]
                else:
                    values = smem[s]
                    assert np.all(values != -1), "phase 2 reads a slot phase 1 did not write"
                    where = at + goff[e][live]
                    out[where] = values
                    np.add.at(writes, where, 1)
    assert np.all(writes == 1), f"{int(np.sum(writes == 0))} elements unwritten, {int(np.sum(writes > 1))} written twice"
    return out
