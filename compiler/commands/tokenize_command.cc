// kilnc tokenize: prints the token ids of a text under a model's vocabulary.
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/commands/command_line.h"
#include "compiler/commands/commands.h"
#include "support/json_writer.h"

ABSL_FLAG(bool, parse_special, false,
          "turn special-token texts such as <|im_start|> into their ids");

namespace kiln::compiler {

constexpr char kTokenizeUsage[] = R"(usage: kilnc tokenize -m X.gguf [--json] [--parse-special] "text"

Prints the token ids of the text, space-separated on one line (the text's
own: no BOS, which kiln run and kilnc reference put first where the
vocabulary says add_bos).
  --json            {"ids": [...], "pieces": [...]} instead
  --parse-special   special-token texts (<|im_start|>, ...) become their ids
)";

int RunTokenize(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseArgs("tokenize", args, kTokenizeUsage, {"model", "json", "parse_special"});
  if (parsed.exit_code) return *parsed.exit_code;
  std::vector<std::string> pos = parsed.positional;
  if (absl::GetFlag(FLAGS_model).empty() && pos.size() == 1)
    return Fail("tokenize", UsageError("give the model and the text (kilnc tokenize -m X.gguf \"text\")"));
  if (absl::GetFlag(FLAGS_model).empty() && !pos.empty()) pos.erase(pos.begin());  // model given positionally
  auto file = OpenModel(parsed.positional);
  if (!file.ok()) return Fail("tokenize", file.status());
  if (pos.size() != 1)
    return Fail("tokenize", UsageError("expected exactly one text argument"));
  auto tok = LoadTokenizer(**file);
  if (!tok.ok()) return Fail("tokenize", tok.status());
  std::vector<int32_t> ids = (*tok)->Encode(pos[0], absl::GetFlag(FLAGS_parse_special));
  if (absl::GetFlag(FLAGS_json)) {
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.push_back(JsonQuote((*tok)->TokenBytes(id, true)));
    std::printf("{\"ids\": [%s], \"pieces\": [%s]}\n", absl::StrJoin(ids, ", ").c_str(),
                absl::StrJoin(pieces, ", ").c_str());
  } else {
    std::printf("%s\n", absl::StrJoin(ids, " ").c_str());
  }
  return 0;
}

}  // namespace kiln::compiler
