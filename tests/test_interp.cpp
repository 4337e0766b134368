// Issue 29, what heads and layers do: the logit lens (`attn lens`) and attention rollout and flow
// (`attn attention --rollout --flow`) against the Hugging Face references in
// ../shared/golden/interp/, the flow's maximum flows on a case solved by hand, the lens against
// each family's own output, the lens page in headless Chromium, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <tuple>

#include "src/kernels/ops.h"
#include "src/model/model.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/attention_flow.h"
#include "src/tasks/dependency_heads.h"
#include "src/tasks/head_ablation.h"
#include "src/tasks/translate.h"
#include "src/tasks/treebank.h"
#include "src/tokenizer/wordpiece.h"
#include "tests/chromium_util.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/real_tokenizers.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> lines;
  for (const std::string& line : split_lines_of(text)) {
    if (!line.empty()) lines.push_back(json::parse(line));
  }
  return lines;
}

// ---- The logit lens against the references ---------------------------------------------------

class LensGoldenTest : public testing::TestWithParam<const char*> {};

TEST_P(LensGoldenTest, TopFiveAndTargetMatchHuggingFace) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const json golden = GoldenSet("interp").json("lens_" + model + ".json");
  const TempDir scratch;
  const fs::path prompts = scratch / "prompts.txt";
  std::string lines;
  for (const json& prompt : golden["prompts"]) lines += prompt["prompt"].get<std::string>() + "\n";
  write_file(prompts, lines);
  const CommandResult run = run_attn({"lens", "-m", (shared_dir() / "models" / model).string(),
                                      "-f", prompts.string(), "--json", "-q"});
  ASSERT_EQ(run.exit_status, 0) << describe(run);
  const std::vector<json> results = json_lines(run.out);
  ASSERT_EQ(results.size(), golden["prompts"].size());

  double worst_embedding = 0, worst_block = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const json& expected = golden["prompts"][i];
    const json& got = results[i];
    SCOPED_TRACE("prompt " + std::to_string(i));
    ASSERT_EQ(got["ids"], expected["ids"]);
    ASSERT_EQ(got["tokens"], expected["tokens"]);
    ASSERT_EQ(got["shape"], expected["shape"]);
    const int depths = expected["shape"][0], positions = expected["shape"][1];
    for (int k = 0; k < depths; ++k) {
      const double bound = k == 0 ? tolerance::kLensAfterEmbeddings : tolerance::kLensAfterBlock;
      double& worst = k == 0 ? worst_embedding : worst_block;
      for (int t = 0; t < positions; ++t) {
        for (int c = 0; c < 5; ++c) {
          const json& want = expected["top5"][k][t][c];
          const json& have = got["top5"][k][t][c];
          ASSERT_EQ(have[0], want[0]) << "depth " << k << ", position " << t << ", candidate " << c;
          const double delta = std::abs(have[1].get<double>() - want[1].get<double>());
          worst = std::max(worst, delta);
          EXPECT_LE(delta, bound) << "depth " << k << ", position " << t << ", candidate " << c;
        }
      }
    }
    EXPECT_EQ(got["target"]["id"], expected["target"]["id"]);
    EXPECT_EQ(got["target"]["token"], expected["target"]["token"]);
    EXPECT_EQ(got["target"]["rank"], expected["target"]["rank"]);
    for (int k = 0; k < depths; ++k) {
      EXPECT_NEAR(got["target"]["logprob"][k].get<double>(),
                  expected["target"]["logprob"][k].get<double>(),
                  k == 0 ? tolerance::kLensAfterEmbeddings : tolerance::kLensAfterBlock);
    }
  }
  std::cout << model << ": worst |log-probability| difference " << worst_embedding
            << " after the embeddings, " << worst_block << " after the blocks\n";
}

INSTANTIATE_TEST_SUITE_P(Interp, LensGoldenTest,
                         testing::Values("tiny-gpt2-brown", "tiny-llama-brown"));

// ---- The lens's last layer is the model's own output, in every family -------------------------

struct LensFamily {
  const char* model;
  const char* text;  // an encoder's with its mask
  bool encoder;
};

class LensFamilyTest : public testing::TestWithParam<LensFamily> {};

