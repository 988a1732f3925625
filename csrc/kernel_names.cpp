// The names of the kernels and their forms (cute_transpose.KERNELS, the tuning tables' values,
// what _permute_with and explain(kernel=...) take), and a Choice's configuration in words
// (explain's "config"). Which kernel runs a plan, and why, is choose.cpp's.
#include "choose.h"

#include <sstream>

namespace cute_transpose {

std::vector<std::string> const& candidate_names() {
  static std::vector<std::string> const names = {"rows", "tile", "split", "interleave", "box", "tma", "pipelined", "realign", "gather", "lean", "words", "fill", "lanes", "stage", "padded", "aten"};
  return names;
}

char const* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::Aten: return "aten";
    case Kernel::Rows: return "rows";
    case Kernel::Tile: return "tile";
    case Kernel::Interleave: return "interleave";
    case Kernel::Box: return "box";
    case Kernel::Tma: return "tma";
    case Kernel::Pipelined: return "pipelined";
    case Kernel::Split: return "split";
    case Kernel::Realign: return "realign";
    case Kernel::Gather: return "gather";
    case Kernel::Lean: return "lean";
    case Kernel::Words: return "words";
    case Kernel::Fill: return "fill";
    case Kernel::Lanes: return "lanes";
    case Kernel::Stage: return "stage";
    case Kernel::NaiveCoalescedRead: return "naive_coalesced_read";
    case Kernel::NaiveCoalescedWrite: return "naive_coalesced_write";
    case Kernel::BankConflictRead: return "bank_conflict_read";
    case Kernel::BankConflictWrite: return "bank_conflict_write";
    case Kernel::Padded: return "padded";
    case Kernel::Swizzled: return "swizzled";
    case Kernel::SeedCopy: return "copy";
  }
  return "?";
}

bool is_candidate(Kernel k) {
  return contains(candidate_names(), kernel_name(k));
}

std::optional<Kernel> kernel_from_name(std::string const& name) {
  for (int k = 0; k <= int(Kernel::SeedCopy); ++k)
    if (name == kernel_name(Kernel(k))) return Kernel(k);
  return std::nullopt;
}

std::optional<NamedKernel> parse_kernel_name(std::string const& name) {
  auto const slash = name.find('/');
  auto const kernel = kernel_from_name(name.substr(0, slash));
  if (!kernel) return std::nullopt;
  NamedKernel named{*kernel, std::nullopt};
  if (slash == std::string::npos) return named;
  std::string const form = name.substr(slash + 1);
  Kernel const k = *kernel;
  if (k == Kernel::Tile || k == Kernel::Lean || k == Kernel::Split || k == Kernel::Words)
    named.shape = tile_shape_from_name(form);
  if (k == Kernel::Box && form == "small") named.box = BoxForm::Small;
  named.together = form == "together" && (k == Kernel::Rows || k == Kernel::Gather);
  named.lanes = form == "lanes" && k == Kernel::Fill;
  return named.shape || named.box != BoxForm::Default || named.together || named.lanes
             ? std::optional<NamedKernel>(named)
             : std::nullopt;
}

char const* named_forms() {
  return "tile/<square|tall|wide|narrow|short|large|column|small>, split/<square|tall|wide|narrow|short>, "
         "lean/<square|tall|wide|large>, words/<square|narrow>, box/small, rows/together, gather/together and "
         "fill/lanes";
}

char const* tile_shape_name(TileShape s) {
  switch (s) {
    case TileShape::Tall: return "tall";
    case TileShape::Wide: return "wide";
    case TileShape::Narrow: return "narrow";
    case TileShape::Short: return "short";
    case TileShape::Large: return "large";
    case TileShape::Column: return "column";
    case TileShape::Small: return "small";
    default: return "square";
  }
}

std::optional<TileShape> tile_shape_from_name(std::string const& name) {
  for (TileShape s : kTileShapes)
    if (name == tile_shape_name(s)) return s;
  for (TileShape s : {TileShape::Large, TileShape::Column, TileShape::Small})
    if (name == tile_shape_name(s)) return s;
  return std::nullopt;
}

// How config() says that rows or gather run in the neighbours-together order.
constexpr char kTogetherWords[] = ", neighbouring runs read together";
// How config() says that a kernel's loads keep the input's lines in the caches (choose.cpp,
// keeps_inputs).
constexpr char kKeepWords[] = ", input lines kept in L2";

