// Pairs independent neighbours of the decode plan so that one runs beside
// the other (runtime::Launch.beside_next): today the separate q/k/v
// projections of a layer whose V has another weight type than Q and K (a
// Q4_K_M layer with a Q6_K V, which pack-weights cannot concatenate) that
// are not joined into one launch (join_matvecs.h: off, or schedules one
// launch cannot run). Both read the layer's input and write disjoint rows
// of the qkv scratch, so neither depends on the other; in sequence each
// pays a kernel boundary and its own ramp for a few MB of weights.
#ifndef KILN_COMPILER_LOWER_BESIDE_LAUNCHES_H_
#define KILN_COMPILER_LOWER_BESIDE_LAUNCHES_H_

#include <vector>

#include "absl/status/status.h"
#include "runtime/manifest.pb.h"

namespace kiln::compiler {

// `parts`: indices into plan.launches of the decode's q/k/v projection
// matvecs (each writes only its rows of the qkv scratch and reads no
// qkv scratch). Each two adjacent ones become a pair: the one reading fewer
// weight bytes (Kernel.bytes_read) goes first, beside the next. The launch
// after the pair follows the main stream's launch programmatically and
// the side one through the join (a full dependency), which costs least when
// the side one is the shorter. Errors: Internal for an index outside the
// plan.
absl::Status PairBesideLaunches(const runtime::Manifest& manifest, runtime::Plan& plan, std::vector<int> parts);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_LOWER_BESIDE_LAUNCHES_H_