// A decoder's last layer at the last position predicts the token greedy generation picks; an
// encoder's at the mask, fill-mask's top candidate.
TEST_P(LensFamilyTest, LastLayerIsTheModelsPrediction) {
  ATTN_REQUIRE_SHARED();
  const std::string model = (shared_dir() / "models" / GetParam().model).string();
  const std::string text = GetParam().text;
  const CommandResult lens = run_attn({"lens", "-m", model, "--json", text});
  ASSERT_EQ(lens.exit_status, 0) << describe(lens);
  const json result = json::parse(lens.out);
  const int last_depth = result["shape"][0].get<int>() - 1;
  const int position = result["target"]["position"];
  const int lens_top = result["top5"][last_depth][position][0][0];
  EXPECT_EQ(result["target"]["id"], lens_top);
  EXPECT_EQ(result["target"]["rank"][last_depth], 1);
  if (GetParam().encoder) {
    const CommandResult fill = run_attn({"fill-mask", "-m", model, "--json", "-k", "1", text});
    ASSERT_EQ(fill.exit_status, 0) << describe(fill);
    const json masks = json::parse(fill.out)["masks"];
    EXPECT_EQ(position, masks[0]["position"]);
    EXPECT_EQ(lens_top, masks[0]["candidates"][0]["token_id"]);
  } else {
    EXPECT_EQ(position, result["shape"][1].get<int>() - 1);
    const CommandResult generated = run_attn(
        {"generate", "-m", model, "--temp", "0", "-n", "1", "--ignore-eos", "--json", text});
    ASSERT_EQ(generated.exit_status, 0) << describe(generated);
    EXPECT_EQ(lens_top, json::parse(generated.out)["generated_ids"][0]) << generated.out;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Interp, LensFamilyTest,
    testing::Values(LensFamily{"tiny-llama3-random", "The cat sat on the", false},
                    LensFamily{"tiny-gemma2-random", "The cat sat on the", false},
                    LensFamily{"tiny-phi-random", "The cat sat on the", false},
                    LensFamily{"tiny-bloom-random", "The cat sat on the", false},
                    LensFamily{"tiny-neox-random", "The cat sat on the", false},
                    LensFamily{"tiny-qwen3-random", "The cat sat on the", false},
                    LensFamily{"tiny-roberta-random", "The cat <mask> on the mat.", true},
                    LensFamily{"tiny-albert-random", "The cat [MASK] on the mat.", true},
                    LensFamily{"tiny-modernbert-random", "The cat [MASK] on the mat.", true}),
    [](const testing::TestParamInfo<LensFamily>& info) {
      std::string name = info.param.model;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// An encoder-decoder's lens reads its decoder over the model's own greedy translation: the
// decoder's input is Hugging Face's greedy output (../shared/golden/<model>/generate.jsonl), and
// the last layer's top token at each position is the next token of that translation.
TEST(LensEncoderDecoder, ReadsTheDecoderOverItsTranslation) {
  ATTN_REQUIRE_SHARED();
  for (const char* model : {"tiny-marian-random", "tiny-t5-random"}) {
    const std::vector<json> golden = GoldenSet(model).jsonl("generate.jsonl");
    for (std::size_t index = 0; index < 3; ++index) {
      const json& source = golden.at(index);
      SCOPED_TRACE(std::string(model) + ": " + source["source"].get<std::string>());
      const CommandResult run = run_attn({"lens", "-m", (shared_dir() / "models" / model).string(),
                                          "--json", source["source"].get<std::string>()});
      ASSERT_EQ(run.exit_status, 0) << describe(run);
      const json got = json::parse(run.out);
      EXPECT_EQ(got["source_ids"], source["source_ids"]);
      // [start] + the translation (the lens reads what the decoder read): Hugging Face's output
      // stops after EOS or 48 tokens, attn's translation for the lens after EOS or 64.
      std::vector<int> expected = {source["decoder_start_token_id"].get<int>()};
      for (const json& id : source["generated_ids"]) expected.push_back(id.get<int>());
      const std::vector<int> ids = got["ids"].get<std::vector<int>>();
      ASSERT_GE(ids.size(), 2u);
      const std::size_t common = std::min(ids.size(), expected.size());
      EXPECT_TRUE(std::equal(ids.begin(), ids.begin() + long(common), expected.begin()));
      const int last_depth = got["shape"][0].get<int>() - 1;
      for (std::size_t t = 0; t + 1 < ids.size(); ++t) {
        EXPECT_EQ(got["top5"][last_depth][t][0][0], ids[t + 1]) << "position " << t;
      }
      EXPECT_EQ(got["target"]["position"], int(ids.size()) - 1);
    }
  }
}

// ---- Rollout and flow ------------------------------------------------------------------------

// The references' check_hand_case: two layers of two tokens, flows worked out by hand.
TEST(AttentionFlow, HandSolvedCase) {
  const std::vector<double> augmented = {0.5, 0.5, 0.25, 0.75, 0.9, 0.1, 0.2, 0.8};
  const std::vector<double> raw = attention_flow_raw(augmented, 2, 2);
  // Layer 1: every flow is its edge.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(raw[i], augmented[i], 1e-15);
  // Layer 2: from (2, 0), 0.9 to (1, 0) and 0.1 to (1, 1); (1, 0) passes on 0.5 / 0.5 and (1, 1)
  // 0.25 / 0.75: to (0, 0) min(0.9, 0.5) + min(0.1, 0.25) = 0.6, to (0, 1) 0.5 + 0.1 = 0.6.
  const double expected[] = {0.6, 0.6, 0.45, 0.95};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(raw[4 + i], expected[i], 1e-12) << i;
}

TEST(AttentionFlow, RolloutMultipliesTheAugmentedLayers) {
  const MeanAttention mean{.n_layers = 2, .n_tokens = 2, .weights = {1, 0, 0.5, 0.5, 0, 1, 1, 0}};
  const std::vector<double> augmented = augmented_attention(mean);
  // 0.5 A + 0.5 I, whose rows already sum to 1.
  const std::vector<double> expected_augmented = {1, 0, 0.25, 0.75, 0.5, 0.5, 0.5, 0.5};
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(augmented[i], expected_augmented[i]) << i;
  const std::vector<double> rollout = attention_rollout(augmented, 2, 2);
  // R[2] = Ahat[2] @ Ahat[1] = [[0.5, 0.5], [0.5, 0.5]] @ [[1, 0], [0.25, 0.75]].
  const std::vector<double> expected_rollout = {1, 0, 0.25, 0.75, 0.625, 0.375, 0.625, 0.375};
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(rollout[i], expected_rollout[i]) << i;
}

// Every matrix of the three reference texts, written with 9 decimals, within
// tolerance::kRolloutAndFlow.
TEST(AttentionFlow, MatchesTheReference) {
  ATTN_REQUIRE_SHARED();
  const json golden = GoldenSet("interp").json("rollout_flow_tiny-bert-brown.json");
  double worst = 0;
  for (const json& text : golden["texts"]) {
    SCOPED_TRACE(text["text"].get<std::string>());
    const CommandResult run =
        run_attn({"attention", "-m", (shared_dir() / "models" / "tiny-bert-brown").string(),
                  text["text"].get<std::string>(), "--rollout", "--flow", "--precision", "9",
                  "--layers", "0", "--heads", "0"});
    ASSERT_EQ(run.exit_status, 0) << describe(run);
    const json got = json::parse(run.out);
    ASSERT_EQ(got["token_ids"], text["ids"]);
    for (const char* key : {"augmented", "rollout", "flow"}) {
      ASSERT_EQ(got[key].size(), text[key].size()) << key;
      for (std::size_t l = 0; l < text[key].size(); ++l) {
        for (std::size_t i = 0; i < text[key][l].size(); ++i) {
          for (std::size_t j = 0; j < text[key][l][i].size(); ++j) {
            const double delta =
                std::abs(got[key][l][i][j].get<double>() - text[key][l][i][j].get<double>());
            worst = std::max(worst, delta);
            ASSERT_LE(delta, tolerance::kRolloutAndFlow)
                << key << "[" << l << "][" << i << "][" << j << "]";
          }
        }
      }
    }
    ASSERT_EQ(got["flow_raw_last"].size(), 1u);
    const json& raw = text["flow_raw_last"];
    for (std::size_t i = 0; i < raw.size(); ++i) {
      for (std::size_t j = 0; j < raw[i].size(); ++j) {
        EXPECT_NEAR(got["flow_raw_last"][0][i][j].get<double>(), raw[i][j].get<double>(),
                    tolerance::kRolloutAndFlow);
      }
    }
  }
  std::cout << "rollout and flow: worst difference " << worst << "\n";
}

// A decoder's rollout and flow: causal (nothing from later tokens), rows summing to 1.
TEST(AttentionFlow, DecoderRowsAreCausalAndSumToOne) {
  const CommandResult run =
      run_attn({"attention", "-m", shipped_model("tiny-gpt2-brown").string(),
                "The cat sat on the mat.", "--rollout", "--flow", "--precision", "9"});
  ASSERT_EQ(run.exit_status, 0) << describe(run);
  const json got = json::parse(run.out);
  for (const char* key : {"augmented", "rollout", "flow"}) {
    for (const json& layer : got[key]) {
      for (std::size_t i = 0; i < layer.size(); ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < layer[i].size(); ++j) {
          sum += layer[i][j].get<double>();
          if (j > i) {
            EXPECT_EQ(layer[i][j].get<double>(), 0.0) << key << " row " << i;
          }
        }
        EXPECT_NEAR(sum, 1.0, 1e-6) << key << " row " << i;
      }
    }
  }
}

// An encoder-decoder's rollout and flow are its encoder's, over the source: computed here from
// the encoder attention Hugging Face gave (../shared/golden/<model>/attention.jsonl) by the
// formulas AttentionFlow.MatchesTheReference checks, they match attn's.
TEST(AttentionFlow, EncoderDecoderFollowsItsEncoder) {
  ATTN_REQUIRE_SHARED();
  double worst = 0;
  for (const char* model : {"tiny-marian-random", "tiny-t5-random"}) {
    for (const json& golden : GoldenSet(model).jsonl("attention.jsonl")) {
      SCOPED_TRACE(std::string(model) + ": " + golden["text"].get<std::string>());
      const CommandResult run =
          run_attn({"attention", "-m", (shared_dir() / "models" / model).string(),
                    golden["text"].get<std::string>(), "--rollout", "--flow", "--precision", "9",
                    "--layers", "0", "--heads", "0"});
      ASSERT_EQ(run.exit_status, 0) << describe(run);
      const json got = json::parse(run.out);
      ASSERT_EQ(got["token_ids"], golden["ids"]);
      const json& layers = golden["encoder_attentions"];  // [layer][head][query][key]
      const int n_layers = int(layers.size()), n = int(golden["ids"].size());
      MeanAttention mean{.n_layers = n_layers,
                         .n_tokens = n,
                         .weights = std::vector<double>(std::size_t(n_layers) * n * n, 0.0)};
      for (int l = 0; l < n_layers; ++l) {
        for (const json& head : layers[l]) {
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n; ++j) {
              mean.weights[(std::size_t(l) * n + i) * n + j] +=
                  head[i][j].get<double>() / double(layers[l].size());
            }
          }
        }
      }
      const std::vector<double> augmented = augmented_attention(mean);
      const std::map<std::string, std::vector<double>> expected = {
          {"rollout", attention_rollout(augmented, n_layers, n)},
          {"flow", normalize_rows(attention_flow_raw(augmented, n_layers, n), n)}};
      for (const auto& [key, values] : expected) {
        ASSERT_EQ(got[key].size(), std::size_t(n_layers)) << key;
        for (int l = 0; l < n_layers; ++l) {
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n; ++j) {
              const double delta = std::abs(got[key][l][i][j].get<double>() -
                                            values[(std::size_t(l) * n + i) * n + j]);
              worst = std::max(worst, delta);
              ASSERT_LE(delta, tolerance::kRolloutAndFlow)
                  << key << "[" << l << "][" << i << "][" << j << "]";
            }
          }
        }
      }
    }
  }
  std::cout << "encoder-decoder rollout and flow: worst difference " << worst << "\n";
}

