// ChatML rendering with Qwen3's thinking rules (spec/tokenizer.md §8).
#ifndef KILN_MODELS_TOKENIZER_CHAT_TEMPLATE_H_
#define KILN_MODELS_TOKENIZER_CHAT_TEMPLATE_H_

#include <string>
#include <vector>

namespace kiln::tokenizer {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool"; others render nothing
  std::string content;  // assistant content may carry <think>...</think>
};

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = true;  // false appends "<think>\n\n</think>\n\n"
};

// Renders the conversation as Qwen3's template does without tools (§8.2):
// a first "system" message leads, assistant reasoning is kept only for
// messages after the last user query (earlier turns drop it), consecutive
// "tool" results become one user turn of <tool_response> blocks. Tokenize the
// result with parse_special = true.
std::string RenderChat(const std::vector<ChatMessage>& messages, const ChatOptions& options);

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_CHAT_TEMPLATE_H_