std::string Choice::config() const {
  std::ostringstream o;
  switch (kernel) {
    case Kernel::Tile: {
      TileDims const t = tile_dims(problem->element_size, width, shape);
      o << t.bm << "x" << t.bn << " " << tile_shape_name(shape) << " tile, " << t.threads << " threads, "
        << width << "-byte vectors" << (problem->keep_inputs ? kKeepWords : "")
        << (problem->m_first ? ", m-tiles first" : "");
      break;
    }
    case Kernel::Rows:
      o << width << "-byte vectors";
      if (width == 16 && threads && threads < Device{}.rows_threads) o << ", blocks of " << threads << " threads";
      if (together) o << kTogetherWords;
      break;
    case Kernel::Interleave:
      o << (pack ? "planes -> " : "") << channels << "-interleaved" << (pack ? "" : " -> planes") << ", "
        << (interleave_runs_aligned_vectors(*problem, width, pack) ? "16-byte vectors"
            : width > problem->element_size                        ? "16-byte vectors, realigned"
                                                                   : "one element per access, staged through shared memory")
        << (problem->keep_inputs ? kKeepWords : "");
      break;
    case Kernel::Box:
      o << "box (";
      for (int k = 0; k < box->rank; ++k) o << (k ? "x" : "") << box->tile[k];
      o << ") of " << box->rank << " dims, " << box->boxes << " boxes, vectors of " << box->vin * box->element_size
        << " bytes in, " << box->vout * box->element_size << " bytes out";
      if (box->keeps_positions()) o << ", each vector's position kept across boxes";
      break;
    case Kernel::Tma: o << "TMA store, " << width << "-byte loads" << (problem->keep_inputs ? kKeepWords : ""); break;
    case Kernel::Pipelined:
      o << "TMA loads into a ring of shared-memory stages, "
        << (problem->element_size == 1 ? "16-byte vector stores" : "TMA stores") << (problem->keep_inputs ? kKeepWords : "");
      break;
    case Kernel::Split:
      o << tile_shape_name(shape) << " tiles of (" << problem->rows << " x " << split->m.size << ") by ("
        << problem->cols << " x " << split->n.size << "), " << width << "-byte vectors"
        << (problem->keep_inputs ? kKeepWords : "");
      break;
    case Kernel::Padded:
      o << "the padded seed kernel, one element per access" << (problem->m_first ? ", m-tiles first" : "");
      break;
    case Kernel::Realign: {
      TileDims const t = realign_tile(problem->element_size);
      o << t.bm << "x" << t.bn << " tile, aligned 16-byte vectors over rows off the 16-byte grid"
        << (output_rows_aligned(*problem) ? ", output rows aligned: register transposes" : "")
        << (problem->m_first ? ", m-tiles first" : "");
      break;
    }
    case Kernel::Gather:
      o << width << "-byte stores, every element loaded on its own" << (together ? kTogetherWords : "");
      break;
    case Kernel::Lean: {
      TileDims const t = lean_tile(problem->element_size, shape);
      o << t.bm << "x" << t.bn << (shape == TileShape::Square ? "" : std::string(" ") + tile_shape_name(shape))
        << " tile, " << t.threads << " threads, one tile per block, " << width << "-byte loads, " << out_width
        << "-byte stores" << (problem->keep_inputs ? kKeepWords : "") << (problem->m_first ? ", m-tiles first" : "");
      break;
    }
    case Kernel::Words: {
      TileDims const t = words_tile(problem->element_size, shape);
      o << t.bm << "x" << t.bn << (shape == TileShape::Square ? "" : std::string(" ") + tile_shape_name(shape))
        << " tile, " << t.threads << " threads, one element per global access, 4-byte words in shared memory"
        << (problem->m_first ? ", m-tiles first" : "");
      break;
    }
    case Kernel::Fill:
      o << "16-byte stores, each output row's one input element loaded once per "
        << (lanes ? "lane, by the lanes whose vectors it reaches" : "warp");
      break;
    case Kernel::Lanes:
      o << "one element per access, lanes on consecutive output elements, two loads a thread before its stores";
      break;
    case Kernel::Stage:
      o << (stage_planes_out(*problem) ? std::to_string(problem->rows) + " planes out" : std::to_string(problem->cols) + " interleaved out")
        << ", 128 pixels a block staged through shared memory, one element per access";
      break;
    case Kernel::Aten: o << "torch's own strided copy"; break;
    default: break;
  }
  return o.str();
}

}  // namespace cute_transpose