// ---- Refusals --------------------------------------------------------------------------------

TEST(InterpRefusals, EachNamesWhatIsWrong) {
  ATTN_REQUIRE_SHARED();
  const std::string gpt2 = shipped_model("tiny-gpt2-brown").string();
  const std::string marian = (shared_dir() / "models" / "tiny-marian-random").string();
  const std::string classifier = (shared_dir() / "models" / "tiny-bert-seqcls-random").string();
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"lens", "-m", classifier, "a text"}, "lens: the model in"},
      {{"lens", "-m", gpt2, "--target", " Paris France", "a text"}, "--target: ' Paris France' is"},
      {{"lens", "-m", gpt2, "--target", "", "a text"}, "--target: '' is 0 tokens"},
      {{"attention", "-m", gpt2, "a text", "--rollout", "--format", "bertviz"},
       "--rollout: bertviz's JSON has no place for it"},
      {{"ablate", "-m", marian, "a text", "--layers", "2"}, "--layers: layer 2 is out of range"},
  };
  for (const auto& c : cases) {
    const CommandResult run = run_attn(c.args);
    EXPECT_EQ(run.exit_status, 2) << describe(run);
    EXPECT_NE(run.err.find(c.message), std::string::npos) << describe(run);
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << describe(run);
  }
}

// ---- The lens page ---------------------------------------------------------------------------

TEST(LensPage, ShowsEveryLayerAndPositionInChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  const TempDir scratch;
  const fs::path page = scratch / "lens.html";
  const CommandResult made =
      run_attn({"lens", "-m", shipped_model("tiny-gpt2-brown").string(), "The cat sat</script>",
                "A dog", "--format", "html", "-o", page.string(), "-q"});
  ASSERT_EQ(made.exit_status, 0) << describe(made);
  const std::string html = read_file(page);
  EXPECT_EQ(html.find("http://"), std::string::npos) << "the page must not load anything";
  EXPECT_EQ(html.find("https://"), std::string::npos) << "the page must not load anything";
  const CommandResult shown = run_chromium(chromium, "file://" + page.string(), {"--dump-dom"});
  ASSERT_EQ(shown.exit_status, 0) << describe(shown);
  const std::string& dom = shown.out;
  EXPECT_NE(dom.find("data-rendered=\"true\""), std::string::npos) << dom.substr(0, 2000);
  // "The cat sat</script>" is 6 tokens and "A dog" 2: 5 depths of cells for each.
  const std::regex cell("<td class=\"cell( dark)?\"");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(dom.begin(), dom.end(), cell), std::sregex_iterator()),
      5 * (6 + 2));
  EXPECT_NE(dom.find("block 3"), std::string::npos);
  EXPECT_NE(dom.find("The cat sat&lt;/script&gt;"), std::string::npos);
}

// The attention page's rollout and flow sections: the address opens one, the summary names it,
// and no head can be chosen.
TEST(AttentionFlowPage, RolloutAndFlowSectionsInChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  ATTN_REQUIRE_SHARED();
  const TempDir scratch;
  const fs::path page = scratch / "flow.html";
  // An encoder-decoder's sections are its encoder's, over the source.
  const struct {
    fs::path model;
    std::string title;  // of layer 1, which both models have
  } cases[] = {
      {shipped_model("tiny-bert-brown"), "attention {} · 9 tokens · layer 1 (all heads)"},
      {shared_dir() / "models" / "tiny-marian-random",
       "encoder attention {} · 8 source tokens · layer 1 (all heads)"},
  };
  for (const auto& c : cases) {
    const CommandResult made =
        run_attn({"attention", "-m", c.model.string(), "the cat sat on the mat.", "--rollout",
                  "--flow", "--format", "html", "-o", page.string()});
    ASSERT_EQ(made.exit_status, 0) << describe(made);
    for (const std::string section : {"rollout", "flow"}) {
      const CommandResult shown = run_chromium(
          chromium, "file://" + page.string() + "#section=" + section + "&layer=1&query=2",
          {"--dump-dom"});
      ASSERT_EQ(shown.exit_status, 0) << describe(shown);
      const std::string& dom = shown.out;
      std::string title = c.title;
      title.replace(title.find("{}"), 2, section);
      EXPECT_NE(dom.find(title), std::string::npos) << title;
      EXPECT_NE(dom.find("draws on the input tokens"), std::string::npos) << section;
      EXPECT_TRUE(std::regex_search(dom, std::regex("<label hidden=\"\">Head")))
          << section << ": the head selector is shown";
    }
  }
}

// ---- Head ablation ---------------------------------------------------------------------------

