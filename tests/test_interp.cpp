// Issue 29, what heads and layers do: the logit lens (`attn lens`) and attention rollout and flow
// (`attn attention --rollout --flow`) against the Hugging Face references in
// ../shared/golden/interp/, the flow's maximum flows on a case solved by hand, the lens against
// each family's own output, the lens page in headless Chromium, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "src/tasks/attention_flow.h"
#include "tests/chromium_util.h"
#include "tests/cli_util.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The tolerances: lens log-probabilities after the embeddings and after every block;
// rollout and flow.
constexpr double kEmbeddingLensTolerance = 5e-5;
constexpr double kBlockLensTolerance = 1e-5;
constexpr double kFlowTolerance = 1e-6;

json read_json(const fs::path& path) { return json::parse(read_file(path)); }

fs::path interp_golden(const std::string& name) {
  return shared_dir() / "golden" / "interp" / name;
}

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
  const json golden = read_json(interp_golden("lens_" + model + ".json"));
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
      const double tolerance = k == 0 ? kEmbeddingLensTolerance : kBlockLensTolerance;
      double& worst = k == 0 ? worst_embedding : worst_block;
      for (int t = 0; t < positions; ++t) {
        for (int c = 0; c < 5; ++c) {
          const json& want = expected["top5"][k][t][c];
          const json& have = got["top5"][k][t][c];
          ASSERT_EQ(have[0], want[0]) << "depth " << k << ", position " << t << ", candidate " << c;
          const double delta = std::abs(have[1].get<double>() - want[1].get<double>());
          worst = std::max(worst, delta);
          EXPECT_LE(delta, tolerance) << "depth " << k << ", position " << t << ", candidate " << c;
        }
      }
    }
    EXPECT_EQ(got["target"]["id"], expected["target"]["id"]);
    EXPECT_EQ(got["target"]["token"], expected["target"]["token"]);
    EXPECT_EQ(got["target"]["rank"], expected["target"]["rank"]);
    for (int k = 0; k < depths; ++k) {
      EXPECT_NEAR(got["target"]["logprob"][k].get<double>(),
                  expected["target"]["logprob"][k].get<double>(),
                  k == 0 ? kEmbeddingLensTolerance : kBlockLensTolerance);
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
    const json masks = json::parse(fill.out);
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

// Every matrix of the three reference texts, written with 9 decimals, within 1e-6.
TEST(AttentionFlow, MatchesTheReference) {
  ATTN_REQUIRE_SHARED();
  const json golden = read_json(interp_golden("rollout_flow_tiny-bert-brown.json"));
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
            ASSERT_LE(delta, kFlowTolerance) << key << "[" << l << "][" << i << "][" << j << "]";
          }
        }
      }
    }
    ASSERT_EQ(got["flow_raw_last"].size(), 1u);
    const json& raw = text["flow_raw_last"];
    for (std::size_t i = 0; i < raw.size(); ++i) {
      for (std::size_t j = 0; j < raw[i].size(); ++j) {
        EXPECT_NEAR(got["flow_raw_last"][0][i][j].get<double>(), raw[i][j].get<double>(),
                    kFlowTolerance);
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
      {{"lens", "-m", marian, "a text"}, "lens: not implemented for encoder-decoders"},
      {{"lens", "-m", gpt2, "--target", " Paris France", "a text"}, "--target: ' Paris France' is"},
      {{"lens", "-m", gpt2, "--target", "", "a text"}, "--target: '' is 0 tokens"},
      {{"attention", "-m", gpt2, "a text", "--rollout", "--format", "bertviz"},
       "--rollout: bertviz's JSON has no place for it"},
      {{"attention", "-m", marian, "a text", "--flow"},
       "--flow: not implemented for encoder-decoders"},
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
  const TempDir scratch;
  const fs::path page = scratch / "flow.html";
  const CommandResult made = run_attn({"attention", "-m", shipped_model("tiny-bert-brown").string(),
                                       "the cat sat on the mat.", "--rollout", "--flow", "--format",
                                       "html", "-o", page.string()});
  ASSERT_EQ(made.exit_status, 0) << describe(made);
  for (const char* section : {"rollout", "flow"}) {
    const CommandResult shown = run_chromium(
        chromium, "file://" + page.string() + "#section=" + section + "&layer=2&query=2",
        {"--dump-dom"});
    ASSERT_EQ(shown.exit_status, 0) << describe(shown);
    const std::string& dom = shown.out;
    EXPECT_NE(dom.find(std::string("attention ") + section + " · 9 tokens · layer 2 (all heads)"),
              std::string::npos)
        << section;
    EXPECT_NE(dom.find("draws on the input tokens"), std::string::npos) << section;
    EXPECT_TRUE(std::regex_search(dom, std::regex("<label hidden=\"\">Head")))
        << section << ": the head selector is shown";
  }
}

// ---- Head ablation ---------------------------------------------------------------------------

// The tolerance for ablation NLLs, and mu (float32 means of float32 head outputs).
constexpr double kAblationTolerance = 1e-5;
constexpr double kMuTolerance = 1e-6;

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
    const json masks = read_json(interp_golden("mask_targets.json"));
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
  const CommandResult run = run_attn(args);
  EXPECT_EQ(run.exit_status, 0) << describe(run);
  return run.exit_status == 0 ? json::parse(run.out) : json();
}

