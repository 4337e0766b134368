// Issue 13, head roles: the statistics on hand-made attention matrices, against a float64
// reference computed from the Hugging Face goldens' attention, and `attn heads` on the command
// line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "src/tasks/head_stats.h"
#include "tests/chromium_util.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/hostile_util.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// An input of n tokens with no separator or punctuation.
HeadStatsInput plain_input(int n) {
  return {.ids = std::vector<int>(n, 0),
          .separator = std::vector<char>(n, 0),
          .punctuation = std::vector<char>(n, 0)};
}

// The statistics of one head fed the given matrices.
HeadScores head_scores(HeadAttention attention,
                       const std::vector<std::pair<std::vector<float>, HeadStatsInput>>& matrices) {
  HeadStatsAccumulator stats(1, 1, attention);
  for (const auto& [probabilities, input] : matrices) stats.add(0, 0, probabilities.data(), input);
  return stats.scores()[0];
}

// A causal (n, n) matrix with row q's weights given by weight(q, k) for k <= q.
template <class Weight>
std::vector<float> causal_matrix(int n, Weight weight) {
  std::vector<float> p(std::size_t(n) * n, 0.0f);
  for (int q = 0; q < n; ++q) {
    for (int k = 0; k <= q; ++k) p[q * n + k] = weight(q, k);
  }
  return p;
}

TEST(HeadStats, PurePreviousTokenHead) {
  const int n = 6;
  // Row 0 can only see itself; every other row puts all its mass on the token before.
  const auto p = causal_matrix(n, [](int q, int k) { return float(q == 0 || k == q - 1); });
  const HeadScores scores = head_scores(HeadAttention::kCausal, {{p, plain_input(n)}});
  EXPECT_DOUBLE_EQ(scores.previous, 1.0);
  EXPECT_DOUBLE_EQ(scores.entropy, 0.0);
  EXPECT_DOUBLE_EQ(scores.next, 0.0);
  EXPECT_DOUBLE_EQ(scores.distance, double(n - 1) / n);  // 1 on every row but the first
  EXPECT_DOUBLE_EQ(scores.self, 1.0 / n);
  EXPECT_FALSE(scores.induction.has_value());
  EXPECT_EQ(scores.role, HeadRole::kPrevious);
  EXPECT_STREQ(role_name(scores.role), "previous");
}

TEST(HeadStats, UniformCausalHead) {
  const int n = 4;
  const auto p = causal_matrix(n, [](int q, int) { return 1.0f / float(q + 1); });
  const HeadScores scores = head_scores(HeadAttention::kCausal, {{p, plain_input(n)}});
  // Every row of length > 1 is uniform (entropy 1); row 0 has entropy 0 by definition.
  EXPECT_NEAR(scores.entropy, double(n - 1) / n, 1e-7);
  // Row q's expected distance is q / 2.
  EXPECT_NEAR(scores.distance, double(n - 1) / 4, 1e-7);
  EXPECT_NEAR(scores.first, (1 + 1 / 2.0 + 1 / 3.0 + 1 / 4.0) / 4, 1e-7);
  EXPECT_NEAR(scores.previous, (1 / 2.0 + 1 / 3.0 + 1 / 4.0) / 3, 1e-7);
  // self and first are both 0.52 (row q gives each 1 / (q + 1)): the tie goes to the first
  // candidate in the documented order.
  EXPECT_NEAR(scores.self, scores.first, 1e-7);
  EXPECT_EQ(scores.role, HeadRole::kSelf);
}

TEST(HeadStats, UniformEncoderHeadWithSeparatorAndPunctuation) {
  const int n = 5;
  HeadStatsInput input = plain_input(n);
  input.separator[4] = 1;
  input.punctuation[3] = 1;
  const std::vector<float> p(n * n, 1.0f / n);
  const HeadScores scores = head_scores(HeadAttention::kBidirectional, {{p, input}});
  EXPECT_NEAR(scores.entropy, 1.0, 1e-6);
  EXPECT_NEAR(scores.next, 1.0 / n, 1e-7);
  EXPECT_NEAR(scores.separator, 1.0 / n, 1e-7);
  EXPECT_NEAR(scores.punctuation, 1.0 / n, 1e-7);
  // The mean |q - k| over all n^2 pairs is (n^2 - 1) / (3 n).
  EXPECT_NEAR(scores.distance, double(n * n - 1) / (3 * n), 1e-6);
  EXPECT_EQ(scores.role, HeadRole::kMixed);
  // Every mass statistic is 1/n: the first in the documented order is the strongest.
  EXPECT_EQ(scores.strongest, HeadRole::kPrevious);
  EXPECT_NEAR(scores.role_score, 1.0 / n, 1e-7);
}