// attn ablate --json on the reference's inputs: the GPT-2 texts[0:20], or the BERT mask
// sentences with their targets.
json run_ablation(const std::string& model, const json& golden, const TempDir& scratch,
                  std::vector<std::string> extra = {}) {
  const fs::path texts = scratch / "texts.txt";
  const fs::path targets = scratch / "targets.txt";
  std::string text_lines, target_lines;
  for (const json& item : golden["items"]) text_lines += item["text"].get<std::string>() + "\n";
  write_file(texts, text_lines);
  std::vector<std::string> args = {
      "ablate", "-m", (shared_dir() / "models" / model).string(), "-f", texts.string(),
      "--json", "-q"};
  if (golden["kind"] == "encoder") {
    const json masks = GoldenSet("interp").json("mask_targets.json");
    for (const json& sentence : masks["sentences"]) {
      std::string words;
      for (const json& word : sentence["targets"]) {
        words += (words.empty() ? "" : " ") + word.get<std::string>();
      }
      target_lines += words + "\n";
    }
    write_file(targets, target_lines);
    args.insert(args.end(), {"--targets", targets.string()});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  // Every head, zero and mean, is 33 passes with GPT-2's 50257-token head at every scored token:
  // seconds in a release build, minutes under the sanitizers on a busy machine. The limit only
  // guards against a hang.
  constexpr double kAblationTimeLimitSeconds = 900;
  const CommandResult run =
      run_program(attn_binary(), args, "/dev/null",
                  std::max(kAblationTimeLimitSeconds, run_time_limit_seconds()));
  EXPECT_EQ(run.exit_status, 0) << describe(run);
  return run.exit_status == 0 ? json::parse(run.out) : json();
}

class AblationGoldenTest : public testing::TestWithParam<const char*> {};

TEST_P(AblationGoldenTest, EveryHeadMatchesHuggingFace) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const json golden = GoldenSet("interp").json("ablation_" + model + ".json");
  const TempDir scratch;
  const json got = run_ablation(model, golden, scratch);
  ASSERT_FALSE(got.is_null());
  for (const char* key :
       {"kind", "layers", "heads", "head_dim", "n_items", "n_scored", "n_positions_in_mean"}) {
    EXPECT_EQ(got[key], golden[key]) << key;
  }
  EXPECT_NEAR(got["baseline_mean_nll"].get<double>(), golden["baseline_mean_nll"].get<double>(),
              tolerance::kAblationNll);
  double worst = 0;
  for (const char* kind : {"zero_ablation", "mean_ablation"}) {
    for (const char* field : {"mean_nll", "delta"}) {
      for (int l = 0; l < golden["layers"]; ++l) {
        for (int h = 0; h < golden["heads"]; ++h) {
          const double delta = std::abs(got[kind][field][l][h].get<double>() -
                                        golden[kind][field][l][h].get<double>());
          worst = std::max(worst, delta);
          EXPECT_LE(delta, tolerance::kAblationNll)
              << kind << " " << field << " L" << l << "H" << h;
        }
      }
    }
  }
  double worst_mu = 0;
  for (int l = 0; l < golden["layers"]; ++l) {
    for (int h = 0; h < golden["heads"]; ++h) {
      for (int k = 0; k < golden["head_dim"]; ++k) {
        const double delta =
            std::abs(got["mu"][l][h][k].get<double>() - golden["mu"][l][h][k].get<double>());
        worst_mu = std::max(worst_mu, delta);
        ASSERT_LE(delta, tolerance::kAblationMu) << "mu L" << l << "H" << h << "[" << k << "]";
      }
    }
  }
  // The blocks below an ablated head run once per text, not once per head.
  EXPECT_LT(got["cost"]["token_blocks_run"].get<long>(),
            got["cost"]["token_blocks_whole_passes"].get<long>());
  std::cout << model << ": worst NLL difference " << worst << ", worst mu difference " << worst_mu
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(Interp, AblationGoldenTest,
                         testing::Values("tiny-gpt2-brown", "tiny-bert-brown"));

// Heads chosen with --layers and --heads get the same figures as in the whole run; the others
// are null.
TEST(Ablation, ChosenHeadsOnly) {
  ATTN_REQUIRE_SHARED();
  const json golden = GoldenSet("interp").json("ablation_tiny-gpt2-brown.json");
  const TempDir scratch;
  const json got =
      run_ablation("tiny-gpt2-brown", golden, scratch, {"--layers", "2-3", "--heads", "1"});
  ASSERT_FALSE(got.is_null());
  for (int l = 0; l < 4; ++l) {
    for (int h = 0; h < 4; ++h) {
      const json& delta = got["zero_ablation"]["delta"][l][h];
      if (l >= 2 && h == 1) {
        EXPECT_NEAR(delta.get<double>(), golden["zero_ablation"]["delta"][l][h].get<double>(),
                    tolerance::kAblationNll);
      } else {
        EXPECT_TRUE(delta.is_null()) << l << "." << h;
      }
    }
  }
  EXPECT_EQ(got["zero_ablation"]["ranking"].size(), 2u);
}

// Rerunning the blocks from layer l on the stream that entered it gives the whole pass's logits
// bit for bit, in families whose blocks differ (rotary, windows, ALiBi, parallel blocks, shared
// layers, an embedding projection, post-norm blocks): what ablation relies on to skip the blocks
// below; so does carrying only the rows read past the last block's attention.
TEST(Ablation, ForwardFromALayerEqualsTheWholePass) {
  ATTN_REQUIRE_SHARED();
  for (const char* name :
       {"tiny-llama3-random", "tiny-gemma3-random", "tiny-mistral-swa-random", "tiny-bloom-random",
        "tiny-phi-random", "tiny-albert-random", "tiny-modernbert-random"}) {
    SCOPED_TRACE(name);
    const auto model = load_model(shared_dir() / "models" / name, std::nullopt);
    const ArchSpec& spec = model->spec();
    const Encoding encoding = model->tokenizer->encode("The cat sat on the mat, and then it ran.");
    const int n = int(encoding.ids.size());
    KVCache cache(spec, n, spec.n_layer);
    RunState state(spec, n, n);
    Batch batch;
    batch.add_sequence(encoding.ids, encoding.type_ids);
    std::vector<std::vector<float>> entering(spec.n_layer);  // the stream entering each layer
    ForwardObserver keeping;
    keeping.on_hidden = [&](int layer, const float* hidden, int rows) {
      if (layer + 1 < spec.n_layer) {
        entering[layer + 1].assign(hidden, hidden + std::size_t(rows) * spec.d_model);
      }
    };
    model->transformer->forward(batch, cache, state, &keeping);
    std::vector<int> rows(n);
    for (int i = 0; i < n; ++i) rows[i] = i;
    std::vector<float> whole(std::size_t(n) * spec.vocab_size), again(whole.size());
    model->transformer->compute_logits(state, rows, whole.data());
    for (int layer = 0; layer < spec.n_layer; ++layer) {
      std::copy(entering[layer].begin(), entering[layer].end(), state.hidden.begin());
      std::vector<int> reported;  // the blocks that ran (and the embeddings, as -1)
      ForwardObserver watching;
      watching.on_hidden = [&](int block, const float*, int) { reported.push_back(block); };
      model->transformer->forward_from(layer, batch, cache, state, &watching);
      ASSERT_FALSE(reported.empty());
      EXPECT_EQ(reported.front(), layer) << "the blocks below ran";
      model->transformer->compute_logits(state, rows, again.data());
      ASSERT_EQ(again, whole) << "from layer " << layer;
      // Only three rows read: the last block carries them alone past its attention, to the
      // front of state.hidden, and they are the whole pass's rows.
      const std::vector<int> read = {1, n / 2, n - 1}, front = {0, 1, 2};
      std::copy(entering[layer].begin(), entering[layer].end(), state.hidden.begin());
      model->transformer->forward_from(layer, batch, cache, state, nullptr, read);
      model->transformer->compute_logits(state, front, again.data());
      for (int i = 0; i < 3; ++i) {
        const auto row = whole.begin() + std::ptrdiff_t(read[i]) * spec.vocab_size;
        ASSERT_TRUE(std::equal(row, row + spec.vocab_size,
                               again.begin() + std::ptrdiff_t(i) * spec.vocab_size))
            << "from layer " << layer << ", read row " << read[i];
      }
    }
  }
}

// An encoder-decoder's ablations, each computed by rerunning from the ablated layer (the
// encoder's, then the whole decoder; or the decoder's), against a whole pass through both stacks
// with the head taken out from the start; mu against the mean head output of the baseline pass.
TEST(AblationEncoderDecoder, EachHeadAsAWholePassWithItRemoved) {
  ATTN_REQUIRE_SHARED();
  const std::pair<const char*, const char*> texts[] = {
      {"The cat sat on the mat.", "Die Katze sass auf der Matte."},
      {"A dog ran home.", "Ein Hund lief nach Hause."}};
  for (const char* name : {"tiny-marian-random", "tiny-t5-random"}) {
    SCOPED_TRACE(name);
    const auto model = load_model(shared_dir() / "models" / name, std::nullopt);
    const ArchSpec& encoder_spec = model->encoder->spec();
    const ArchSpec& spec = model->spec();
    std::vector<TranslationAblationInput> inputs;
    for (const auto& [source, target] : texts) {
      inputs.push_back(
          {.source_ids = model->tokenizer->encode(source).ids,
           .decoder = teacher_forced_input(decoder_prompt(*model).front(),
                                           model->tokenizer->encode_target(target).ids)});
    }
    const auto every_head = [](const ArchSpec& s) {
      AblationHeads heads;
      for (int l = 0; l < s.n_layer; ++l) heads.layers.push_back(l);
      for (int h = 0; h < s.n_head; ++h) heads.heads.push_back(h);
      return heads;
    };
    const EncoderDecoderAblation result =
        ablate_encoder_decoder_heads(*model, inputs, every_head(encoder_spec), every_head(spec));

    // Whole passes: `encoder_observer` and `decoder_observer` see every input's passes; the NLL
    // sum over the inputs' scored tokens.
    const auto whole_pass_nll = [&](const ForwardObserver* encoder_observer,
                                    const ForwardObserver* decoder_observer) {
      double sum = 0;
      for (const TranslationAblationInput& input : inputs) {
        const CrossAttentionMemory memory =
            encode_source(*model, input.source_ids, encoder_observer);
        const int n = int(input.decoder.ids.size());
        KVCache cache(spec, n, spec.n_layer);
        RunState state(spec, n, std::max(n, memory.length));
        Batch batch;
        batch.add_sequence(input.decoder.ids);
        batch.memory = &memory;
        model->transformer->forward(batch, cache, state, decoder_observer);
        const std::vector<int>& rows = input.decoder.scored_positions;
        std::vector<float> logits(rows.size() * spec.vocab_size);
        model->transformer->compute_logits(state, rows, logits.data());
        for (std::size_t k = 0; k < rows.size(); ++k) {
          const float* row = logits.data() + k * spec.vocab_size;
          sum += log_sum_exp(row, spec.vocab_size) - row[input.decoder.targets[k]];
        }
      }
      return sum;
    };
    // Sums over the same tokens, compared as mean NLLs: the passes run over other batch shapes,
    // whose float32 rounding may differ in the last bits; one head ablated moves them by 1e-3
    // and more here.
    const double n_scored = double(result.decoder.n_scored);
    EXPECT_NEAR(result.decoder.baseline_nll_sum / n_scored,
                whole_pass_nll(nullptr, nullptr) / n_scored, tolerance::kAblationPathsMeanNll);

    struct Kind {
      const char* name;
      const AblationResult& result;
      const ArchSpec& spec;
      bool encoder, cross;
    };
    for (const Kind& kind : {Kind{"encoder", result.encoder, encoder_spec, true, false},
                             Kind{"decoder", result.decoder, spec, false, false},
                             Kind{"cross", result.cross, spec, false, true}}) {
      SCOPED_TRACE(kind.name);
      const int q_dim = kind.spec.q_dim(), head_dim = kind.spec.head_dim;
      // mu: the mean head output over every position of the baseline pass.
      std::vector<double> sums(std::size_t(kind.spec.n_layer) * q_dim, 0.0);
      long positions = 0;
      const auto summing = [&](int layer, float* outputs, int rows) {
        if (layer == 0) positions += rows;
        for (long i = 0; i < long(rows) * q_dim; ++i) {
          sums[std::size_t(layer) * q_dim + i % q_dim] += outputs[i];
        }
      };
      ForwardObserver observer;
      (kind.cross ? observer.on_cross_head_outputs : observer.on_head_outputs) = summing;
      whole_pass_nll(kind.encoder ? &observer : nullptr, kind.encoder ? nullptr : &observer);
      ASSERT_EQ(positions, kind.result.n_positions);
      for (std::size_t i = 0; i < sums.size(); ++i) {
        ASSERT_NEAR(kind.result.mu[i], sums[i] / double(positions), tolerance::kAblationMu) << i;
      }
      for (int layer = 0; layer < kind.spec.n_layer; ++layer) {
        for (int head = 0; head < kind.spec.n_head; ++head) {
          for (const bool mean : {false, true}) {
            const float* mu = kind.result.mu.data() + std::size_t(layer) * q_dim + head * head_dim;
            ForwardObserver removing;
            (kind.cross ? removing.on_cross_head_outputs
                        : removing.on_head_outputs) = [&](int at, float* outputs, int rows) {
              if (at != layer) return;
              for (long r = 0; r < rows; ++r) {
                float* slice = outputs + r * q_dim + head * head_dim;
                for (int k = 0; k < head_dim; ++k) slice[k] = mean ? mu[k] : 0.0f;
              }
            };
            const double expected = whole_pass_nll(kind.encoder ? &removing : nullptr,
                                                   kind.encoder ? nullptr : &removing);
            const std::size_t cell = std::size_t(layer) * kind.spec.n_head + head;
            const double got = (mean ? kind.result.mean_nll_sum : kind.result.zero_nll_sum)[cell];
            EXPECT_NEAR(got / n_scored, expected / n_scored, tolerance::kAblationPathsMeanNll)
                << (mean ? "mean" : "zero") << " " << layer << "." << head;
          }
        }
      }
    }
  }
}

// attn ablate on an encoder-decoder: scored on the reference translations (--targets) or on the
// model's own; its own greedy translation's baseline is what the lens of the last decoder layer
// gives that translation's tokens (its top candidates).
TEST(AblationEncoderDecoder, ReferenceAndOwnTranslations) {
  ATTN_REQUIRE_SHARED();
  const TempDir scratch;
  const fs::path texts = scratch / "texts.txt", targets = scratch / "targets.txt";
  write_file(texts, "The cat sat on the mat.\nA dog ran home.\n");
  write_file(targets, "Die Katze sass auf der Matte.\nEin Hund lief nach Hause.\n");
  for (const char* name : {"tiny-marian-random", "tiny-t5-random"}) {
    SCOPED_TRACE(name);
    const std::string model = (shared_dir() / "models" / name).string();
    const CommandResult reference = run_attn({"ablate", "-m", model, "-f", texts.string(),
                                              "--targets", targets.string(), "--json", "-q"});
    ASSERT_EQ(reference.exit_status, 0) << describe(reference);
    const json got = json::parse(reference.out);
    EXPECT_EQ(got["kind"], "encoder-decoder");
    EXPECT_EQ(got["targets"], "reference");
    for (const char* kind : {"encoder", "decoder", "cross"}) {
      ASSERT_TRUE(got.contains(kind)) << kind;
      EXPECT_EQ(got[kind]["zero_ablation"]["ranking"].size(), 8u) << kind;
    }
    const auto tokenizer = load_model(model, std::nullopt);
    const long labels =
        long(tokenizer->tokenizer->encode_target("Die Katze sass auf der Matte.").ids.size() +
             tokenizer->tokenizer->encode_target("Ein Hund lief nach Hause.").ids.size());
    EXPECT_EQ(got["n_scored"], labels);

    const CommandResult own = run_attn(
        {"ablate", "-m", model, "The cat sat on the mat.", "--layers", "0", "--json", "-q"});
    ASSERT_EQ(own.exit_status, 0) << describe(own);
    const json own_json = json::parse(own.out);
    const CommandResult lens = run_attn({"lens", "-m", model, "The cat sat on the mat.", "--json"});
    ASSERT_EQ(lens.exit_status, 0) << describe(lens);
    const json lens_json = json::parse(lens.out);
    const int last = lens_json["shape"][0].get<int>() - 1;
    const int scored = own_json["n_scored"];
    ASSERT_LE(scored, lens_json["shape"][1].get<int>());
    double nll = 0;
    for (int t = 0; t < scored; ++t) nll -= lens_json["top5"][last][t][0][1].get<double>();
    EXPECT_NEAR(own_json["baseline_mean_nll"].get<double>(), nll / scored, tolerance::kAblationNll);
  }
}

TEST(Ablation, RefusesWhatItCannotScore) {
  ATTN_REQUIRE_SHARED();
  const TempDir scratch;
  const fs::path targets = scratch / "targets.txt";
  write_file(targets, "cat\n");
  const std::string gpt2 = shipped_model("tiny-gpt2-brown").string();
  const std::string bert = shipped_model("tiny-bert-brown").string();
  const std::string marian = (shared_dir() / "models" / "tiny-marian-random").string();
  const struct {
    std::vector<std::string> args;
    int status;
    std::string message;
  } cases[] = {
      {{"ablate", "-m", bert, "The [MASK] sat."}, 2, "ablate: an encoder needs --targets FILE"},
      {{"ablate", "-m", gpt2, "The cat sat.", "--targets", targets.string()},
       2,
       "--targets: only for encoders"},
      {{"ablate", "-m", bert, "The [MASK] sat.", "A [MASK] ran.", "--targets", targets.string()},
       1,
       "line 2 is missing"},
      {{"ablate", "-m", bert, "The [MASK] sat on the [MASK].", "--targets", targets.string()},
       1,
       "1 word for the 2 masks of argument"},
      {{"ablate", "-m", bert, "The cat sat.", "--targets", targets.string()},
       1,
       "argument: has no [MASK] to score"},
      {{"ablate", "-m", gpt2, "The", "--heads", "9"}, 2, "--heads: head 9 is out of range"},
      {{"ablate", "-m", gpt2, "The"}, 1, "ablate: the texts have no token to score"},
      {{"ablate", "-m", marian, "The cat sat.", "A dog ran.", "--targets", targets.string()},
       1,
       "line 2 is missing: one translation per text"},
  };
  for (const auto& c : cases) {
    const CommandResult run = run_attn(c.args);
    EXPECT_EQ(run.exit_status, c.status) << describe(run);
    EXPECT_NE(run.err.find(c.message), std::string::npos) << describe(run);
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << describe(run);
  }
}

TEST(AblationPage, ShowsBothGridsInChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  const TempDir scratch;
  const fs::path page = scratch / "ablate.html";
  const CommandResult made =
      run_attn({"ablate", "-m", shipped_model("tiny-gpt2-brown").string(), "The cat sat</script>",
                "on the mat.", "--format", "html", "-o", page.string(), "-q"});
  ASSERT_EQ(made.exit_status, 0) << describe(made);
  const CommandResult shown = run_chromium(chromium, "file://" + page.string(), {"--dump-dom"});
  ASSERT_EQ(shown.exit_status, 0) << describe(shown);
  const std::string& dom = shown.out;
  EXPECT_NE(dom.find("data-rendered=\"true\""), std::string::npos) << dom.substr(0, 2000);
  const std::regex cell("<td class=\"value( dark)?\" data-layer=\"[0-3]\" data-head=\"[0-3]\"");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(dom.begin(), dom.end(), cell), std::sregex_iterator()),
      2 * 16);
  EXPECT_NE(dom.find("zero-ablation"), std::string::npos);
  EXPECT_NE(dom.find("mean-ablation"), std::string::npos);
}

