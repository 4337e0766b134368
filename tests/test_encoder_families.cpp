// Issue 9: the encoder families (BERT, RoBERTa, DistilBERT, ALBERT, XLM-R) against Hugging Face:
// FillMaskPipeline's top 10, hidden states after every layer, and the full logits at the masks.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "src/tasks/fill_mask.h"
#include "tests/cli_util.h"
#include "tests/encoder_checks.h"
#include "tests/golden.h"
#include "tests/hostile_util.h"
#include "tests/model_util.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class EncoderGolden : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ATTN_REQUIRE_SHARED(); }
  fs::path model_dir() const { return shared_dir() / "models" / GetParam(); }
  GoldenSet golden_set() const { return GoldenSet(GetParam()); }
  // meta.json's mask_token_id; the BERT golden has none, and its tokenizer is not new.
  int mask_id() const {
    const json meta = golden_set().json("meta.json");
    return meta.contains("mask_token_id") ? meta["mask_token_id"].get<int>()
                                          : model().tokenizer->mask_id().value();
  }
  // Loaded once per model: the tests use it read-only.
  const Model& model() const {
    static std::map<std::string, std::unique_ptr<Model>> loaded;
    auto& model = loaded[GetParam()];
    if (!model) model = load_model(model_dir());
    return *model;
  }
};

TEST_P(EncoderGolden, FillMaskTop10) {
  expect_fill_mask_matches(model(), golden_set(), tolerance::kFillMaskScore);
}

// The residual stream after the embeddings (ALBERT: after their projection to hidden_size, the
// input of layer 0) and after every layer, then the logits at the mask: each within
// tolerance::kHiddenOfLargest of the golden array's largest value.
TEST_P(EncoderGolden, HiddenStates) {
  const GoldenSet golden = golden_set();
  const ArchSpec& spec = model().spec();
  const json info = golden.json("hidden/info.json");
  const MaskedInput input = masked_input_from_ids(info["ids"].get<std::vector<int>>(), mask_id());
  const bool projected = fs::exists(golden.dir() / "hidden/embeddings_projected.npy");
  int checked = 0;
  ForwardObserver observer;
  observer.on_hidden = [&](int layer, const float* hidden, int rows) {
    // Hugging Face's last hidden state is before a pre-norm encoder's final norm (ModernBERT).
    if (layer == spec.n_layer) return;
    char name[32];
    if (layer < 0) {
      std::snprintf(name, sizeof name, projected ? "embeddings_projected.npy" : "embeddings.npy");
    } else {
      std::snprintf(name, sizeof name, "layer_%02d.npy", layer);
    }
    expect_hidden_close(name, std::span(hidden, std::size_t(rows) * spec.d_model),
                        golden.npy(std::string("hidden/") + name));
    ++checked;
  };
  const std::vector<float> logits = mask_logits(model(), input, &observer);
  EXPECT_EQ(checked, spec.n_layer + 1);
  expect_hidden_close("logits.npy", logits, golden.npy("hidden/logits.npy"));
}

// The full logits at the masks of the first three fill-mask sentences, within the decoders' logit
// bound (tolerance::kLogitAbsolute, kLogitRelative).
TEST_P(EncoderGolden, FullMaskLogits) {
  const GoldenSet golden = golden_set();
  const auto sentences = golden.jsonl("fill_mask.jsonl");
  double worst = 0;
  for (int i = 0; i < 3; ++i) {
    const MaskedInput input =
        masked_input_from_ids(sentences.at(i)["input_ids"].get<std::vector<int>>(), mask_id());
    const std::vector<float> logits = mask_logits(model(), input);
    const NpyArray want = golden.npy("logits/sentence" + std::to_string(i) + "_masks.npy");
    const Comparison c =
        compare(logits, want.values, tolerance::kLogitAbsolute, tolerance::kLogitRelative);
    worst = std::max(worst, c.worst_abs);
    EXPECT_LE(c.worst_ratio, 1.0) << "sentence " << i << ": logit " << c.worst_index << " is "
                                  << logits[c.worst_index] << ", golden "
                                  << want.values[c.worst_index];
  }
  std::cout << "worst |mask logit - golden| over 3 sentences: " << worst << "\n";
}

// RoBERTa gives a padding token written in the text position row padding_idx and does not count
// it (Hugging Face's create_position_ids_from_input_ids): the token after it has the position it
// would have without the padding. The embedding output is per token, so rows compare directly.
TEST(RobertaPositions, PaddingTokenTakesTheFixedRowAndIsNotCounted) {
  ATTN_REQUIRE_SHARED();
  const auto model = load_model(shared_dir() / "models/tiny-roberta-random");
  const int d = model->spec().d_model;
  auto embeddings = [&](const std::vector<int>& ids) {
    std::vector<float> result;
    ForwardObserver observer;
    observer.on_hidden = [&](int layer, const float* hidden, int rows) {
      if (layer < 0) result.assign(hidden, hidden + std::size_t(rows) * d);
    };
    last_logits(*model, ids, &observer);
    return result;
  };
  // <s> The cat </s> against <s> The <pad> cat </s> (padding_idx 1).
  const std::vector<float> plain = embeddings({0, 468, 3801, 2});
  const std::vector<float> padded = embeddings({0, 468, 1, 3801, 2});
  for (int row : {0, 1}) {
    EXPECT_EQ(std::vector(plain.begin() + row * d, plain.begin() + (row + 1) * d),
              std::vector(padded.begin() + row * d, padded.begin() + (row + 1) * d));
  }
  for (int row : {2, 3}) {  // cat, </s>: one row later in the padded input, same positions
    EXPECT_EQ(std::vector(plain.begin() + row * d, plain.begin() + (row + 1) * d),
              std::vector(padded.begin() + (row + 1) * d, padded.begin() + (row + 2) * d));
  }
  // The padding itself reads row padding_idx wherever it stands.
  const std::vector<float> pad_first = embeddings({1});
  const std::vector<float> pad_counted = embeddings({0, 1});
  EXPECT_EQ(std::vector(pad_first.begin(), pad_first.begin() + d),
            std::vector(pad_counted.begin() + d, pad_counted.begin() + 2 * d));
}

