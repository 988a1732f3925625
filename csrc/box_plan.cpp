// The Box kernel's plans (box_plan.h): which dims of a permute form the box, the outer dims
// that count boxes, shared memory, and the vectors each side moves.
#include "box_plan.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

namespace cute_transpose {
namespace {

// Run lengths of 128 bytes on each side fill a warp's memory transactions; boxes of 16 KiB let 8
// blocks of 256 threads share an SM; 40 KiB is what a block can take without opting in to more.
constexpr int64_t kBoxRunBytes = 128, kBoxBytes = 16384, kBoxMaxBytes = 40960;

// The largest vector (in elements: 16 or 4 bytes, else 1 element) with which one side of the
// box can move: the side's innermost box dim is unit-stride, vectors never straddle the side's
// contiguous run, and every other offset on the side is a whole number of vectors.
int box_vector(BoxPlan const& b, int const* order, int64_t const* global, int64_t const* outer, void const* base) {
  int64_t const E = b.element_size;
  // The contiguous run: box dims whose strides chain, all but the last whole.
  int const run = b.run_dims(order, global);
  if (run == 0) return 1;
  int const j = run - 1;
  int64_t prefix = 1;
  for (int i = 0; i < j; ++i) prefix *= b.tile[order[i]];
  // The kernel is compiled for vectors of 16 bytes, 4 bytes and single elements.
  for (int64_t V : {16 / E, 4 / E}) {
    if (V <= 1) continue;
    bool ok = divisible(prefix * b.tile[order[j]], V) && divisible(prefix * b.size[order[j]], V) && aligned(base, V * E);
    for (int i = j + 1; i < b.rank; ++i) ok = ok && divisible(global[order[i]], V);
    for (int k = 0; k < b.outer_rank; ++k) ok = ok && divisible(outer[k], V);
    if (ok) return static_cast<int>(V);
  }
  return 1;
}

// The box of the dims with want[i] > 0 (whole when want[i] == size, else chunks of want[i]):
// its dims, the outer dims, shared memory, and each side's vectors. std::nullopt with an empty
// *why when it needs more than kBoxMaxBytes of shared memory; with a reason when it cannot be.
std::optional<BoxPlan> lay_out_box(Plan const& plan, std::vector<int64_t> const& want, std::string* why) {
  int const r = plan.rank;
  int64_t const E = plan.element_size;
  Dim const* d = plan.dims;
  why->clear();
  BoxPlan b;
  b.src = plan.src;
  b.dst = plan.dst;
  b.element_size = plan.element_size;
  std::vector<int> box_of(r, -1);
  for (int i = 0; i < r; ++i) {  // box dims in the output's order
    if (want[i] == 0) continue;
    if (b.rank == BoxPlan::kMaxBox) return *why = "more than 6 small dims in the box", std::nullopt;
    box_of[i] = b.rank;
    b.size[b.rank] = d[i].size;
    b.tile[b.rank] = want[i];
    b.in[b.rank] = d[i].in;
    b.out[b.rank] = d[i].out;
    b.volume *= want[i];
    ++b.rank;
  }
  for (int k = 0; k < b.rank; ++k) b.in_order[k] = b.out_order[k] = k;
  std::stable_sort(b.in_order, b.in_order + b.rank, [&](int x, int y) {
    return (b.in[x] == 0 ? INT64_MAX : b.in[x]) < (b.in[y] == 0 ? INT64_MAX : b.in[y]);
  });
  std::stable_sort(b.out_order, b.out_order + b.rank, [&](int x, int y) { return b.out[x] < b.out[y]; });

  // The outer dims: the others in the output's order, then the chunk counts of chunked dims.
  for (int i = 0; i < r; ++i) {
    if (box_of[i] >= 0) continue;
    b.outer_size[b.outer_rank] = d[i].size;
    b.outer_in[b.outer_rank] = d[i].in;
    b.outer_out[b.outer_rank] = d[i].out;
    b.chunk_of[b.outer_rank++] = -1;
  }
  for (int k = 0; k < b.rank; ++k) {
    if (b.tile[k] == b.size[k]) continue;
    b.outer_size[b.outer_rank] = (b.size[k] + b.tile[k] - 1) / b.tile[k];
    b.outer_in[b.outer_rank] = b.tile[k] * b.in[k];
    b.outer_out[b.outer_rank] = b.tile[k] * b.out[k];
    b.chunk_of[b.outer_rank++] = k;
  }
  for (int k = 0; k < b.outer_rank; ++k) b.boxes *= b.outer_size[k];

  // Shared memory in the input's order. The output side walks it across the input's contiguous
  // run; when the run is a multiple of 16 bytes, those walks would keep hitting the same few
  // banks, so a pad of one word (or element) follows each run.
  int const run = std::max(0, b.run_dims(b.in_order, b.in) - 1);  // the run's last dim
  int64_t stride = 1;
  for (int k = 0; k < b.rank; ++k) {
    b.smem[b.in_order[k]] = stride;
    stride *= b.tile[b.in_order[k]];
    if (k == run && k + 1 < b.rank && (stride * E) % 16 == 0) stride += E >= 4 ? 1 : 4 / E;
  }
  b.smem_elems = stride;
  if (b.smem_elems * E > kBoxMaxBytes) return std::nullopt;

  b.vin = box_vector(b, b.in_order, b.in, b.outer_in, b.src);
  b.vout = box_vector(b, b.out_order, b.out, b.outer_out, b.dst);
  return b;
}

// The box of about box_bytes whose runs on each side reach run_bytes, where the dims allow.
// Chunks are whole 16-byte vectors: of every chunked dim, or (edges_only) of the two dims where
// each side's run first stops.
std::optional<BoxPlan> sized_box(Plan const& plan, std::string* why, int64_t run_bytes, int64_t box_bytes,
                                 bool edges_only) {
  int const r = plan.rank;
  int64_t const E = plan.element_size;
  Dim const* d = plan.dims;
  // Each side's dims, innermost first. Expanded (stride-0) dims never join the box.
  std::vector<int> out_side, in_side;
  for (int i = r - 1; i >= 0; --i) out_side.push_back(i);
  for (int i = 0; i < r; ++i)
    if (d[i].in != 0) in_side.push_back(i);
  std::stable_sort(in_side.begin(), in_side.end(), [&](int a, int b) { return d[a].in < d[b].in; });

  // Take each side's innermost dims until its run reaches run_bytes; the last one taken is
  // chunked (its boundary).
  std::vector<int64_t> want(r, 0);
  auto take = [&](std::vector<int> const& side) {
    int64_t const elems = (run_bytes + E - 1) / E;
    int64_t cum = 1;
    for (int i : side) {
      if (cum >= elems) return -1;
      int64_t const need = (elems + cum - 1) / cum;
      if (need < d[i].size) {
        want[i] = std::max(want[i], need);
        return i;
      }
      want[i] = d[i].size;
      cum *= d[i].size;
    }
    return -1;
  };
  int const out_edge = take(out_side), in_edge = take(in_side);
  auto volume = [&] {
    int64_t v = 1;
    for (int i = 0; i < r; ++i) v *= std::max<int64_t>(want[i], 1);
    return v;
  };
  // Grow towards box_bytes: both boundaries in turn, then further dims of the output side and
  // the input side (each whole dim taken amortises a box's fixed cost over more bytes).
  std::vector<int> grow;
  for (int i : {out_edge, in_edge})
    if (i >= 0) grow.push_back(i);
  for (auto const* side : {&out_side, &in_side})
    for (int i : *side)
      if (want[i] == 0) grow.push_back(i);
  for (size_t g = 0; volume() * E < box_bytes && !grow.empty();) {
    int const i = grow[g % grow.size()];
    if (want[i] >= d[i].size) {
      grow.erase(grow.begin() + g % grow.size());
      continue;
    }
    int64_t const v = volume();
    if (want[i] == 0 && v * E * 2 > box_bytes) break;  // a new dim would at least double the box
    want[i] = std::min(d[i].size, std::max<int64_t>(want[i], 1) * 2);
    ++g;
  }
  // Chunks in whole 16-byte vectors keep the sides' vectors whole.
  int64_t const step = std::max<int64_t>(1, 16 / E);
  for (int i = 0; i < r; ++i)
    if (want[i] > 0 && want[i] < d[i].size && (!edges_only || i == out_edge || i == in_edge))
      want[i] = std::min(d[i].size, (want[i] + step - 1) / step * step);
  // Lay the box out; while it is over kBoxMaxBytes, halve its largest dim and try again.
  for (;;) {
    if (auto b = lay_out_box(plan, want, why)) return b;
    if (!why->empty()) return std::nullopt;
    int big = -1;
    for (int i = 0; i < r; ++i)
      if (want[i] > 1 && (big < 0 || want[i] > want[big])) big = i;
    if (big < 0) return *why = "the box does not fit in shared memory", std::nullopt;
    want[big] = std::max<int64_t>(1, want[big] / 2 / step * step);
  }
}

}  // namespace

std::optional<BoxPlan> plan_box(Plan const& plan, std::string* why) {
  return sized_box(plan, why, kBoxRunBytes, kBoxBytes, /*edges_only=*/false);
}

// The box/small form: the largest box, halving from kBoxBytes down to kBoxSmallestBytes, in
// which the kernel keeps every vector's position across boxes (BoxPlan::keeps_positions), with
// runs of up to the square root of its bytes on each side, chunks rounded to whole 16-byte
// vectors only where a side's run stops, and single-element output vectors where wider ones
// would wrap the output's innermost box dim. Against the default plan, it trades larger boxes
// and longer runs for the divisions that plan's boxes of over 1024 vectors a side pay per
// vector and box dim.
constexpr int64_t kBoxSmallestBytes = 256;

std::optional<BoxPlan> plan_small_box(Plan const& plan, std::string* why) {
  for (int64_t bytes = kBoxBytes; bytes >= kBoxSmallestBytes; bytes /= 2) {
    int64_t run = kBoxRunBytes;
    while (run * run > bytes) run /= 2;
    auto b = sized_box(plan, why, run, bytes, /*edges_only=*/true);
    if (!b) return b;
    if (b->tile[b->out_order[0]] % b->vout != 0) b->vout = 1;
    if (b->keeps_positions()) return b;
  }
  *why = "no box of " + std::to_string(kBoxSmallestBytes) + " bytes or more has at most " +
         std::to_string(BoxPlan::kKeptVectors) + " vectors a side";
  return std::nullopt;
}

}  // namespace cute_transpose