// An encoder-decoder's page: both grids for each of its three kinds of heads.
TEST(AblationPage, EncoderDecoderShowsEachKindInChromium) {
  ATTN_REQUIRE_SHARED();
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  const TempDir scratch;
  const fs::path page = scratch / "ablate.html";
  const CommandResult made =
      run_attn({"ablate", "-m", (shared_dir() / "models" / "tiny-marian-random").string(),
                "The cat sat.", "--format", "html", "-o", page.string(), "-q"});
  ASSERT_EQ(made.exit_status, 0) << describe(made);
  const CommandResult shown = run_chromium(chromium, "file://" + page.string(), {"--dump-dom"});
  ASSERT_EQ(shown.exit_status, 0) << describe(shown);
  const std::string& dom = shown.out;
  // 2 layers x 4 heads per grid.
  const std::regex cell("<td class=\"value( dark)?\" data-layer=\"[0-1]\" data-head=\"[0-3]\"");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(dom.begin(), dom.end(), cell), std::sregex_iterator()),
      6 * 8);
  for (const char* title :
       {"encoder self-attention, zero-ablation", "decoder self-attention, mean-ablation",
        "cross-attention, zero-ablation"}) {
    EXPECT_NE(dom.find(title), std::string::npos) << title;
  }
  EXPECT_NE(dom.find("in the model's own translations"), std::string::npos);
}

