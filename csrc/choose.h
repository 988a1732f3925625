// The chooser: given a Plan, which kernel runs it, in which configuration, and why. Every
// routing rule and threshold of the package lives in choose.cpp; the kernels obey a Choice
// (the Box kernel's plan comes from box_plan.h).
//
// `transpose` and `permute` on CUDA take choose(): the plan's shape class (class_key) is looked
// up in the tuning table measured for the GPU's architecture (csrc/tuning/sm_XY.inc, written by
// bench/tune.py), which ranks the candidate kernels for that class; the first one that can run
// the plan wins. Classes or GPUs without a table entry take a fixed rule (fallback_ranking).
// The seed ladder and `copy` force their own kernel (force()).
#pragma once

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "plan.h"
#include "tile_config.h"

namespace cute_transpose {

// Whether `range` (an array or container) holds `value`.
template <class Range, class T>
bool contains(Range const& range, T const& value) {
  return std::find(std::begin(range), std::end(range), value) != std::end(range);
}

enum class Kernel {
  // Candidates of the chooser.
  Aten,        // ATen's strided copy (torch's own x.permute(...).contiguous())
  Rows,        // copy route: rows copied in vectors (cuda/strided_copy.cu)
  Tile,        // vectorized shared-memory tile transpose with register transposes (cuda/tile_*.cu)
  Interleave,  // one side of C <= kMaxChannels elements: C planes <-> C-interleaved (cuda/interleave.cuh)
  Box,         // any permute: a box of small dims staged through shared memory (cuda/box_transpose.cu)
  Tma,         // the tile transpose with a TMA store (cuda/tma.cu)
  Pipelined,   // TMA loads into a ring of stages, vector stores (cuda/pipelined.cu)
  Split,       // the tile transpose with two dims on each short side (cuda/split_transpose.cu)
  Realign,     // the tile transpose of rows off the 16-byte grid in aligned 16-byte vectors (cuda/realign.cu)
  Gather,      // any permute in output order: vector stores, each element loaded on its own (cuda/gather.cu)
  Lean,        // a short chain per thread: small work, and where the table ranks it (cuda/lean_transpose.cu)
  Words,       // 1- and 2-byte elements off the grid, packed into 4-byte words in shared memory (cuda/words.cu)
  Fill,        // output rows that repeat one input element (the input reads their dim with stride 0) (cuda/fill.cu)
  Lanes,       // any permute in output order, lanes on consecutive elements, loads first: small work (cuda/lanes.cu)
  Stage,       // a short side of 2-8 elements staged through shared memory, any strides (cuda/stage.cu)
  // The seed ladder, only when asked for by name.
  NaiveCoalescedRead,
  NaiveCoalescedWrite,
  BankConflictRead,
  BankConflictWrite,
  Padded,
  Swizzled,
  SeedCopy,
};

// The chooser's candidates, by name (cute_transpose.KERNELS, the tuning table's values). The
// names, their forms and Choice::config are kernel_names.cpp's.
std::vector<std::string> const& candidate_names();
char const* kernel_name(Kernel k);

char const* tile_shape_name(TileShape s);
std::optional<TileShape> tile_shape_from_name(std::string const& name);

struct Choice {
  Kernel kernel = Kernel::Aten;
  int width = 0;                      // Rows, Tile, Interleave, Tma, Gather, Lean (input side): vector bytes
  int out_width = 0;                  // Lean: the output side's vector bytes
  TileShape shape = TileShape::Square;  // Tile, Lean, Split
  int threads = 0;                    // Rows: the most threads a block of 16-byte vectors takes
  bool together = false;              // Rows, Gather: blocks read neighbouring runs together (index_walk.cuh)
  bool lanes = false;                 // Fill: each lane loads its own vector's rows (cuda/fill.cu)
  int channels = 0;                   // Interleave: the short side's length C
  bool pack = false;                  // Interleave: planes -> interleaved (true) or back
  std::optional<Problem> problem;     // every kernel but Box and Aten
  std::optional<BoxPlan> box;         // Box
  std::optional<SplitProblem> split;  // Split
  std::string key;                    // the plan's shape class      (filled by choose(..., explain))
  std::string reason;                 // why this kernel             (filled by choose(..., explain))
  std::string config() const;         // the configuration in words
};

// The GPU as the chooser sees it: its architecture, which picks the tuning table, and the few
// rules measured to differ between GPU models of one architecture (device_rules).
struct Device {
  int arch = 0;      // compute capability as 10 * major + minor (90 for H100); 0: unknown
  bool tma = false;  // the build has the TMA kernel's sm_90 code for this device
  // The tile kernels walk m-tiles first wherever there are at least as many m-tiles as n-tiles
  // (walk_m_first, choose.cpp), not only where the output's runs split sectors.
  bool long_side_first = false;
  // The rows kernel's blocks with 16-byte vectors: at most this many threads (strided_copy.cu).
  int rows_threads = 512;
  // The kernels that load 16-byte vectors (tile, lean, split, interleave's aligned vectors, tma,
  // pipelined) keep the input's lines in the caches (Problem::keep_inputs) into outputs of at
  // least this many bytes; 0: never (keeps_inputs, choose.cpp).
  int64_t keep_inputs_from = 0;
  // The work that the tile kernel's rule gives its Large configuration (large full matrices;
  // for 4-byte elements also mostly full ones: tile_shape, choose.cpp) runs in it; where false,
  // in wide tiles (1-byte elements) or the lean kernel's large tiles (4-byte elements).
  bool large_tiles = true;
  // Where the tile or lean kernel keeps its input lines (keep_inputs_from), it walks m-tiles first
  // wherever the output's rows are no longer than the input's (kept_m_first, choose.cpp).
  bool kept_m_first = false;
  // Row copies in vectors under 16 bytes run the gather kernel wherever the rows kernel's
  // divisions per byte pass what gather's loads of one element each cost (gather_takes_rows).
  bool rows_gather = false;
  // Transposes of 8-byte elements whose input rows lie off the 16-byte grid while the output's
  // rows are whole vectors run the lean kernel (lean_takes_element_loads, choose.cpp).
  bool lean_element_loads = false;
  // Transposes of 4- and 8-byte elements that the table gives the tile kernel in 16-byte vectors
  // run the lean kernel in its own tile shape where it is offered, else 4-byte ones the split
  // kernel where it is (tile_gives_way, choose.cpp).
  bool tile_gives_way = false;
  // Unpacks of 2-3 channels of 8-byte elements (or 4 of 16-byte elements into output rows of
  // 600 or more) that the table gives the interleave kernel one element per access, where the
  // channels' run continues into the next dim, run the split kernel (split_takes_dense_unpacks,
  // choose.cpp).
  bool dense_unpacks_split = false;
  // Transposes of 8-byte elements that the table gives ATen's copy, where that copy would load
  // a sector for every element, run the split kernel (split_takes_scattered_aten, choose.cpp;
  // every sm_90 GPU, device_rules).
  bool scattered_aten_split = false;
  // Transposes of 2-byte elements never run the box kernel: the chooser passes over it to the
  // next kernel of the ranking (skips_box, choose.cpp).
  bool box_gives_way = false;
  // Transposes of 4- and 8-byte elements that the table gives the padded kernel run the lean
  // kernel where its tiles would be under half full, the shapes the table never timed it on
  // (lean_takes_padded, choose.cpp).
  bool padded_lean = false;
  // Transposes of 2-byte elements that the table gives ATen's copy run the interleave kernel
  // where it runs them one element per access into output rows of 2048 bytes or more, and
  // 1-byte ones where it also skips gaps (interleave_takes_element_aten, choose.cpp).
  bool element_aten_interleave = false;
  // 1-byte planes that the table packs in the interleave kernel one element per access skipping
  // gaps run the gather kernel (gather_takes_gapped_packs, choose.cpp).
  bool gapped_pack_gather = false;
  // Transposes that the table gives the gather kernel, or that gapped_pack_gather moves there,
  // where gather would load a sector for every element, run the split kernel
  // (split_takes_scattered_gather, choose.cpp; every sm_90 GPU, device_rules).
  bool scattered_gather_split = false;
  // Row copies of 4-byte elements in runs of one to three that the table, or rows_gather, gives
  // the gather kernel, where the elements sharing a run's sectors come round again only far
  // later in the output, run ATen's copy (aten_takes_far_short_runs, choose.cpp).
  bool far_short_runs_aten = false;
  // Row copies in runs under 256 bytes, moved in accesses of 8 bytes or more, whose next run in
  // the input lies 1 MiB or more further on in the output, run rows or gather with their blocks
  // in the neighbours-together order (reads_runs_together, choose.cpp).
  bool runs_together = false;
  // Transposes that the table gives the split kernel one element per access, whose output side
  // chains two dims into a run under 128 elements with the input's rows (an input side of one
  // dim) next to it in the output, in tiles under 80% full, run the gather kernel
  // (gather_takes_short_split_rows, choose.cpp).
  bool short_split_gather = false;
  // Of those, 16-byte elements over four or more dims (after merging) run ATen's copy
  // (aten_takes_short_split_rows, choose.cpp).
  bool short_split_aten = false;
  // Transposes of under 2^22 1-byte elements that the table gives the padded kernel, on
  // unbroadcast inputs, run the lean kernel in its square tile (lean_takes_padded_bytes,
  // choose.cpp).
  bool padded_bytes_lean = false;
  // Transposes that the table gives the realign kernel run the tile kernel (8-byte elements) or
  // the padded kernel: 2- and 4-byte elements into output rows of 256-2047 bytes from input rows
  // of 2048 or more, 1-byte elements into output rows of 2048 bytes or more from input rows of
  // 256 or more (realign_gives_way, choose.cpp).
  bool realign_gives_way = false;
  // Transposes of 8-byte elements that the table gives the padded kernel run lean (else split)
  // into rows of 256-2047 bytes on both sides, and the tile kernel from broadcast inputs into rows
  // of 2048 bytes or more (padded_gives_way, choose.cpp).
  bool padded_gives_way = false;
  // Transposes of 4-byte elements that the table gives the tile kernel one element per access
  // (4-byte vectors) run lean where gather's reads would be scattered, else gather
  // (element_tiles_give_way, choose.cpp).
  bool element_tiles_give_way = false;
  // Transposes of elements of up to 4 bytes that the table gives ATen's copy run gather where
  // the lanes of its loads share 32-byte sectors (gather_takes_shared_sectors, choose.cpp).
  bool shared_sector_gather = false;
  // Transposes of batches of small matrices, each whole and in order on both sides, run the
  // gather kernel (gather_takes_dense_batches, choose.cpp; every sm_90 GPU, device_rules).
  bool dense_batch_gather = false;
  // Broadcast picks of ATen's copy of elements of up to 4 bytes run the gather kernel, whatever
  // the input's footprint, on the copy route or where the input's neighbours lie near in the
  // output (near_broadcast, choose.cpp).
  bool near_broadcast_gather = false;
};

// `arch` and the rules of the GPU model named `name` (cudaDeviceProp::name, as
// torch.cuda.get_device_name gives it; "" for the rules measured on the H100, the default).
Device device_rules(int arch, bool tma, std::string const& name);

// The plan's shape class: the route, the element size, the byte lengths of the output's and
// the input's innermost runs (bucketed), the widest vector the tile kernel could use, how full
// its tiles would be, how the interleave kernel would run it, and whether the input is broadcast.
std::string class_key(Plan const& plan);

// The best kernel for `plan` on `device`; with `explain`, also its class key and the reason.
Choice choose(Plan const& plan, Device const& device, bool explain = false);

// `kernel` for `plan`, or std::nullopt with the reason in *why_not when it cannot run it. The
// seed ladder and _permute_with take this: the kernel runs any shape it can. `tile_shape`: the
// Tile, Split, Lean or Words kernel in that tile shape instead of the chooser's
// (bench/tile_shapes.py measures the Tile kernel's).
std::optional<Choice> force(Plan const& plan, Kernel kernel, Device const& device, std::string* why_not,
                            std::optional<TileShape> tile_shape = std::nullopt);

// Whether rows or gather can run `c` with their blocks in the neighbours-together order
// (BlockOrder, cuda/index_walk.cuh): runs along N, and a dim that holds the input's next run
// (the launcher may still fall back to the plain order). The autotuner times both orders.
bool has_together_order(Choice const& c);

// Whether `kernel` is one of candidate_names().
bool is_candidate(Kernel kernel);

// Whether the chooser offers `forced` (what force() gave): a candidate kernel, less the shapes
// where the chooser never takes it though it runs them (the padded seed kernel on tiles less
// than a quarter full, the interleave kernel one element per access on a small grid); the
// reason in *why_not when not. choose() takes only offered choices; explain(kernel=...) says.
bool offered(Choice const& forced, std::string* why_not);
std::optional<Kernel> kernel_from_name(std::string const& name);

// A kernel as _permute_with and explain(kernel=...) name it: a kernel's name, alone or with one
// form after a slash -- a tile shape for the tile, split, lean and words kernels ("split/tall";
// named_forms lists the shapes each takes), "small" for box (boxes small enough that a block
// keeps every vector's position across boxes), "together" for rows and gather (blocks in the
// neighbours-together order), "lanes" for fill (its lanes form, where each lane loads its own
// vector's rows: the only form for rows of a vector or less, named for longer rows too).
// std::nullopt for any other name.
enum class BoxForm { Default, Small };
struct NamedKernel {
  Kernel kernel;
  std::optional<TileShape> shape;
  BoxForm box = BoxForm::Default;
  bool together = false, lanes = false;
};
std::optional<NamedKernel> parse_kernel_name(std::string const& name);

// force() for a named kernel in its form (a tile shape, a box form, the lanes form; the
// together order where the plan has one: has_together_order), or std::nullopt with the reason
// in *why_not. explain and _permute_with both take it, so what explain names is what runs.
std::optional<Choice> force_named(Plan const& plan, NamedKernel const& named, Device const& device,
                                  std::string* why_not);

// The forms parse_kernel_name takes after a slash, for error messages.
char const* named_forms();

}  // namespace cute_transpose
