// RenderChat against the rendered examples of spec §8.2 and one case per
// thinking rule.
#include "models/tokenizer/chat_template.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::tokenizer {
namespace {

using Messages = std::vector<ChatMessage>;

ChatOptions Options(bool add_generation_prompt, bool enable_thinking) {
  ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  o.enable_thinking = enable_thinking;
  return o;
}

// §8.2 rendered example 1.
TEST(RenderChatTest, SpecSystemAndUserThinkingOn) {
  const Messages m = {{"system", "You are helpful."}, {"user", "Hi"}};
  EXPECT_EQ(RenderChat(m, Options(true, true)),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

// §8.2 rendered example 2.
TEST(RenderChatTest, SpecSystemAndUserThinkingOff) {
  const Messages m = {{"system", "You are helpful."}, {"user", "Hi"}};
  EXPECT_EQ(RenderChat(m, Options(true, false)),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

// §8.2 rendered example 3: reasoning of an earlier turn is dropped.
TEST(RenderChatTest, SpecHistoryDropsEarlierReasoning) {
  const Messages m = {{"user", "Hi"},
                      {"assistant", "<think>\nThe user greets.\n</think>\n\nHello!"},
                      {"user", "2+2?"}};
  EXPECT_EQ(RenderChat(m, Options(true, true)),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(RenderChatTest, LastAssistantAfterQueryKeepsItsThinkBlock) {
  const Messages m = {{"user", "Hi"},
                      {"assistant", "<think>\n\nThe user greets.\n\n</think>\n\nHello!"}};
  EXPECT_EQ(RenderChat(m, Options(false, true)),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nThe user greets.\n</think>\n\nHello!<|im_end|>\n");
  // The last assistant gets a (possibly empty) think block even without one.
  const Messages plain = {{"user", "Hi"}, {"assistant", "Hello!"}};
  EXPECT_EQ(RenderChat(plain, Options(false, true)),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n");
}

TEST(RenderChatTest, ReasoningSplitsAtFirstAndLastCloseTag) {
  // Reasoning: before the first </think>, after the last <think> there.
  // Content: after the last </think>, leading newlines stripped.
  const Messages m = {{"user", "q"},
                      {"assistant", "<think>a<think>\nb\n</think>mid</think>\n\nend"}};
  EXPECT_EQ(RenderChat(m, Options(false, true)),
            "<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nb\n</think>\n\nend<|im_end|>\n");
}

TEST(RenderChatTest, AgenticTurnKeepsNonEmptyReasoningAndGroupsToolResults) {
  const Messages m = {{"user", "weather?"},
                      {"assistant", "<think>\nneed tool\n</think>\n\ncalling"},
                      {"tool", "sunny"},
                      {"tool", "22C"},
                      {"assistant", "no reasoning here"},
                      {"user", "<tool_response>\nlate\n</tool_response>"},
                      {"assistant", "done"}};
  EXPECT_EQ(RenderChat(m, Options(false, true)),
            "<|im_start|>user\nweather?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nneed tool\n</think>\n\ncalling<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>"
            "\n<tool_response>\n22C\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\nno reasoning here<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nlate\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\ndone<|im_end|>\n");
}

TEST(RenderChatTest, OnlyTheFirstSystemMessageLeads) {
  const Messages m = {{"user", "a"}, {"system", "be brief"}, {"narrator", "ignored"}};
  EXPECT_EQ(RenderChat(m, Options(false, true)),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>system\nbe brief<|im_end|>\n");
}

TEST(RenderChatTest, NoUserQueryMeansNoThinkBlocks) {
  const Messages m = {{"system", "s"}, {"assistant", "<think>r</think>x"}};
  EXPECT_EQ(RenderChat(m, Options(false, true)),
            "<|im_start|>system\ns<|im_end|>\n<|im_start|>assistant\nx<|im_end|>\n");
}

TEST(RenderChatTest, DisabledThinkingNeedsTheGenerationPrompt) {
  EXPECT_EQ(RenderChat({{"user", "Hi"}}, Options(false, false)), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(RenderChat({}, Options(true, false)), "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(RenderChat({}, Options(false, true)), "");
}

}  // namespace
}  // namespace kiln::tokenizer