// ---- Dependency heads ------------------------------------------------------------------------

fs::path treebank_file() { return shared_dir() / "data" / "ud-ewt-dev-300.conllu"; }

// What the model's tokens are placed with: GPT-2's byte-level pieces, BERT's WordPiece offsets
// (vocab.txt beside tokenizer.json, as attn heads --deps uses it).
struct TokenPlacing {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Tokenizer> wordpiece;
  const TokenOffsets* offsets() const { return wordpiece ? &wordpiece->offsets() : nullptr; }
};

TokenPlacing token_placing(const std::string& model) {
  const fs::path dir = shared_dir() / "models" / model;
  TokenPlacing placing{.tokenizer = load_tokenizer(dir), .wordpiece = nullptr};
  if (fs::exists(dir / "vocab.txt")) placing.wordpiece = load_wordpiece_tokenizer(dir);
  return placing;
}

class DependencyGoldenTest : public testing::TestWithParam<const char*> {};

// Every sentence's token spans and token-to-word alignment, as deps_align_MODEL.jsonl has them.
TEST_P(DependencyGoldenTest, AlignmentMatchesTheReference) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const Treebank treebank = read_conllu(read_file(treebank_file()), "treebank");
  const TokenPlacing placing = token_placing(model);
  const std::vector<json> expected = GoldenSet("interp").jsonl("deps_align_" + model + ".jsonl");
  ASSERT_EQ(expected.size(), treebank.sentences.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("sentence " + std::to_string(i));
    const TreebankSentence& sentence = treebank.sentences[i];
    EXPECT_EQ(sentence.sent_id, expected[i]["sent_id"]);
    const std::vector<int> ids = placing.tokenizer->encode(*sentence.text).ids;
    ASSERT_EQ(json(ids), expected[i]["ids"]);
    const auto spans = token_byte_spans(*placing.tokenizer, placing.offsets(), *sentence.text, ids);
    ASSERT_TRUE(spans.has_value());
    json written = json::array();
    for (const auto& span : *spans) {
      written.push_back(span ? json::array({span->start, span->end}) : json(nullptr));
    }
    EXPECT_EQ(written, expected[i]["token_spans"]);
    const WordAlignment alignment = align_words(*sentence.text, sentence.words, *spans);
    EXPECT_EQ(json(alignment.token_word), expected[i]["token_word"]);
    EXPECT_EQ(alignment.problem.empty(), expected[i]["aligned"].get<bool>());
    if (!alignment.problem.empty()) {
      EXPECT_EQ(alignment.problem, expected[i]["reason"]);
    }
  }
}

// Tokens placed by the bytes their pieces stand for (SentencePiece: Llama's, XLM-R's, a
// Metaspace tokenizer.json's; byte-level BPE: Llama-3's), checked against where decoding puts
// them: in every treebank sentence that decodes back to its text, each token's first byte that
// is not a space is the first such byte after the decoded text of the tokens before it.
class TokenPlacementTest : public testing::TestWithParam<const char*> {};

TEST_P(TokenPlacementTest, PiecesStartWhereDecodingPutsThem) {
  ATTN_REQUIRE_SHARED();
  const std::string name = GetParam();
  const fs::path model = shared_dir() / "models" / name;
  const std::unique_ptr<Tokenizer> tokenizer =
      load_tokenizer(fs::exists(model) ? model : real_tokenizer_dir(name));
  const Treebank treebank = read_conllu(read_file(treebank_file()), "treebank");
  const auto next_non_space = [](const std::string& text, std::size_t at) {
    while (at < text.size() && text[at] == ' ') ++at;
    return at;
  };
  int sentences = 0;
  for (const TreebankSentence& sentence : treebank.sentences) {
    const std::string& text = *sentence.text;
    const std::vector<int> ids = tokenizer->encode(text).ids;
    if (tokenizer->decode(ids, true) != text) continue;
    SCOPED_TRACE(text);
    ++sentences;
    const auto spans = token_byte_spans(*tokenizer, nullptr, text, ids);
    ASSERT_TRUE(spans.has_value());
    ASSERT_EQ(spans->size(), ids.size());
    std::vector<int> before;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (tokenizer->is_special(ids[i])) {
        EXPECT_FALSE((*spans)[i].has_value()) << "token " << i;
        continue;
      }
      ASSERT_TRUE((*spans)[i].has_value()) << "token " << i;
      const std::string decoded = tokenizer->decode(before, true);
      ASSERT_EQ(text.substr(0, decoded.size()), decoded) << "token " << i;
      before.push_back(ids[i]);
      if (next_non_space(text, (*spans)[i]->start) >= std::size_t((*spans)[i]->end)) continue;
      EXPECT_EQ(next_non_space(text, (*spans)[i]->start), next_non_space(text, decoded.size()))
          << "token " << i << " " << tokenizer->token_string(ids[i]);
    }
  }
  // The treebank is English news and web text: nearly every sentence decodes back.
  EXPECT_GE(sentences, 250);
}

INSTANTIATE_TEST_SUITE_P(Interp, TokenPlacementTest,
                         testing::Values("tiny-llama-brown", "tiny-xlmr-random", "gemma3",
                                         "mistral", "llama3"));