// [MASK] works for every model: on RoBERTa it is the model's own <mask>, space handling included.
TEST(FillMaskPortableMask, RobertaTakesMaskAsItsOwnMaskToken) {
  ATTN_REQUIRE_SHARED();
  const std::string model = (shared_dir() / "models/tiny-roberta-random").string();
  const CommandResult own =
      run_attn({"fill-mask", "-m", model, "The <mask> sat on the mat.", "--json"});
  const CommandResult portable =
      run_attn({"fill-mask", "-m", model, "The [MASK] sat on the mat.", "--json"});
  ASSERT_EQ(own.exit_status, 0) << describe(own);
  EXPECT_EQ(portable.exit_status, 0) << describe(portable);
  EXPECT_EQ(json::parse(portable.out)["masks"], json::parse(own.out)["masks"]);
  // <s> The <mask>: the space went with it.
  EXPECT_EQ(json::parse(own.out)["masks"][0]["position"], 2);
}

TEST(FillMaskPortableMask, TextWithoutAMaskNamesBothSpellings) {
  ATTN_REQUIRE_SHARED();
  expect_clean_failure(
      run_attn({"fill-mask", "-m", (shared_dir() / "models/tiny-xlmr-random").string(),
                "The cat sat on the mat."}),
      kBadInput, {"argument: no <mask> (or [MASK]) token in the input"});
}

// ModernBERT's local layers see local_attention / 2 keys on either side: with the window made
// wider than every sentence (window_check.json), every mask's top 10 is Hugging Face's without
// the window, which differs from the windowed golden.
TEST(ModernBertWindow, WithoutTheWindowTheTop10IsHuggingFacesWithoutIt) {
  ATTN_REQUIRE_SHARED();
  TempDir scratch;
  const auto model_dir = scratch / "tiny-modernbert-random";
  fs::copy(shared_dir() / "models/tiny-modernbert-random", model_dir);
  const GoldenSet golden("tiny-modernbert-random");
  json config = read_json_file(model_dir / "config.json");
  config["local_attention"] = 4096;
  write_file(model_dir / "config.json", config.dump());
  const auto model = load_model(model_dir);
  const json check = golden.json("window_check.json");
  const std::vector<json> sentences = golden.jsonl("fill_mask.jsonl");
  ASSERT_GT(check["differences"].size(), 0u);
  const FillMaskOptions options{.top_k = kGoldenTopK};
  for (const json& difference : check["differences"]) {
    const int sentence = difference["sentence"], mask = difference["mask"];
    const MaskedInput input = masked_input_from_ids(
        sentences.at(sentence)["input_ids"].get<std::vector<int>>(), *model->tokenizer->mask_id());
    const auto masks = fill_mask(*model, std::span(&input, 1), options)[0];
    const auto want = check["no_window_top10_ids"][sentence][mask].get<std::vector<int>>();
    EXPECT_EQ(candidate_ids(masks[mask]), want) << "sentence " << sentence << " mask " << mask;
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, EncoderGolden, encoder_family_models(), model_test_name);

}  // namespace
}  // namespace attn::test

namespace attn::test {
namespace {

// MPNetTokenizer.build_inputs_with_special_tokens: <s> A </s></s> B </s>, and every token type 0.
TEST(MpnetTokenizer, PairsAsMpnetBuildsThem) {
  ATTN_REQUIRE_SHARED();
  const auto tokenizer = load_tokenizer(shared_dir() / "models/tiny-mpnet-random");
  const std::vector<int> a = tokenizer->encode_plain("Hello there");
  const std::vector<int> b = tokenizer->encode_plain("General Kenobi");
  const int cls = 0, sep = 2;  // <s> and </s> in MPNet's vocab.txt
  std::vector<int> want = {cls};
  want.insert(want.end(), a.begin(), a.end());
  want.insert(want.end(), {sep, sep});
  want.insert(want.end(), b.begin(), b.end());
  want.push_back(sep);
  const Encoding encoding = tokenizer->encode("Hello there", "General Kenobi");
  EXPECT_EQ(encoding.ids, want);
  EXPECT_EQ(encoding.type_ids, std::vector<int>(want.size(), 0));
}

}  // namespace
}  // namespace attn::test
