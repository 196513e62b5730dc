#include "runtime/sampler.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Sampler Make(float temperature, int top_k = 0, float top_p = 1.0f, uint64_t seed = 0) {
  absl::StatusOr<Sampler> s = Sampler::Create({temperature, top_k, top_p, seed});
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

std::vector<int32_t> Ids(const std::vector<Candidate>& c) {
  std::vector<int32_t> ids;
  for (const Candidate& x : c) ids.push_back(x.id);
  return ids;
}

std::vector<float> LogOf(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

TEST(SamplerTest, ArgmaxTakesTheLowestIdOnTiesAndNeverNaN) {
  EXPECT_EQ(Argmax(std::vector<float>{1, 3, 2}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{4, 1, 4}), 0);
  EXPECT_EQ(Argmax(std::vector<float>{kNaN, -5, -7}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{-kInf, kNaN, -kInf}), 0);
}

TEST(SamplerTest, TemperatureZeroIsGreedyWhateverTheOtherSettings) {
  Sampler s = Make(0.0f, 3, 0.5f, 7);
  EXPECT_TRUE(s.greedy());
  std::vector<float> row = {0.1f, 2.0f, 1.9f, -3.0f};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.Sample(row), 1);
  EXPECT_THAT(Ids(s.Candidates(row)), ElementsAre(1));
  EXPECT_TRUE(Make(0.8f, 1).greedy());  // top-k 1 leaves one choice
  EXPECT_FALSE(Make(0.8f, 2).greedy());
}

TEST(SamplerTest, TopKKeepsExactlyTheKLargestTiesByLowerId) {
  std::vector<float> row = {1, 5, 3, 5, 2};
  std::vector<Candidate> c = Make(1.0f, 3).Candidates(row);
  ASSERT_THAT(Ids(c), ElementsAre(1, 3, 2));
  const double z = 2 * std::exp(5.0) + std::exp(3.0);
  EXPECT_NEAR(c[0].prob, std::exp(5.0) / z, 1e-6);
  EXPECT_NEAR(c[1].prob, std::exp(5.0) / z, 1e-6);
  EXPECT_NEAR(c[2].prob, std::exp(3.0) / z, 1e-6);
  // k >= vocabulary and k <= 0 keep everything.
  EXPECT_EQ(Make(1.0f, 9).Candidates(row).size(), 5u);
  EXPECT_EQ(Make(1.0f, 0).Candidates(row).size(), 5u);
}

TEST(SamplerTest, TopPKeepsTheShortestPrefixReachingP) {
  std::vector<float> row = LogOf({0.15, 0.5, 0.05, 0.3});  // order by probability: 1, 3, 0, 2
  EXPECT_THAT(Ids(Make(1.0f, 0, 0.75f).Candidates(row)), ElementsAre(1, 3));
  EXPECT_THAT(Ids(Make(1.0f, 0, 0.81f).Candidates(row)), ElementsAre(1, 3, 0));
  EXPECT_THAT(Ids(Make(1.0f, 0, 0.4f).Candidates(row)), ElementsAre(1));  // at least one
  EXPECT_THAT(Ids(Make(1.0f, 0, 1.0f).Candidates(row)), ElementsAre(1, 3, 0, 2));
  std::vector<Candidate> c = Make(1.0f, 0, 0.75f).Candidates(row);
  EXPECT_NEAR(c[0].prob, 0.5 / 0.8, 1e-6);
  EXPECT_NEAR(c[1].prob, 0.3 / 0.8, 1e-6);
}

TEST(SamplerTest, TopKThenTopPOnTheKeptTokens) {
  // Over all tokens the top probabilities are 0.5, 0.3, ...; after top-k 2
  // they are renormalized to 0.625, 0.375, so a top-p of 0.6 or 0.62 keeps
  // one token with top-k and two without.
  std::vector<float> row = LogOf({0.15, 0.5, 0.05, 0.3});
  EXPECT_THAT(Ids(Make(1.0f, 0, 0.6f).Candidates(row)), ElementsAre(1, 3));
  EXPECT_THAT(Ids(Make(1.0f, 2, 0.6f).Candidates(row)), ElementsAre(1));
  // top-p 0.62: over all tokens 0.5 < 0.62 needs two; over top-2, 0.625 >= 0.62 needs one.
  EXPECT_THAT(Ids(Make(1.0f, 0, 0.62f).Candidates(row)), ElementsAre(1, 3));
  EXPECT_THAT(Ids(Make(1.0f, 2, 0.62f).Candidates(row)), ElementsAre(1));
}

