// The Box kernel's plans (cuda/box_transpose.cuh): for a permute, the box -- up to six of its
// innermost dims on either side, some cut into chunks -- that each block stages through shared
// memory, the outer dims that count the boxes, and the vectors each side moves. The chooser
// (choose.cpp) decides whether the Box kernel runs; these decide how.
#pragma once

#include <optional>
#include <string>

#include "plan.h"

namespace cute_transpose {

// The box of about 16 KiB whose runs reach 128 bytes on each side where the dims allow
// (the Box kernel's default form). std::nullopt, with a reason in *why, where none fits.
std::optional<BoxPlan> plan_box(Plan const& plan, std::string* why);

// The box/small form: the largest box in which the kernel keeps every vector's position across
// boxes (BoxPlan::keeps_positions). std::nullopt, with a reason in *why, where none is.
std::optional<BoxPlan> plan_small_box(Plan const& plan, std::string* why);

}  // namespace cute_transpose
