// Lowers the `load` function: layout ops (q8_0_split, concat_rows,
// interleave_rows, store) become pack_q8_0 / copy_rows launches, results
// written straight into their destination state when a store is their only
// use, else into a scratch buffer reused between stores. Also copies every
// weight prefill/decode read directly out of its GGUF buffer (those die
// after load).
#ifndef KILN_COMPILER_LOWER_LOWER_LOAD_H_
#define KILN_COMPILER_LOWER_LOWER_LOAD_H_

#include "absl/status/status.h"
#include "compiler/lower/lowering_context.h"

namespace kiln::compiler {

absl::Status LowerLoad(const ir::Function& load, LoweringContext& ctx, runtime::Plan& plan);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_LOWER_LOWER_LOAD_H_