class AblationGoldenTest : public testing::TestWithParam<const char*> {};

TEST_P(AblationGoldenTest, EveryHeadMatchesHuggingFace) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const json golden = read_json(interp_golden("ablation_" + model + ".json"));
  const TempDir scratch;
  const json got = run_ablation(model, golden, scratch);
  ASSERT_FALSE(got.is_null());
  for (const char* key :
       {"kind", "layers", "heads", "head_dim", "n_items", "n_scored", "n_positions_in_mean"}) {
    EXPECT_EQ(got[key], golden[key]) << key;
  }
  EXPECT_NEAR(got["baseline_mean_nll"].get<double>(), golden["baseline_mean_nll"].get<double>(),
              kAblationTolerance);
  double worst = 0;
  for (const char* kind : {"zero_ablation", "mean_ablation"}) {
    for (const char* field : {"mean_nll", "delta"}) {
      for (int l = 0; l < golden["layers"]; ++l) {
        for (int h = 0; h < golden["heads"]; ++h) {
          const double delta = std::abs(got[kind][field][l][h].get<double>() -
                                        golden[kind][field][l][h].get<double>());
          worst = std::max(worst, delta);
          EXPECT_LE(delta, kAblationTolerance) << kind << " " << field << " L" << l << "H" << h;
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
        ASSERT_LE(delta, kMuTolerance) << "mu L" << l << "H" << h << "[" << k << "]";
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
  const json golden = read_json(interp_golden("ablation_tiny-gpt2-brown.json"));
  const TempDir scratch;
  const json got =
      run_ablation("tiny-gpt2-brown", golden, scratch, {"--layers", "2-3", "--heads", "1"});
  ASSERT_FALSE(got.is_null());
  for (int l = 0; l < 4; ++l) {
    for (int h = 0; h < 4; ++h) {
      const json& delta = got["zero_ablation"]["delta"][l][h];
      if (l >= 2 && h == 1) {
        EXPECT_NEAR(delta.get<double>(), golden["zero_ablation"]["delta"][l][h].get<double>(),
                    kAblationTolerance);
      } else {
        EXPECT_TRUE(delta.is_null()) << l << "." << h;
      }
    }
  }
  EXPECT_EQ(got["zero_ablation"]["ranking"].size(), 2u);
}

TEST(Ablation, RefusesWhatItCannotScore) {
  ATTN_REQUIRE_SHARED();
  const TempDir scratch;
  const fs::path targets = scratch / "targets.txt";
  write_file(targets, "cat\n");
  const std::string gpt2 = shipped_model("tiny-gpt2-brown").string();
  const std::string bert = shipped_model("tiny-bert-brown").string();
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

}  // namespace
}  // namespace attn::test
