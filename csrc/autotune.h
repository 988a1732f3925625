// Opt-in autotuning per shape (cute_transpose.autotune): the first `transpose` or `permute` of a
// shape times every candidate kernel that can run it and remembers the fastest (the table's pick
// where it is within 2%: cuda_autotune.cpp); later calls of that shape run it without timing.
// The tuning table (choose.h) ranks kernels per shape class; the shapes of one class differ, so
// the class's best is not every shape's (on the H100 sweep, another kernel ran 1.1-3.4 times as
// fast as the class's pick on 11 of 40 probed cells). Off by default: the first call of each
// shape blocks the host while it times (docs/PERFORMANCE.md has the cost).
//
// autotune.cpp keeps the setting and the remembered picks (built always, so the Python API
// works on every build); cuda_autotune.cpp times the candidates.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "choose.h"

namespace cute_transpose {

// The process-wide setting: CUTE_TRANSPOSE_AUTOTUNE=1 in the environment turns it on at start;
// set_autotune returns the setting it replaced.
bool autotune_enabled();
bool set_autotune(bool on);

// A remembered pick: the kernel (rows and gather in either block order), and what the timing
// found (for explain and the cache listing).
struct AutotunePick {
  Kernel kernel = Kernel::Aten;
  bool together = false;  // Choice::together
  std::string timings;    // "tile 101.2 us, rows/together 103.0 us, ..." (median launches), fastest first
};

// The name that forces a Choice's kernel (_permute_with): "rows/together" and
// "gather/together" where its blocks read neighbouring runs together.
std::string forced_name(Kernel kernel, bool together);

// Picks are remembered per device and per plan: the merged dims, the element size and the
// alignment of both tensors' first bytes (which decide which kernels can run).
std::string autotune_key(Plan const& plan, int device_index);
void remember(std::string const& key, AutotunePick const& pick);

// The remembered pick for `plan` on device `device_index` as a Choice (and its timings), or
// std::nullopt where none is remembered. explain() and autotune() both look picks up here.
std::optional<Choice> remembered(Plan const& plan, Device const& device, int device_index,
                                 std::string* timings = nullptr);

// The pick for `plan` on the current CUDA device: the remembered one, else the fastest of the
// candidates, timed now with `run` (which launches a Choice into the plan's output on the
// current stream). On a stream being captured into a CUDA graph nothing can be timed: the
// chooser's pick then, and nothing remembered. (cuda_autotune.cpp)
Choice autotune(Plan const& plan, Device const& device, std::function<void(Choice const&)> const& run);

}  // namespace cute_transpose