// The word-level attention of the first five sentences, every layer and head, within 1e-6: the
// golden README's bound for deps_words_MODEL.json, not in tests/tolerances.h; it has the value of
// tolerance::kRolloutAndFlow, used here.
TEST_P(DependencyGoldenTest, WordAttentionMatchesTheReference) {
  ATTN_REQUIRE_SHARED();
  const std::string model_name = GetParam();
  const json golden = GoldenSet("interp").json("deps_words_" + model_name + ".json");
  const auto model = load_model(shared_dir() / "models" / model_name, std::nullopt);
  const Treebank treebank = read_conllu(read_file(treebank_file()), "treebank");
  const TokenPlacing placing = token_placing(model_name);
  AttentionSelection all;
  for (int i = 0; i < model->spec().n_layer; ++i) all.layers.push_back(i);
  for (int i = 0; i < model->spec().n_head; ++i) all.heads.push_back(i);
  double worst = 0;
  for (const json& expected : golden["sentences"]) {
    const TreebankSentence& sentence = treebank.sentences[expected["sentence"].get<int>()];
    const Encoding encoding = model->tokenizer->encode(*sentence.text);
    const auto spans =
        token_byte_spans(*model->tokenizer, placing.offsets(), *sentence.text, encoding.ids);
    ASSERT_TRUE(spans.has_value());
    const WordAlignment alignment = align_words(*sentence.text, sentence.words, *spans);
    ASSERT_TRUE(alignment.problem.empty()) << alignment.problem;
    const int n_words = int(sentence.words.size());
    capture_attention(*model, encoding, all, [&](int layer, int head, const float* p, int n) {
      const std::vector<double> w = word_attention(p, n, alignment.token_word, n_words);
      for (int i = 0; i < n_words; ++i) {
        for (int j = 0; j < n_words; ++j) {
          const double delta = std::abs(
              w[i * n_words + j] - expected["word_attention"][layer][head][i][j].get<double>());
          worst = std::max(worst, delta);
          ASSERT_LE(delta, tolerance::kRolloutAndFlow)
              << "L" << layer << "H" << head << " [" << i << "][" << j << "]";
        }
      }
    });
  }
  std::cout << model_name << ": worst word-attention difference " << worst << "\n";
}

// attn heads --deps against the reference: the skipped sentences and their reasons, every count,
// the baselines, and every head's correct count up to the decisions the reference lists as near
// ties.
TEST_P(DependencyGoldenTest, ScoresMatchTheReference) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const json golden = GoldenSet("interp").json("deps_" + model + ".json");
  const CommandResult run = run_attn({"heads", "-m", (shared_dir() / "models" / model).string(),
                                      "--deps", treebank_file().string(), "--json", "-q"});
  ASSERT_EQ(run.exit_status, 0) << describe(run);
  const json got = json::parse(run.out);
  EXPECT_EQ(got["kind"], golden["kind"]);
  EXPECT_EQ(got["treebank"]["aligned"], golden["treebank"]["aligned"]);
  EXPECT_EQ(got["treebank"]["multiword_lines_skipped"],
            golden["treebank"]["multiword_lines_skipped"]);
  EXPECT_EQ(got["treebank"]["empty_nodes_skipped"], golden["treebank"]["empty_nodes_skipped"]);
  ASSERT_EQ(got["treebank"]["skipped"].size(), golden["treebank"]["skipped"].size());
  for (std::size_t i = 0; i < golden["treebank"]["skipped"].size(); ++i) {
    EXPECT_EQ(got["treebank"]["skipped"][i], golden["treebank"]["skipped"][i]);
  }
  EXPECT_EQ(got["counts"], golden["counts"]);
  EXPECT_EQ(got["ties"]["decisions"], golden["ties"]["decisions"]);
  // How many of the reference's near ties each (relation, direction, layer, head) has: its
  // correct count may differ by that much, no more.
  const Treebank treebank = read_conllu(read_file(treebank_file()), "treebank");
  std::map<std::tuple<std::string, std::string, int, int>, long> ties;
  for (const json& tie : golden["ties"]["list"]) {
    const TreebankWord& word = treebank.sentences[tie[0].get<int>()].words[tie[1].get<int>() - 1];
    for (const std::string& relation : {word.deprel, universal_relation(word.deprel)}) {
      ++ties[{relation, tie[2].get<std::string>(), tie[3].get<int>(), tie[4].get<int>()}];
    }
  }
  int differing = 0;
  for (const char* kind : {"deprel", "universal"}) {
    ASSERT_EQ(got["relations"][kind].size(), golden["relations"][kind].size()) << kind;
    for (const auto& [relation, expected] : golden["relations"][kind].items()) {
      const json& have = got["relations"][kind][relation];
      EXPECT_EQ(have["pairs"], expected["pairs"]) << relation;
      for (const char* direction : {"dep->head", "head->dep"}) {
        ASSERT_EQ(have.contains(direction), expected.contains(direction)) << relation;
        if (!expected.contains(direction)) continue;
        SCOPED_TRACE(std::string(kind) + " " + relation + " " + direction);
        EXPECT_EQ(have[direction]["count"], expected[direction]["count"]);
        EXPECT_EQ(have[direction]["baseline"], expected[direction]["baseline"]);
        for (int l = 0; l < golden["layers"]; ++l) {
          for (int h = 0; h < golden["heads"]; ++h) {
            const long delta = std::abs(have[direction]["correct"][l][h].get<long>() -
                                        expected[direction]["correct"][l][h].get<long>());
            differing += delta > 0;
            const auto listed = ties.find({relation, direction, l, h});
            EXPECT_LE(delta, listed == ties.end() ? 0 : listed->second) << "L" << l << "H" << h;
          }
        }
      }
    }
  }
  std::cout << model << ": " << differing << " (relation, direction, head) counts differ from the "
            << "reference, each within its near ties\n";
}

INSTANTIATE_TEST_SUITE_P(Interp, DependencyGoldenTest,
                         testing::Values("tiny-bert-brown", "tiny-gpt2-brown"));

// Attention that puts every word on its gold head scores every decision right, both directions,
// and the baseline counts the words at each offset.
TEST(DependencyScorer, GoldTreeAttentionScoresEverything) {
  // "the cat sat on the mat": det(cat, the), nsubj(sat, cat), root sat, case(mat, on),
  // det(mat, the), obl(sat, mat).
  const std::vector<TreebankWord> words = {{"the", 2, "det"},  {"cat", 3, "nsubj"},
                                           {"sat", 0, "root"}, {"on", 6, "case"},
                                           {"the", 6, "det"},  {"mat", 3, "obl"}};
  const int n = int(words.size());
  for (const bool causal : {false, true}) {
    // Head 0 attends from each dependent to its head (dep->head reads W[d][head]); head 1 from
    // each head to its dependents (head->dep reads W[head][d]).
    DependencyScorer scorer(1, 2, causal);
    scorer.begin_sentence(0, words);
    std::vector<double> to_head(n * n, 0.0), from_head(n * n, 0.0);
    for (int d = 0; d < n; ++d) {
      if (words[d].head == 0) continue;
      to_head[d * n + words[d].head - 1] = 1;
      from_head[(words[d].head - 1) * n + d] = 1;
    }
    scorer.add_head(0, 0, to_head);
    scorer.add_head(0, 1, from_head);
    const RelationTally& all = scorer.all();
    EXPECT_EQ(all.pairs, 5);
    const DirectionTally& up = all.directions[kDependentToHead];
    const DirectionTally& down = all.directions[kHeadToDependent];
    EXPECT_EQ(up.correct[0], up.count) << causal;
    EXPECT_EQ(down.correct[1], down.count) << causal;
    // Encoder: every pair both ways; decoder: only mat -> sat has its head earlier.
    EXPECT_EQ(up.count, causal ? 1 : 5);
    EXPECT_EQ(down.count, causal ? 4 : 5);
    // Offset +1 (index 1) is right for the(1)->cat and the(5)->mat.
    EXPECT_EQ(scorer.deprel().at("det").directions[kHeadToDependent].baseline_correct[1], 2);
  }
}