TEST(HeadStats, NextTokenEncoderHead) {
  const int n = 4;
  // The last row has no next token: it looks at itself.
  std::vector<float> p(n * n, 0.0f);
  for (int q = 0; q < n; ++q) p[q * n + std::min(q + 1, n - 1)] = 1;
  const HeadScores scores = head_scores(HeadAttention::kBidirectional, {{p, plain_input(n)}});
  EXPECT_DOUBLE_EQ(scores.next, 1.0);
  EXPECT_EQ(scores.role, HeadRole::kNext);
}

TEST(HeadStats, InductionPatternOnARepeatedSequence) {
  // BOS, then A B C A B C: the second copy's queries (positions 4-6) attend to the token after
  // their token's first occurrence (positions 2, 3, 4).
  HeadStatsInput probe = plain_input(7);
  probe.ids = {0, 11, 12, 13, 11, 12, 13};
  probe.repeat_start = 1;
  probe.period = 3;
  const auto p = causal_matrix(7, [](int q, int k) { return float(q >= 4 ? k == q - 2 : k == 0); });
  // A text input too, on which the head attends to the first token.
  const auto text = causal_matrix(3, [](int, int k) { return float(k == 0); });
  const HeadScores scores =
      head_scores(HeadAttention::kCausal, {{p, probe}, {text, plain_input(3)}});
  ASSERT_TRUE(scores.induction.has_value());
  EXPECT_DOUBLE_EQ(*scores.induction, 1.0);
  // The probe adds to induction only: the other statistics are the text input's.
  EXPECT_DOUBLE_EQ(scores.first, 1.0);
  EXPECT_DOUBLE_EQ(scores.distance, (0 + 1 + 2) / 3.0);
  // Both 1: the first candidate in the documented order wins.
  EXPECT_EQ(scores.role, HeadRole::kFirst);
}