TEST(SamplerTest, TemperatureSharpensAndFlattens) {
  std::vector<float> row = {0.0f, static_cast<float>(std::log(2.0))};
  auto probs = [&](float t) {
    std::vector<Candidate> c = Make(t).Candidates(row);
    EXPECT_EQ(c[0].id, 1);
    return std::make_pair(c[0].prob, c[1].prob);
  };
  auto [a1, b1] = probs(1.0f);
  EXPECT_NEAR(a1, 2.0 / 3, 1e-6);
  EXPECT_NEAR(b1, 1.0 / 3, 1e-6);
  auto [a05, b05] = probs(0.5f);  // weights 4 : 1
  EXPECT_NEAR(a05, 0.8, 1e-6);
  EXPECT_NEAR(b05, 0.2, 1e-6);
  auto [a2, b2] = probs(2.0f);  // weights sqrt(2) : 1
  EXPECT_NEAR(a2, std::sqrt(2.0) / (1 + std::sqrt(2.0)), 1e-6);
  EXPECT_NEAR(b2, 1 / (1 + std::sqrt(2.0)), 1e-6);
}

TEST(SamplerTest, InfiniteAndNaNLogitsAreNeverSampled) {
  Sampler s = Make(1.0f, 0, 1.0f, 3);
  std::vector<float> row = {-kInf, 0.0f, kNaN, -kInf, 0.0f};
  EXPECT_THAT(Ids(s.Candidates(row)), ElementsAre(1, 4));
  for (int i = 0; i < 1000; ++i) {
    int32_t id = s.Sample(row);
    EXPECT_TRUE(id == 1 || id == 4) << id;
  }
  std::vector<float> dead = {-kInf, kNaN};
  EXPECT_EQ(s.Sample(dead), 0);
}

TEST(SamplerTest, FrequenciesMatchTheDistribution) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  Sampler s = Make(1.0f, 0, 1.0f, 12345);
  std::vector<int> counts(4, 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) counts[s.Sample(LogOf(p))]++;
  // Each frequency's standard deviation is <= sqrt(0.25 / n) ~ 0.0011; 5 sigma.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(static_cast<double>(counts[i]) / n, p[i], 0.0056) << "token " << i;
}

TEST(SamplerTest, TopKDistributionIsRenormalized) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  Sampler s = Make(1.0f, 2, 1.0f, 99);
  std::vector<int> counts(4, 0);
  const int n = 100000;
  for (int i = 0; i < n; ++i) counts[s.Sample(LogOf(p))]++;
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(static_cast<double>(counts[2]) / n, 3.0 / 7, 0.008);
  EXPECT_NEAR(static_cast<double>(counts[3]) / n, 4.0 / 7, 0.008);
}

TEST(SamplerTest, SameSeedSameSequenceOtherSeedOtherSequence) {
  std::vector<float> row = LogOf({0.25, 0.25, 0.25, 0.25});
  auto draw = [&](uint64_t seed) {
    Sampler s = Make(1.0f, 0, 1.0f, seed);
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(s.Sample(row));
    return ids;
  };
  EXPECT_EQ(draw(5), draw(5));
  EXPECT_NE(draw(5), draw(6));
}

TEST(SamplerTest, SequenceIsPinnedAcrossPlatforms) {
  // std::mt19937_64 is fully specified by the standard and the [0, 1) draw
  // uses its top 53 bits, so this holds with every standard library.
  std::vector<float> row = LogOf({0.25, 0.25, 0.25, 0.25});
  Sampler s = Make(1.0f, 0, 1.0f, 42);
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(s.Sample(row));
  std::mt19937_64 rng(42);
  std::vector<int32_t> want;
  for (int i = 0; i < 12; ++i) want.push_back(static_cast<int32_t>((rng() >> 11) * 0x1.0p-53 * 4));
  EXPECT_EQ(ids, want);
}

TEST(SamplerTest, RejectsBadSettings) {
  EXPECT_THAT(std::string(Sampler::Create({1.0f, 0, 0.0f, 0}).status().message()), HasSubstr("--top-p"));
  EXPECT_THAT(std::string(Sampler::Create({1.0f, 0, 1.5f, 0}).status().message()), HasSubstr("--top-p"));
  EXPECT_THAT(std::string(Sampler::Create({kNaN, 0, 1.0f, 0}).status().message()), HasSubstr("--temp"));
  EXPECT_THAT(std::string(Sampler::Create({kInf, 0, 1.0f, 0}).status().message()), HasSubstr("--temp"));
  EXPECT_EQ(Sampler::Create({-0.5f, 0, 1.0f, 0}).status().message(),
            "--temp must be a finite number >= 0 (0: greedy), got -0.5");
  EXPECT_EQ(Sampler::Create({1.0f, -5, 1.0f, 0}).status().message(), "--top-k must be >= 0 (0: all), got -5");
}

}  // namespace
}  // namespace kiln::runtime
