#include "models/tokenizer/chat_template.h"

#include <initializer_list>
#include <string_view>


namespace kiln::tokenizer {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

std::string_view StripLeadingNewlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}

std::string_view StripTrailingNewlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

std::string_view StripNewlines(std::string_view s) {
  return StripTrailingNewlines(StripLeadingNewlines(s));
}

// An assistant message split into reasoning and visible content (§8.2 rule 4):
// if the content has "</think>", the reasoning is the text before the first
// "</think>" (after the last "<think>" in it), newlines trimmed; the visible
// content is the text after the last "</think>" without leading newlines.
struct AssistantParts {
  std::string_view reasoning;
  std::string_view content;
};

AssistantParts SplitReasoning(std::string_view content) {
  const size_t first_close = content.find(kThinkClose);
  if (first_close == std::string_view::npos) return {"", content};
  std::string_view before = StripTrailingNewlines(content.substr(0, first_close));
  if (const size_t open = before.rfind(kThinkOpen); open != std::string_view::npos) {
    before.remove_prefix(open + kThinkOpen.size());
  }
  const size_t last_close = content.rfind(kThinkClose);
  return {StripLeadingNewlines(before),
          StripLeadingNewlines(content.substr(last_close + kThinkClose.size()))};
}

// A user message that only carries a tool result does not count as a query.
bool IsToolResponse(std::string_view content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

// Index of the last real user query (§8.2 rule 2); the last index if none.
size_t LastQueryIndex(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role == "user" && !IsToolResponse(messages[i].content)) return i;
  }
  return messages.size() - 1;
}

// Appends every part to `out` (std::string_view throughout: Abseil's
// string_view is a distinct type in this toolchain).
void Append(std::string& out, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) out.append(p);
}

void AppendTurn(std::string_view role, std::string_view content, std::string& out) {
  Append(out, {"<|im_start|>", role, "\n", content, "<|im_end|>\n"});
}

}  // namespace

std::string RenderChat(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  std::string out;
  if (!messages.empty()) {
    // Rule 1 (no tools): a leading system message opens the prompt.
    if (messages.front().role == "system") AppendTurn("system", messages.front().content, out);
    const size_t last_query = LastQueryIndex(messages);

    for (size_t i = 0; i < messages.size(); ++i) {
      const ChatMessage& m = messages[i];
      const bool last = i + 1 == messages.size();
      if (m.role == "user" || (m.role == "system" && i > 0)) {
        // Rule 3: plain ChatML.
        AppendTurn(m.role, m.content, out);
      } else if (m.role == "assistant") {
        // Rule 4: reasoning survives only after the last query.
        const AssistantParts parts = SplitReasoning(m.content);
        if (i > last_query && (last || !parts.reasoning.empty())) {
          Append(out, {"<|im_start|>assistant\n", kThinkOpen, "\n", StripNewlines(parts.reasoning),
                       "\n", kThinkClose, "\n\n", StripLeadingNewlines(parts.content),
                       "<|im_end|>\n"});
        } else {
          AppendTurn("assistant", parts.content, out);
        }
      } else if (m.role == "tool") {
        // Rule 5: consecutive tool results form one user turn.
        if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
        Append(out, {"\n<tool_response>\n", m.content, "\n</tool_response>"});
        if (last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
      }
      // The template renders no other roles.
    }
  }

  // Rule 6: the generation prompt, with an empty closed think block when
  // thinking is disabled.
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!options.enable_thinking) Append(out, {kThinkOpen, "\n\n", kThinkClose, "\n\n"});
  }
  return out;
}

}  // namespace kiln::tokenizer