// CoNLL-U that cannot be read is an error naming the line; ranges and empty nodes are counted
// and skipped.
TEST(Treebank, HostileFilesNameTheLine) {
  const std::string good =
      "# text = a b\n1\ta\t_\t_\t_\t_\t2\tdet\t_\t_\n"
      "2\tb\t_\t_\t_\t_\t0\troot\t_\t_\n\n";
  const Treebank parsed = read_conllu(good +
                                          "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n"
                                          "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n"
                                          "1.1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n",
                                      "f");
  ASSERT_EQ(parsed.sentences.size(), 2u);
  EXPECT_EQ(*parsed.sentences[0].text, "a b");
  EXPECT_FALSE(parsed.sentences[1].text.has_value());
  EXPECT_EQ(parsed.multiword_lines, 1);
  EXPECT_EQ(parsed.empty_nodes, 1);
  const struct {
    std::string contents;
    std::string message;
  } cases[] = {
      {"1\ta\t_\t_\t0\troot\n", "f: line 1: 6 tab-separated columns, CoNLL-U has 10"},
      {"1\ta\t_\t_\t_\t_\t2\tdet\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdet\t_\t_\n",
       "f: line 1: the sentence has no root"},
      {"1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t3\tdet\t_\t_\n"
       "3\tc\t_\t_\t_\t_\t2\tdet\t_\t_\n",
       "f: line 2: the heads of word 2 form a cycle"},
      {"1\ta\t_\t_\t_\t_\t7\tdet\t_\t_\n", "f: line 1: HEAD 7 is past the sentence's 1 words"},
      {"1\ta\t_\t_\t_\t_\tx\tdet\t_\t_\n", "f: line 1: HEAD 'x' is not a number"},
      {"2\ta\t_\t_\t_\t_\t0\troot\t_\t_\n", "f: line 1: ID 2 out of order (expected 1)"},
      {good + "# text = \xff\n", "f: line 5: not valid UTF-8"},
  };
  for (const auto& c : cases) {
    try {
      read_conllu(c.contents, "f");
      ADD_FAILURE() << "no error for: " << c.contents;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << e.what() << " (expected: " << c.message << ")";
    }
  }
}

// On the command line: a bad file is one line naming it and the line, exit status 1; a sentence
// without "# text" is skipped and counted.
TEST(DependencyHeadsCommand, BadTreebankAndSkippedSentence) {
  const TempDir scratch;
  const fs::path bad = scratch / "bad.conllu";
  write_file(bad, "# text = a\n1\ta\t_\t_\t_\t_\t0\n");
  const std::string gpt2 = shipped_model("tiny-gpt2-brown").string();
  const CommandResult refused = run_attn({"heads", "-m", gpt2, "--deps", bad.string()});
  EXPECT_EQ(refused.exit_status, 1) << describe(refused);
  EXPECT_NE(refused.err.find(bad.string() + ": line 2: 7 tab-separated columns"), std::string::npos)
      << describe(refused);
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << describe(refused);

  const fs::path two = scratch / "two.conllu";
  write_file(two,
             "# sent_id = s1\n# text = The cat sat.\n"
             "1\tThe\t_\t_\t_\t_\t2\tdet\t_\t_\n2\tcat\t_\t_\t_\t_\t3\tnsubj\t_\t_\n"
             "3\tsat\t_\t_\t_\t_\t0\troot\t_\t_\n4\t.\t_\t_\t_\t_\t3\tpunct\t_\t_\n\n"
             "# sent_id = s2\n1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n");
  const CommandResult run = run_attn({"heads", "-m", gpt2, "--deps", two.string(), "--json"});
  ASSERT_EQ(run.exit_status, 0) << describe(run);
  const json got = json::parse(run.out);
  EXPECT_EQ(got["treebank"]["aligned"], 1);
  EXPECT_EQ(got["treebank"]["skipped"][0]["sent_id"], "s2");
  EXPECT_EQ(got["treebank"]["skipped"][0]["reason"], "no '# text = ' comment");
  EXPECT_EQ(got["counts"]["pairs"], 3);

  const CommandResult texts = run_attn({"heads", "-m", gpt2, "--deps", two.string(), "a text"});
  EXPECT_EQ(texts.exit_status, 2) << describe(texts);
  EXPECT_NE(texts.err.find("--deps: the treebank's sentences are the texts"), std::string::npos);
}

// A SentencePiece model's sentences align: those skipped have a word without a token of its
// own (as GPT-2's), none a token that does not spell the text.
TEST(DependencyHeadsCommand, SentencePieceModelAligns) {
  ATTN_REQUIRE_SHARED();
  const CommandResult run =
      run_attn({"heads", "-m", (shared_dir() / "models" / "tiny-llama-brown").string(), "--deps",
                treebank_file().string(), "--json", "-q"});
  ASSERT_EQ(run.exit_status, 0) << describe(run);
  const json got = json::parse(run.out);
  EXPECT_GE(got["treebank"]["aligned"].get<int>(), 250);
  for (const json& skipped : got["treebank"]["skipped"]) {
    EXPECT_NE(skipped["reason"].get<std::string>().find("has no token of its own"),
              std::string::npos)
        << skipped.dump();
  }
}

// An encoder-decoder's dependency heads are its encoder's: bidirectional, scored in both
// directions, each sentence aligned with the source tokens.
TEST(DependencyHeadsCommand, EncoderDecoderScoresItsEncoder) {
  ATTN_REQUIRE_SHARED();
  for (const char* model : {"tiny-marian-random", "tiny-t5-random"}) {
    const CommandResult run = run_attn({"heads", "-m", (shared_dir() / "models" / model).string(),
                                        "--deps", treebank_file().string(), "--json", "-q"});
    ASSERT_EQ(run.exit_status, 0) << describe(run);
    const json got = json::parse(run.out);
    EXPECT_EQ(got["kind"], "encoder") << model;
    EXPECT_GE(got["treebank"]["aligned"].get<int>(), 250) << model;
    const json& scored = got["counts"]["scored"];
    EXPECT_EQ(scored["dep->head"], scored["head->dep"]) << model << ": both directions";
    const CommandResult text = run_attn({"heads", "-m", (shared_dir() / "models" / model).string(),
                                         "--deps", treebank_file().string(), "-q"});
    EXPECT_NE(text.out.find("the encoder's heads"), std::string::npos) << text.out;
  }
}

TEST(DependencyHeadsPage, ShowsGridsInChromium) {
  ATTN_REQUIRE_SHARED();
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  const TempDir scratch;
  const fs::path page = scratch / "deps.html";
  const CommandResult made =
      run_attn({"heads", "-m", shipped_model("tiny-bert-brown").string(), "--deps",
                treebank_file().string(), "--format", "html", "-o", page.string(), "-q"});
  ASSERT_EQ(made.exit_status, 0) << describe(made);
  const CommandResult shown = run_chromium(chromium, "file://" + page.string(), {"--dump-dom"});
  ASSERT_EQ(shown.exit_status, 0) << describe(shown);
  const std::string& dom = shown.out;
  EXPECT_NE(dom.find("data-rendered=\"true\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("all relations, dep-&gt;head"), std::string::npos);
  EXPECT_NE(dom.find("punct, head-&gt;dep"), std::string::npos) << "an encoder: both directions";
  // No head of tiny-bert-brown beats its relation's offset baseline (the reference says so):
  // none is outlined.
  const std::regex outlined("class=\"value( dark)? above\"");
  EXPECT_FALSE(std::regex_search(dom, outlined));
  // tiny-gpt2-brown has heads that do (case 3.2, det 3.3, ...).
  const fs::path gpt2_page = scratch / "deps-gpt2.html";
  const CommandResult gpt2 =
      run_attn({"heads", "-m", shipped_model("tiny-gpt2-brown").string(), "--deps",
                treebank_file().string(), "--format", "html", "-o", gpt2_page.string(), "-q"});
  ASSERT_EQ(gpt2.exit_status, 0) << describe(gpt2);
  const CommandResult gpt2_shown =
      run_chromium(chromium, "file://" + gpt2_page.string(), {"--dump-dom"});
  EXPECT_TRUE(std::regex_search(gpt2_shown.out, outlined));
}

}  // namespace
}  // namespace attn::test