TEST(HeadStats, TokenMarks) {
  auto gpt2 = load_model(source_dir() / "models" / "tiny-gpt2-brown");
  const HeadStatsInput text =
      describe_input(*gpt2->tokenizer, gpt2->tokenizer->encode("The cat, the \"mat\".").ids);
  // The, Ġcat, ",", Ġthe, Ġ", mat, ".
  EXPECT_EQ(text.punctuation, (std::vector<char>{0, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(text.separator, std::vector<char>(7, 0));
  auto bert = load_model(source_dir() / "models" / "tiny-bert-brown");
  const HeadStatsInput bert_text =
      describe_input(*bert->tokenizer, bert->tokenizer->encode("the cat sat.").ids);
  // [CLS] the cat sat . [SEP]
  EXPECT_EQ(bert_text.punctuation, (std::vector<char>{0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(bert_text.separator, (std::vector<char>{0, 0, 0, 0, 0, 1}));
}

TEST(HeadStats, CrossAttentionHeadOnTheSourceEnd) {
  // 3 target queries over a 4-token source ending in </s>, all their mass on it.
  HeadStatsInput source = plain_input(4);
  source.separator[3] = 1;
  std::vector<float> p(3 * 4, 0.0f);
  for (int q = 0; q < 3; ++q) p[q * 4 + 3] = 1;
  HeadStatsAccumulator stats(1, 1, HeadAttention::kCross);
  stats.add_cross(0, 0, p.data(), 3, source);
  const HeadScores scores = stats.scores()[0];
  EXPECT_DOUBLE_EQ(scores.separator, 1.0);
  EXPECT_DOUBLE_EQ(scores.entropy, 0.0);
  EXPECT_DOUBLE_EQ(scores.first, 0.0);
  EXPECT_EQ(scores.role, HeadRole::kSeparator);
}

TEST(HeadStats, UniformCrossAttentionHeadHasNoPositionalRole) {
  // 2 target queries spread evenly over 4 source tokens: each statistic over the source is 1/4,
  // and previous, next and self, which mean nothing across two sequences, are not candidates.
  HeadStatsInput source = plain_input(4);
  source.punctuation[2] = 1;
  const std::vector<float> p(2 * 4, 0.25f);
  HeadStatsAccumulator stats(1, 1, HeadAttention::kCross);
  stats.add_cross(0, 0, p.data(), 2, source);
  const HeadScores scores = stats.scores()[0];
  EXPECT_NEAR(scores.entropy, 1.0, 1e-7);
  EXPECT_DOUBLE_EQ(scores.first, 0.25);
  EXPECT_DOUBLE_EQ(scores.punctuation, 0.25);
  EXPECT_EQ(scores.previous, 0.0);
  EXPECT_EQ(scores.distance, 0.0);
  EXPECT_EQ(scores.role, HeadRole::kMixed);
  EXPECT_EQ(scores.strongest, HeadRole::kFirst);
}

// The statistics of every head computed in float64 straight from the definitions in
// head_stats.h, over one attention tensor [layer][head][query][key] per input: self-attention
// over keys[i] (its queries are its keys), or cross-attention of target queries over keys[i].
std::vector<HeadScores> reference_scores(const std::vector<const json*>& attentions,
                                         const std::vector<HeadStatsInput>& keys, int n_layers,
                                         int n_heads, HeadAttention attention) {
  const bool causal = attention == HeadAttention::kCausal;
  const bool cross = attention == HeadAttention::kCross;
  std::vector<HeadScores> all;
  for (int layer = 0; layer < n_layers; ++layer) {
    for (int head = 0; head < n_heads; ++head) {
      HeadScores s{.layer = layer, .head = head};
      double rows = 0, previous_rows = 0, next_rows = 0;
      for (std::size_t i = 0; i < attentions.size(); ++i) {
        const json& w = (*attentions[i])[layer][head];
        const int n_queries = int(w.size()), n_keys = int(w[0].size());
        for (int q = 0; q < n_queries; ++q) {
          const int length = causal ? q + 1 : n_keys;
          double entropy = 0;
          for (int k = 0; k < n_keys; ++k) {
            const double p = w[q][k].get<double>();
            if (keys[i].separator[k]) s.separator += p;
            if (keys[i].punctuation[k]) s.punctuation += p;
            if (!cross) s.distance += p * std::abs(q - k);
            if (p > 0) entropy -= p * std::log(p);
          }
          if (length > 1) s.entropy += entropy / std::log(length);
          s.first += w[q][0].get<double>();
          if (!cross) {
            s.self += w[q][q].get<double>();
            if (q > 0) s.previous += w[q][q - 1].get<double>(), ++previous_rows;
            if (!causal && q + 1 < n_keys) s.next += w[q][q + 1].get<double>(), ++next_rows;
          }
          ++rows;
        }
      }
      for (double* value :
           {&s.self, &s.first, &s.separator, &s.punctuation, &s.distance, &s.entropy}) {
        *value /= rows;
      }
      if (previous_rows > 0) s.previous /= previous_rows;
      if (next_rows > 0) s.next /= next_rows;
      all.push_back(s);
    }
  }
  return all;
}

// The statistics an attention defines, by name: cross-attention has no positional ones.
std::vector<std::pair<const char*, double>> defined_statistics(const HeadScores& s,
                                                               HeadAttention attention) {
  if (attention == HeadAttention::kCross) {
    return {{"first", s.first},
            {"separator", s.separator},
            {"punctuation", s.punctuation},
            {"entropy", s.entropy}};
  }
  return {{"previous", s.previous}, {"next", s.next},           {"self", s.self},
          {"first", s.first},       {"separator", s.separator}, {"punctuation", s.punctuation},
          {"distance", s.distance}, {"entropy", s.entropy}};
}

// Expects attn's statistics within tolerance::kHeadStatistic of the reference's; returns the worst
// difference.
double expect_scores_near(const std::vector<HeadScores>& got, const std::vector<HeadScores>& want,
                          HeadAttention attention, const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    EXPECT_EQ(got[i].layer, want[i].layer) << what;
    EXPECT_EQ(got[i].head, want[i].head) << what;
    const auto got_values = defined_statistics(got[i], attention);
    const auto want_values = defined_statistics(want[i], attention);
    for (std::size_t v = 0; v < got_values.size(); ++v) {
      EXPECT_NEAR(got_values[v].second, want_values[v].second, tolerance::kHeadStatistic)
          << what << " layer " << want[i].layer << " head " << want[i].head << " "
          << want_values[v].first;
      worst = std::max(worst, std::abs(got_values[v].second - want_values[v].second));
    }
  }
  return worst;
}

// Expects `attn heads --json`'s heads within tolerance::kHeadStatistic of the reference's; the
// statistics the attention does not define are null.
void expect_json_near(const json& heads, const std::vector<HeadScores>& want,
                      HeadAttention attention, const std::string& what) {
  ASSERT_EQ(heads.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const json& got = heads[i];
    const HeadScores& w = want[i];
    EXPECT_EQ(got["layer"], w.layer) << what;
    EXPECT_EQ(got["head"], w.head) << what;
    EXPECT_EQ(got["induction"], nullptr) << what;
    for (const auto& [name, value] : defined_statistics(w, attention)) {
      EXPECT_NEAR(got[name].get<double>(), value, tolerance::kHeadStatistic)
          << what << " layer " << w.layer << " head " << w.head << " " << name;
    }
    if (attention == HeadAttention::kCross) {
      for (const char* name : {"previous", "next", "self", "distance"}) {
        EXPECT_EQ(got[name], nullptr) << what << " " << name;
      }
    }
  }
}

// A shipped model, its golden attention lines, their inputs as attn describes them, and the
// float64 reference statistics of the golden matrices.
struct GoldenReference {
  std::unique_ptr<Model> model;
  std::vector<json> lines;
  std::vector<HeadStatsInput> inputs;
  std::vector<HeadScores> want;
};

HeadAttention self_attention_of(const ArchSpec& spec) {
  return spec.causal ? HeadAttention::kCausal : HeadAttention::kBidirectional;
}

GoldenReference golden_reference(const char* model_name) {
  GoldenReference golden;
  golden.model = load_model(source_dir() / "models" / model_name);
  golden.lines = GoldenSet(model_name).jsonl("attention.jsonl");
  std::vector<const json*> attentions;
  for (const json& line : golden.lines) {
    golden.inputs.push_back(
        describe_input(*golden.model->tokenizer, line["ids"].get<std::vector<int>>()));
    attentions.push_back(&line["attentions"]);
  }
  const ArchSpec& spec = golden.model->spec();
  golden.want = reference_scores(attentions, golden.inputs, spec.n_layer, spec.n_head,
                                 self_attention_of(spec));
  return golden;
}

void expect_scores_match_reference(const char* model_name) {
  const GoldenReference golden = golden_reference(model_name);
  const ArchSpec& spec = golden.model->spec();
  // All the golden inputs packed into one batch.
  HeadStatsAccumulator stats(spec.n_layer, spec.n_head, self_attention_of(spec));
  accumulate_head_stats(*golden.model, golden.inputs, 1024, stats);
  const double worst =
      expect_scores_near(stats.scores(), golden.want, self_attention_of(spec), model_name);
  std::cout << model_name << ": worst |statistic - float64 reference| " << worst << "\n";
}

TEST(HeadStats, Gpt2MatchesReferenceOnGoldenAttention) {
  ATTN_REQUIRE_SHARED();
  expect_scores_match_reference("tiny-gpt2-brown");
}

TEST(HeadStats, BertMatchesReferenceOnGoldenAttention) {
  ATTN_REQUIRE_SHARED();
  expect_scores_match_reference("tiny-bert-brown");
}

// `attn heads --json` over the golden texts (one per line of --file) against the reference.
void expect_cli_matches_reference(const char* model_name) {
  const GoldenReference golden = golden_reference(model_name);
  const std::vector<json>& lines = golden.lines;
  std::string texts;
  for (const json& line : lines) texts += line["text"].get<std::string>() + "\n";
  const TempDir scratch;
  write_file(scratch / "texts.txt", texts);
  const CommandResult result =
      run_attn({"heads", "-m", (source_dir() / "models" / model_name).string(), "--file",
                (scratch / "texts.txt").string(), "--json", "--probe", "none"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json document = json::parse(result.out);
  EXPECT_EQ(document["inputs"], lines.size());
  EXPECT_EQ(document["probe"], nullptr);
  expect_json_near(document["heads"], golden.want, self_attention_of(golden.model->spec()),
                   model_name);
}

TEST(HeadsCommand, Gpt2JsonMatchesReference) {
  ATTN_REQUIRE_SHARED();
  expect_cli_matches_reference("tiny-gpt2-brown");
}

TEST(HeadsCommand, BertJsonMatchesReference) {
  ATTN_REQUIRE_SHARED();
  expect_cli_matches_reference("tiny-bert-brown");
}

TEST(HeadsCommand, TextTableAndRoles) {
  const CommandResult result =
      run_attn({"heads", "The jury said that the city was fine.", "It was a dark and stormy night.",
                "--probe-sequences", "4", "--probe-length", "16"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<std::string> lines = split_lines_of(result.out);
  // A header, the probe line, a blank line, the column names, then 4 x 4 heads.
  ASSERT_GE(lines.size(), 21u) << result.out;
  EXPECT_TRUE(lines[0].starts_with("tiny-gpt2-brown: 4 layers x 4 heads, 2 input(s)")) << lines[0];
  EXPECT_TRUE(lines[1].starts_with("induction probe: 4 random sequences of 16 tokens")) << lines[1];
  EXPECT_TRUE(lines[4].starts_with("    0    0  ")) << lines[4];
  EXPECT_TRUE(lines[19].starts_with("    3    3  ")) << lines[19];
  EXPECT_NE(result.out.find("roles (the largest mass statistic when >= 0.50, else mixed):"),
            std::string::npos);
}

// Every number of two documents within `tolerance`, everything else equal.
void expect_json_close(const json& got, const json& want, double tolerance,
                       const std::string& where = "") {
  if (got.is_number_float() || want.is_number_float()) {
    ASSERT_TRUE(got.is_number() && want.is_number()) << where;
    EXPECT_NEAR(got.get<double>(), want.get<double>(), tolerance) << where;
  } else if (got.is_structured()) {
    ASSERT_EQ(got.type(), want.type()) << where;
    ASSERT_EQ(got.size(), want.size()) << where;
    for (auto it = want.begin(); it != want.end(); ++it) {
      const std::string key = want.is_object() ? it.key() : std::to_string(it - want.begin());
      expect_json_close(want.is_object() ? got.at(it.key()) : got[it - want.begin()], *it,
                        tolerance, where + "/" + key);
    }
  } else {
    EXPECT_EQ(got, want) << where;
  }
}

// The probe's sequences come from --seed alone: the same scores whatever the thread count. Not
// bit for bit: the matrix products split their rows among the threads differently, which moves
// the last bits of a float (about 1e-9 in the scores, 1e-7 in the losses here).
TEST(HeadsCommand, ProbeIsDeterministicAcrossThreadCounts) {
  const std::vector<std::string> args = {
      "heads", "The jury said it did.", "--json", "--probe-sequences",
      "6",     "--probe-length",        "24",     "--seed",
      "7"};
  std::vector<std::string> outputs;
  for (const char* threads : {"1", "2"}) {
    std::vector<std::string> with_threads = args;
    with_threads.insert(with_threads.end(), {"-t", threads});
    const CommandResult result = run_attn(with_threads);
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    outputs.push_back(result.out);
  }
  const json document = json::parse(outputs[0]);
  expect_json_close(json::parse(outputs[1]), document, 1e-6);
  EXPECT_EQ(document["probe"]["seed"], 7);
  for (const json& head : document["heads"]) {
    EXPECT_GE(head["induction"].get<double>(), 0.0);
    EXPECT_LE(head["induction"].get<double>(), 1.0 + 1e-6);
  }
  std::vector<std::string> other_seed = args;
  other_seed.back() = "8";
  const CommandResult other = run_attn(other_seed);
  ASSERT_EQ(other.exit_status, 0) << describe(other);
  EXPECT_NE(json::parse(other.out)["probe"], document["probe"]);
}

TEST(HeadStats, ProbeInputsRepeatDistinctTokens) {
  auto model = load_model(source_dir() / "models" / "tiny-gpt2-brown");
  const std::vector<HeadStatsInput> probes =
      induction_probe_inputs(*model, {.sequences = 3, .length = 10, .seed = 5});
  ASSERT_EQ(probes.size(), 3u);
  for (const HeadStatsInput& probe : probes) {
    EXPECT_EQ(probe.repeat_start, 0);  // GPT-2 adds no start token
    EXPECT_EQ(probe.period, 10);
    ASSERT_EQ(probe.ids.size(), 20u);
    const std::vector<int> first(probe.ids.begin(), probe.ids.begin() + 10);
    EXPECT_EQ(std::vector<int>(probe.ids.begin() + 10, probe.ids.end()), first);
    EXPECT_EQ(std::set<int>(first.begin(), first.end()).size(), 10u);
    for (int id : first) EXPECT_FALSE(model->tokenizer->is_special(id));
  }
  EXPECT_NE(probes[0].ids, probes[1].ids);
  // The same seed, the same sequences.
  const std::vector<HeadStatsInput> again =
      induction_probe_inputs(*model, {.sequences = 3, .length = 10, .seed = 5});
  for (std::size_t i = 0; i < probes.size(); ++i) EXPECT_EQ(again[i].ids, probes[i].ids);
}

// The model view in headless chromium: a cell per layer and head, with its role label.
TEST(HeadsCommand, ModelViewRendersEveryHeadInChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  const TempDir scratch;
  for (const char* model : {"tiny-gpt2-brown", "tiny-bert-brown"}) {
    const fs::path page = scratch / (std::string(model) + ".html");
    const CommandResult made = run_attn({"heads", "-m", shipped_model(model).string(),
                                         "The cat sat on the mat, a</script>.", "--format", "html",
                                         "-o", page.string(), "--probe", "none"});
    ASSERT_EQ(made.exit_status, 0) << describe(made);
    const std::string html = read_file(page);
    EXPECT_EQ(html.find("http://"), std::string::npos) << "the page must not load anything";
    EXPECT_EQ(html.find("https://"), std::string::npos) << "the page must not load anything";
    const CommandResult shown = run_chromium(chromium, "file://" + page.string(), {"--dump-dom"});
    ASSERT_EQ(shown.exit_status, 0) << describe(shown);
    const std::string& dom = shown.out;
    for (int layer = 0; layer < 4; ++layer) {
      for (int head = 0; head < 4; ++head) {
        const std::regex cell("class=\"cell role-[a-z]+\" data-layer=\"" + std::to_string(layer) +
                              "\" data-head=\"" + std::to_string(head) + "\"");
        EXPECT_TRUE(std::regex_search(dom, cell)) << model << ": no cell " << layer << "." << head;
      }
    }
    const std::regex label("<div class=\"role-label\">[a-z:]+ [0-9.]+</div>");
    EXPECT_EQ(
        std::distance(std::sregex_iterator(dom.begin(), dom.end(), label), std::sregex_iterator()),
        16)
        << model;
    EXPECT_NE(dom.find(std::string(model) + ": what every head does"), std::string::npos);
  }
}

// ---- Encoder-decoders: the encoder's and decoder's self-attention heads, and (--cross) the
// decoder's cross-attention heads over the source ----

// An encoder-decoder's golden attention (each line a source and the decoder's input, which is
// the start token and the model's greedy translation, 11 tokens) and the float64 reference
// statistics of its three kinds of heads.
struct EncoderDecoderReference {
  std::unique_ptr<Model> model;
  std::vector<json> lines;
  std::vector<HeadStatsInput> sources, targets;
  std::vector<HeadScores> encoder, decoder, cross;
};

EncoderDecoderReference encoder_decoder_reference(const std::string& model_name) {
  EncoderDecoderReference golden;
  golden.model = load_model(shared_dir() / "models" / model_name);
  golden.lines = GoldenSet(model_name).jsonl("attention.jsonl");
  std::vector<const json*> encoder, decoder, cross;
  const Tokenizer& tokenizer = *golden.model->tokenizer;
  for (const json& line : golden.lines) {
    golden.sources.push_back(describe_input(tokenizer, line["ids"].get<std::vector<int>>()));
    golden.targets.push_back(
        describe_input(tokenizer, line["decoder_ids"].get<std::vector<int>>()));
    encoder.push_back(&line["encoder_attentions"]);
    decoder.push_back(&line["decoder_attentions"]);
    cross.push_back(&line["cross_attentions"]);
  }
  const ArchSpec& encoder_spec = golden.model->encoder->spec();
  const ArchSpec& decoder_spec = golden.model->spec();
  golden.encoder = reference_scores(encoder, golden.sources, encoder_spec.n_layer,
                                    encoder_spec.n_head, HeadAttention::kBidirectional);
  golden.decoder = reference_scores(decoder, golden.targets, decoder_spec.n_layer,
                                    decoder_spec.n_head, HeadAttention::kCausal);
  golden.cross = reference_scores(cross, golden.sources, decoder_spec.n_layer, decoder_spec.n_head,
                                  HeadAttention::kCross);
  return golden;
}

class EncoderDecoderHeadsTest : public testing::TestWithParam<std::string> {};

TEST_P(EncoderDecoderHeadsTest, StatisticsMatchReferenceOnGoldenAttention) {
  ATTN_REQUIRE_SHARED();
  const EncoderDecoderReference golden = encoder_decoder_reference(GetParam());
  const ArchSpec& encoder_spec = golden.model->encoder->spec();
  const ArchSpec& decoder_spec = golden.model->spec();
  HeadStatsAccumulator encoder(encoder_spec.n_layer, encoder_spec.n_head,
                               HeadAttention::kBidirectional);
  HeadStatsAccumulator decoder(decoder_spec.n_layer, decoder_spec.n_head, HeadAttention::kCausal);
  HeadStatsAccumulator cross(decoder_spec.n_layer, decoder_spec.n_head, HeadAttention::kCross);
  accumulate_encoder_decoder_head_stats(
      *golden.model, golden.sources,
      [&](std::size_t i, const CrossAttentionMemory&) { return golden.targets[i].ids; }, encoder,
      decoder, cross);
  const double worst =
      std::max({expect_scores_near(encoder.scores(), golden.encoder, HeadAttention::kBidirectional,
                                   GetParam() + " encoder"),
                expect_scores_near(decoder.scores(), golden.decoder, HeadAttention::kCausal,
                                   GetParam() + " decoder"),
                expect_scores_near(cross.scores(), golden.cross, HeadAttention::kCross,
                                   GetParam() + " cross")});
  std::cout << GetParam() << ": worst |statistic - float64 reference| " << worst << "\n";
}

// `attn heads` runs the decoder over the model's own greedy translation: with -n 11 that is the
// goldens' decoder input.
TEST_P(EncoderDecoderHeadsTest, JsonMatchesReference) {
  ATTN_REQUIRE_SHARED();
  const EncoderDecoderReference golden = encoder_decoder_reference(GetParam());
  std::string texts;
  long target_tokens = 0;
  for (const json& line : golden.lines) {
    texts += line["text"].get<std::string>() + "\n";
    target_tokens += long(line["decoder_ids"].size());
  }
  const TempDir scratch;
  write_file(scratch / "texts.txt", texts);
  const std::vector<std::string> command = {"heads",
                                            "-m",
                                            (shared_dir() / "models" / GetParam()).string(),
                                            "--file",
                                            (scratch / "texts.txt").string(),
                                            "--json",
                                            "-n",
                                            "11"};
  const CommandResult self = run_attn(command);
  ASSERT_EQ(self.exit_status, 0) << describe(self);
  const json document = json::parse(self.out);
  EXPECT_EQ(document["inputs"], golden.lines.size());
  EXPECT_EQ(document["target_tokens"], target_tokens);
  EXPECT_FALSE(document.contains("cross"));
  expect_json_near(document["encoder"]["heads"], golden.encoder, HeadAttention::kBidirectional,
                   GetParam() + " encoder");
  expect_json_near(document["decoder"]["heads"], golden.decoder, HeadAttention::kCausal,
                   GetParam() + " decoder");

  std::vector<std::string> cross_command = command;
  cross_command.push_back("--cross");
  const CommandResult cross = run_attn(cross_command);
  ASSERT_EQ(cross.exit_status, 0) << describe(cross);
  const json cross_document = json::parse(cross.out);
  EXPECT_FALSE(cross_document.contains("encoder"));
  EXPECT_EQ(cross_document["cross"]["n_layers"], golden.model->spec().n_layer);
  expect_json_near(cross_document["cross"]["heads"], golden.cross, HeadAttention::kCross,
                   GetParam() + " cross");
}

// The text output of --cross: only the statistics over the source in its table.
TEST_P(EncoderDecoderHeadsTest, CrossTable) {
  ATTN_REQUIRE_SHARED();
  const CommandResult result =
      run_attn({"heads", "-m", (shared_dir() / "models" / GetParam()).string(),
                "The cat sat on the mat.", "--cross", "-n", "8"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<std::string> lines = split_lines_of(result.out);
  const auto title = std::find(lines.begin(), lines.end(),
                               "cross-attention (target tokens over the source): 2 layers x 4 "
                               "heads");
  ASSERT_NE(title, lines.end()) << result.out;
  ASSERT_NE(title + 1, lines.end());
  EXPECT_EQ(title[1], "layer head  role              score  first   sep punct entropy");
  EXPECT_NE(result.out.find("9 tokens with the start token, at most 8 generated each"),
            std::string::npos)
      << result.out;
  EXPECT_EQ(result.out.find("encoder self-attention"), std::string::npos);
}

// The model view of an encoder-decoder: a grid per section, every head a cell.
TEST_P(EncoderDecoderHeadsTest, ModelViewInChromium) {
  ATTN_REQUIRE_SHARED();
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  const TempDir scratch;
  const std::pair<std::vector<std::string>, std::vector<std::string>> views[] = {
      {{}, {"encoder", "decoder"}}, {{"--cross"}, {"cross"}}};
  for (const auto& [options, sections] : views) {
    const fs::path page = scratch / "heads.html";
    std::vector<std::string> command = {"heads",
                                        "-m",
                                        (shared_dir() / "models" / GetParam()).string(),
                                        "The cat sat on the mat.",
                                        "--format",
                                        "html",
                                        "-o",
                                        page.string(),
                                        "-n",
                                        "6"};
    command.insert(command.end(), options.begin(), options.end());
    const CommandResult made = run_attn(command);
    ASSERT_EQ(made.exit_status, 0) << describe(made);
    const CommandResult shown = run_chromium(chromium, "file://" + page.string(), {"--dump-dom"});
    ASSERT_EQ(shown.exit_status, 0) << describe(shown);
    const std::string& dom = shown.out;
    const std::regex grid("<table class=\"grid\" data-section=\"([a-z]+)\"");
    std::vector<std::string> shown_sections;
    for (auto it = std::sregex_iterator(dom.begin(), dom.end(), grid); it != std::sregex_iterator();
         ++it) {
      shown_sections.push_back((*it)[1]);
    }
    EXPECT_EQ(shown_sections, sections) << GetParam();
    const std::regex cell("class=\"cell role-[a-z]+\" data-layer=\"[01]\" data-head=\"[0-3]\"");
    EXPECT_EQ(
        std::distance(std::sregex_iterator(dom.begin(), dom.end(), cell), std::sregex_iterator()),
        8 * long(sections.size()))
        << GetParam();
    EXPECT_NE(dom.find("source and 7 target tokens"), std::string::npos) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Seq2Seq, EncoderDecoderHeadsTest,
                         testing::Values("tiny-marian-random", "tiny-t5-random"));

// ---- Bad input: one line, exit status 2 for usage, 1 for bad data ----

class HeadsBadInputTest : public HostileTest {};

TEST_F(HeadsBadInputTest, EmptyFile) {
  write_file(scratch_ / "empty.txt", "");
  expect_clean_failure(run({"heads", "--file", (scratch_ / "empty.txt").string()}), kBadInput,
                       {"--file " + (scratch_ / "empty.txt").string() + ": no text\n"});
}

TEST_F(HeadsBadInputTest, UnknownFormat) {
  expect_clean_failure(run({"heads", "The cat sat.", "--format", "yaml"}), kUsageError,
                       {"--format", "yaml"});
  expect_clean_failure(run({"heads", "The cat sat.", "--format", "html", "--json"}), kUsageError,
                       {"--json", "--format"});
}

TEST_F(HeadsBadInputTest, ProbeLongerThanHalfTheContext) {
  // tiny-gpt2-brown's context is 512 tokens: 257 repeated twice do not fit.
  expect_clean_failure(run({"heads", "The cat sat.", "--probe-length", "257"}), kUsageError,
                       {"--probe-length", "257", "context of 512", "at most 256"});
  expect_clean_failure(run({"heads", "The cat sat.", "--probe-length", "2147483647"}), kUsageError,
                       {"--probe-length", "2147483647", "at most 256"});
}

TEST_F(HeadsBadInputTest, InductionProbeOnAnEncoder) {
  const std::string bert = shipped_model("tiny-bert-brown").string();
  expect_clean_failure(run({"heads", "-m", bert, "the cat sat.", "--probe", "induction"}),
                       kUsageError, {"--probe induction", "needs a decoder", "'bert'"});
  expect_clean_failure(run({"heads", "-m", bert, "the cat sat.", "--probe-length", "8"}),
                       kUsageError, {"--probe-length", "needs a decoder"});
}

TEST_F(HeadsBadInputTest, BadLinesAreNamed) {
  write_file(scratch_ / "texts.txt", "The cat sat.\n\nbad \xff byte\n");
  expect_clean_failure(run({"heads", "--file", (scratch_ / "texts.txt").string()}), kBadInput,
                       {"--file " + (scratch_ / "texts.txt").string() + ": line 3: invalid UTF-8"});
  std::string long_text;
  for (int i = 0; i < 600; ++i) long_text += " cat";
  expect_clean_failure(run({"heads", "The cat sat.", long_text}), kBadInput,
                       {"argument 2: 600 tokens, more than the model's context of 512"});
  expect_clean_failure(run({"heads", ""}), kBadInput, {"argument: the text gives no tokens\n"});
  expect_clean_failure(run({"heads", "-p", "The cat sat.", "-p", ""}), kBadInput,
                       {"--prompt 2: the text gives no tokens\n"});
}

TEST_F(HeadsBadInputTest, EncoderDecoderOptionsElsewhere) {
  expect_clean_failure(run({"heads", "The cat sat.", "--cross"}), kUsageError,
                       {"--cross", "only for an encoder-decoder", "'gpt2' is a decoder"});
  expect_clean_failure(
      run({"heads", "-m", shipped_model("tiny-bert-brown").string(), "the cat sat.", "-n", "8"}),
      kUsageError, {"--max-new-tokens", "'bert' is an encoder"});
  expect_clean_failure(run({"heads", "The cat sat.", "-n", "0"}), kUsageError, {"-n"});
}

TEST_F(HeadsBadInputTest, InductionProbeOnAnEncoderDecoder) {
  ATTN_REQUIRE_SHARED();
  const std::string t5 = (shared_dir() / "models" / "tiny-t5-random").string();
  expect_clean_failure(run({"heads", "-m", t5, "The cat.", "--probe", "induction"}), kUsageError,
                       {"--probe induction", "decoder-only", "encoder-decoder"});
  expect_clean_failure(run({"heads", "-m", t5, "The cat.", "--cross", "--seed", "3"}), kUsageError,
                       {"--seed", "decoder-only"});
}

TEST_F(HeadsBadInputTest, NoInputReadsStandardInput) {
  // Without a text or --file, heads reads standard input (here /dev/null: no text at all).
  expect_clean_failure(run({"heads"}), kBadInput, {"standard input: no text\n"});
}

}  // namespace
}  // namespace attn::test
