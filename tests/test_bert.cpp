// Issue 3, fill-mask: BERT-base against Hugging Face's FillMaskPipeline (the tiny models' goldens
// are in test_encoder_families.cpp), packed batches against one input at a time, and the attn
// binary on bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "src/base/error.h"
#include "src/kernels/gemm.h"
#include "src/tasks/fill_mask.h"
#include "tests/cli_util.h"
#include "tests/encoder_checks.h"
#include "tests/golden.h"
#include "tests/hostile_util.h"
#include "tests/model_util.h"
#include "tests/safetensors_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

TEST(BertRandomFullSize, FillMaskTop10) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("bert");
  if (dir.empty())
    ATTN_SKIP_UNLESS_CI("full-size random BERT not generated (python3-numpy missing?)");
  auto model = load_model(dir);
  expect_fill_mask_matches(*model, GoldenSet("bert-base-random"),
                           tolerance::kFillMaskScoreBertBase);
}

// Inputs of different lengths with one to three masks, for the tests that need no goldens.
const std::vector<std::string>& sample_texts() {
  static const std::vector<std::string> texts = {
      "The capital of France is [MASK].",
      "He went to the [MASK] to buy some bread.",
      "[MASK] it represents a very considerable percentage of the churchgoing population.",
      "No one [MASK] pokes fun at manly [MASK].",
      "There were three major administrative tasks: the fixing [MASK] electoral districts, the "
      "[MASK] of voters, and the holding of [MASK] in the counties.",
      "The jury further said in term-end presentments that the City Executive Committee, which "
      "had over-all charge of the election, deserves the praise and thanks of the City of Atlanta "
      "for the manner in which the [MASK] was conducted.",
      "It was a [MASK] night.",
  };
  return texts;
}

void expect_same_predictions(const std::vector<std::vector<MaskPrediction>>& got,
                             const std::vector<std::vector<MaskPrediction>>& want,
                             double score_tolerance) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << "input " << i;
    for (std::size_t m = 0; m < got[i].size(); ++m) {
      EXPECT_EQ(got[i][m].position, want[i][m].position);
      EXPECT_EQ(candidate_ids(got[i][m]), candidate_ids(want[i][m])) << "input " << i;
      for (std::size_t rank = 0; rank < got[i][m].candidates.size(); ++rank) {
        const double diff =
            std::abs(got[i][m].candidates[rank].score - want[i][m].candidates[rank].score);
        worst = std::max(worst, diff);
        EXPECT_LE(diff, score_tolerance) << "input " << i << " mask " << m << " rank " << rank;
        EXPECT_EQ(got[i][m].candidates[rank].sequence, want[i][m].candidates[rank].sequence);
      }
    }
  }
  std::cout << "worst |packed score - one at a time|: " << worst << "\n";
}

// What --file does (all inputs packed into one batch) against one input per forward pass.
void expect_batched_equals_unbatched(const Model& model, const std::vector<std::string>& texts) {
  std::vector<MaskedInput> inputs;
  int total_tokens = 0;
  for (const auto& text : texts) {
    inputs.push_back(encode_masked_input(model, text));
    total_tokens += int(inputs.back().ids.size());
  }
  const FillMaskOptions packed{.top_k = kGoldenTopK, .max_batch_tokens = total_tokens};
  const FillMaskOptions one_at_a_time{.top_k = kGoldenTopK, .max_batch_tokens = 1};
  expect_same_predictions(fill_mask(model, inputs, packed), fill_mask(model, inputs, one_at_a_time),
                          tolerance::kOtherBatchScore);
}

// An encoder's matrices are packed for the GEMM at load (TensorSource::pack_matrices): f32 ones
// from the file, q8_0 and q4_0 ones converted at load, bf16 ones multiplied in bf16; a decoder's
// are not, unless loaded for many-row passes only (Gpt2Packed).
TEST(PackedMatrices, OnlyAnEncodersMatricesArePackedAtLoad) {
  EXPECT_TRUE(tiny_bert().packed_panels);
  EXPECT_TRUE(load_model(shipped_model("tiny-bert-brown"), WeightType::kQ8_0)->packed_panels);
  EXPECT_TRUE(load_model(shipped_model("tiny-bert-brown"), WeightType::kQ4_0)->packed_panels);
  EXPECT_FALSE(load_model(shipped_model("tiny-bert-brown"), WeightType::kF16)->packed_panels);
  // bf16 where its products are bf16: on a CPU with AVX512_BF16.
  EXPECT_EQ(bool(load_model(shipped_model("tiny-bert-brown"), WeightType::kBF16)->packed_panels),
            gemm_kernels().bf16 != nullptr);
  EXPECT_FALSE(load_model(shipped_model("tiny-gpt2-brown"))->packed_panels);
}

TEST(FillMaskBatch, PackedEqualsOneAtATime) {
  expect_batched_equals_unbatched(tiny_bert(), sample_texts());
}

TEST(FillMaskBatch, PackedEqualsOneAtATimeOnGoldenSentences) {
  ATTN_REQUIRE_SHARED();
  std::vector<std::string> texts;
  for (const json& sentence : GoldenSet("tiny-bert-brown").jsonl("fill_mask.jsonl"))
    texts.push_back(sentence["text"]);
  expect_batched_equals_unbatched(tiny_bert(), texts);
}

TEST(FillMaskBatch, SeveralBatchesInInputOrder) {
  const Model& model = tiny_bert();
  std::vector<MaskedInput> inputs;
  for (const auto& text : sample_texts()) inputs.push_back(encode_masked_input(model, text));
  // About two inputs per batch.
  const FillMaskOptions small_batches{.top_k = 5, .max_batch_tokens = 40};
  std::vector<std::size_t> order;
  fill_mask(model, inputs, small_batches,
            [&](std::size_t i, std::vector<MaskPrediction>) { order.push_back(i); });
  std::vector<std::size_t> expected(inputs.size());
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  expect_same_predictions(fill_mask(model, inputs, small_batches),
                          fill_mask(model, inputs, FillMaskOptions{.top_k = 5}),
                          tolerance::kOtherBatchScore);
}

// Hugging Face's postprocessing: token = decode([id]); the sequence is the input with the mask
// replaced, decoded without special tokens for one mask and with them for several (so that the
// other masks stay visible); scores are probabilities, best first.
TEST(FillMask, CandidatesAsHuggingFacePipeline) {
  const Model& model = tiny_bert();
  const Tokenizer& tokenizer = *model.tokenizer;
  for (const std::string text :
       {"He went to the [MASK] to buy some bread.", "No one [MASK] pokes fun at manly [MASK]."}) {
    const MaskedInput input = encode_masked_input(model, text);
    const auto masks = fill_mask(model, std::span(&input, 1), FillMaskOptions{.top_k = 5})[0];
    ASSERT_EQ(masks.size(), input.mask_positions.size());
    for (const MaskPrediction& mask : masks) {
      ASSERT_EQ(mask.candidates.size(), 5u);
      for (std::size_t rank = 0; rank < mask.candidates.size(); ++rank) {
        const FillMaskCandidate& candidate = mask.candidates[rank];
        std::vector<int> filled = input.ids;
        filled[mask.position] = candidate.token_id;
        EXPECT_EQ(candidate.token, tokenizer.decode(std::span(&candidate.token_id, 1), false));
        EXPECT_EQ(candidate.sequence, tokenizer.decode(filled, masks.size() == 1));
        EXPECT_GT(candidate.score, 0.0f);
        if (rank > 0) {
          EXPECT_LE(candidate.score, mask.candidates[rank - 1].score);
        }
      }
    }
  }
}

TEST(FillMask, TopKIsTheWholeVocabulary) {
  const Model& model = tiny_bert();
  const MaskedInput input = encode_masked_input(model, "It was a [MASK] night.");
  const FillMaskOptions options{.top_k = model.spec().vocab_size};
  const auto masks = fill_mask(model, std::span(&input, 1), options)[0];
  double total = 0;
  for (const auto& candidate : masks[0].candidates) total += candidate.score;
  EXPECT_NEAR(total, 1.0, tolerance::kProbabilitySum);
}

TEST(FillMask, PairHasSecondSegment) {
  const Model& model = tiny_bert();
  const MaskedInput input =
      encode_masked_input(model, "He went to the [MASK].", std::string_view("He bought bread."));
  const Encoding encoding = model.tokenizer->encode("He went to the [MASK].", "He bought bread.");
  EXPECT_EQ(input.ids, encoding.ids);
  EXPECT_EQ(input.type_ids, encoding.type_ids);
  EXPECT_EQ(input.type_ids.back(), 1);
}

TEST(FillMask, TruncateKeepsTheStartAndTheFinalSep) {
  const Model& model = tiny_bert();
  std::string text = "The [MASK] said";
  for (int i = 0; i < 600; ++i) text += " word";
  EXPECT_THROW(encode_masked_input(model, text), Error);
  const MaskedInput input = encode_masked_input(model, text, std::nullopt, true);
  const Encoding full = model.tokenizer->encode(text);
  const std::size_t max_length = model.spec().max_positions;
  ASSERT_EQ(input.ids.size(), max_length);
  EXPECT_EQ(input.dropped_tokens, int(full.ids.size() - max_length));
  EXPECT_TRUE(std::equal(input.ids.begin(), input.ids.end() - 1, full.ids.begin()));
  EXPECT_EQ(input.ids.back(), full.ids.back());
  EXPECT_EQ(input.mask_positions, std::vector<int>{2});
}

// --- the attn binary ---

// A copy of the shipped tiny BERT for a test to break, in its own scratch folder.
class FillMaskCliTest : public ::testing::Test {
 protected:
  std::filesystem::path copy_tiny_bert() {
    const auto copy = scratch_ / "tiny-bert-brown";
    std::filesystem::copy(shipped_model("tiny-bert-brown"), copy);
    return copy;
  }

  // Replaces line `line_number` (1-based) of a copied vocab.txt. An older model folder has no
  // tokenizer.json (which attn would read instead of vocab.txt) and no added_tokens_decoder in
  // tokenizer_config.json, so vocab.txt alone says which ids the special tokens have.
  static void replace_vocab_line(const std::filesystem::path& model, int line_number,
                                 const std::string& token) {
    std::filesystem::remove(model / "tokenizer.json");
    json config = json::parse(read_file(model / "tokenizer_config.json"));
    config.erase("added_tokens_decoder");
    write_file(model / "tokenizer_config.json", config.dump());
    std::istringstream in(read_file(model / "vocab.txt"));
    std::string out;
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      out += (++number == line_number ? token : line) + "\n";
    }
    write_file(model / "vocab.txt", out);
  }

  TempDir scratch_;
};

TEST_F(FillMaskCliTest, PrintsEveryMask) {
  const CommandResult result =
      run_attn({"fill-mask", "No one [MASK] pokes fun at [MASK].", "-k", "3"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_NE(result.out.find("[MASK] 1 of 2, at token 3:"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("[MASK] 2 of 2, at token 8:"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("probability"), std::string::npos) << result.out;
}

TEST_F(FillMaskCliTest, JsonMatchesTheLibrary) {
  const std::string text = "He went to the [MASK] to buy some bread.";
  const CommandResult result = run_attn({"fill-mask", "--json", "-k", "4", text});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(json::parse(result.out)["text"], text);
  const json out = json::parse(result.out)["masks"];
  const MaskedInput input = encode_masked_input(tiny_bert(), text);
  const auto masks = fill_mask(tiny_bert(), std::span(&input, 1), FillMaskOptions{.top_k = 4})[0];
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]["position"], masks[0].position);
  ASSERT_EQ(out[0]["candidates"].size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const json& candidate = out[0]["candidates"][rank];
    EXPECT_EQ(candidate["token_id"], masks[0].candidates[rank].token_id);
    EXPECT_EQ(candidate["token"], masks[0].candidates[rank].token);
    EXPECT_EQ(candidate["sequence"], masks[0].candidates[rank].sequence);
    // The CLI's score (through JSON) against the library's for the same input: not a golden.
    EXPECT_NEAR(candidate["score"].get<double>(), masks[0].candidates[rank].score,
                tolerance::kSameRows);
  }
}

TEST_F(FillMaskCliTest, PairIsTheSecondSegment) {
  // As Hugging Face's tokenizer(A, B): [CLS] A [SEP] B [SEP], type id 1 for B and its [SEP].
  const std::string model = shipped_model("tiny-bert-brown");
  const CommandResult pair = run_attn(
      {"tokenize", "-m", model, "--json", "He went to the [MASK].", "--pair", "He bought bread."});
  ASSERT_EQ(pair.exit_status, 0) << describe(pair);
  const json encoding = json::parse(pair.out);
  EXPECT_EQ(encoding["tokens"], json({"[CLS]", "he", "went", "to", "the", "[MASK]", ".", "[SEP]",
                                      "he", "bought", "bread", ".", "[SEP]"}));
  EXPECT_EQ(encoding["type_ids"], json({0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  // A [SEP] written in one text is a token of that text, type id 0 like every other.
  const CommandResult single = run_attn(
      {"tokenize", "-m", model, "--json", "He went to the [MASK]. [SEP] He bought bread."});
  ASSERT_EQ(single.exit_status, 0) << describe(single);
  EXPECT_EQ(json::parse(single.out)["ids"], encoding["ids"]);

  const CommandResult filled =
      run_attn({"fill-mask", "--json", "He went to the [MASK].", "--pair", "He bought bread."});
  ASSERT_EQ(filled.exit_status, 0) << describe(filled);
  EXPECT_EQ(json::parse(filled.out)["pair"], "He bought bread.");
  const json masks = json::parse(filled.out)["masks"];
  ASSERT_EQ(masks.size(), 1u) << filled.out;
  EXPECT_EQ(masks[0]["position"], 5);
  EXPECT_NE(
      masks,
      json::parse(run_attn({"fill-mask", "--json", "He went to the [MASK]. [SEP] He bought bread."})
                      .out)["masks"])
      << "the type ids of the second segment change the model's output";
}

TEST_F(FillMaskCliTest, FileGivesOneJsonLinePerInputAndReportsBadLines) {
  std::string contents;
  for (const auto& text : sample_texts()) contents += text + "\n";
  // Line 8 is blank (skipped), 9 ends in CRLF, 10 has no newline.
  contents += "\nno mask here\r\nIt was a [MASK] day.";
  write_file(scratch_ / "inputs.txt", contents);
  const CommandResult result = run_attn({"fill-mask", "--json", "--file", scratch_ / "inputs.txt"});
  EXPECT_EQ(result.exit_status, kBadInput) << describe(result);
  const std::string file = "--file " + (scratch_ / "inputs.txt").string();
  EXPECT_EQ(result.err, "attn: error: " + file + ": line 9: no [MASK] token in the input\n");

  std::vector<std::string> texts = sample_texts();
  texts.push_back("It was a [MASK] day.");
  const auto expected = fill_mask(tiny_bert(), texts, FillMaskOptions{});
  std::istringstream lines(result.out);
  std::size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    ASSERT_LT(i, texts.size());
    const json out = json::parse(line);
    EXPECT_EQ(out["line"], i < 7 ? i + 1 : 10);
    EXPECT_EQ(out["text"], texts[i]);
    ASSERT_EQ(out["masks"].size(), expected[i].size());
    for (std::size_t m = 0; m < expected[i].size(); ++m) {
      EXPECT_EQ(out["masks"][m]["position"], expected[i][m].position);
      for (std::size_t rank = 0; rank < expected[i][m].candidates.size(); ++rank) {
        EXPECT_EQ(out["masks"][m]["candidates"][rank]["token_id"],
                  expected[i][m].candidates[rank].token_id);
      }
    }
  }
  EXPECT_EQ(i, texts.size());
}

TEST_F(FillMaskCliTest, FileFromStandardInput) {
  write_file(scratch_ / "inputs.txt", "It was a [MASK] night.\n");
  const CommandResult result =
      run_attn({"fill-mask", "--json", "--file", "-"}, scratch_ / "inputs.txt");
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json line = json::parse(result.out);
  EXPECT_EQ(line["line"], 1);
  EXPECT_EQ(line["text"], "It was a [MASK] night.");
  // Without --json, a line of standard input prints as text too: the text, then its table.
  const CommandResult plain = run_attn({"fill-mask", "--file", "-"}, scratch_ / "inputs.txt");
  ASSERT_EQ(plain.exit_status, 0) << describe(plain);
  EXPECT_TRUE(plain.out.starts_with("It was a [MASK] night.\n[MASK] at token 4:\n")) << plain.out;
  EXPECT_NE(plain.out.find("probability"), std::string::npos) << plain.out;
}

TEST_F(FillMaskCliTest, MissingFile) {
  expect_clean_failure(run_attn({"fill-mask", "--file", scratch_ / "absent.txt"}), kBadInput,
                       {"--file", "absent.txt", "cannot open"});
}

TEST_F(FillMaskCliTest, EmptyFile) {
  write_file(scratch_ / "empty.txt", "");
  expect_clean_failure(run_attn({"fill-mask", "--file", scratch_ / "empty.txt"}), kBadInput,
                       {"--file " + (scratch_ / "empty.txt").string() + ": no text\n"});
}

TEST_F(FillMaskCliTest, NoMask) {
  expect_clean_failure(run_attn({"fill-mask", "The capital of France is Paris."}), kBadInput,
                       {"argument: no [MASK] token in the input"});
}

TEST_F(FillMaskCliTest, NoTextReadsStandardInput) {
  // Without a text or --file, fill-mask reads standard input (here /dev/null: no text at all).
  expect_clean_failure(run_attn({"fill-mask"}), kBadInput, {"standard input: no text"});
}

TEST_F(FillMaskCliTest, TopKOutOfRange) {
  expect_clean_failure(run_attn({"fill-mask", "-k", "0", "a [MASK]."}), kUsageError,
                       {"--top-k", "0"});
  expect_clean_failure(run_attn({"fill-mask", "--top-k", "30523", "a [MASK]."}), kUsageError,
                       {"--top-k", "30523", "30522"});
}

TEST_F(FillMaskCliTest, DecoderModel) {
  expect_clean_failure(run_attn({"fill-mask", "-m", shipped_model("tiny-gpt2-brown"), "a [MASK]."}),
                       kUsageError, {"tiny-gpt2-brown", "decoder"});
}

TEST_F(FillMaskCliTest, BareBertModelHasNoHead) {
  const auto model = copy_tiny_bert();
  std::vector<RawTensor> tensors = read_safetensors(model / "model.safetensors");
  std::erase_if(tensors, [](const RawTensor& t) { return t.name.starts_with("cls."); });
  write_safetensors(model / "model.safetensors", tensors);
  expect_clean_failure(
      run_attn({"fill-mask", "-m", model, "a [MASK]."}), kBadInput,
      {"masked-LM head", "cls.predictions.transform.dense.weight", "cls.predictions.bias"});
  expect_clean_failure(run_attn({"bench", "-m", model, "-p", "8", "-r", "1"}), kBadInput,
                       {"masked-LM head"});
}

TEST_F(FillMaskCliTest, LongerThanTheContext) {
  std::string text = "The [MASK] said";
  for (int i = 0; i < 600; ++i) text += " word";
  expect_clean_failure(run_attn({"fill-mask", text}), kBadInput,
                       {"argument: ", "max_position_embeddings", "--truncate"});
  const CommandResult truncated = run_attn({"fill-mask", "--truncate", "--json", text});
  ASSERT_EQ(truncated.exit_status, 0) << describe(truncated);
  EXPECT_EQ(json::parse(truncated.out)["masks"][0]["position"], 2);
  // The only mask is cut off.
  const std::string late_mask = text.substr(text.find("said")) + " [MASK]";
  expect_clean_failure(run_attn({"fill-mask", "--truncate", late_mask}), kBadInput,
                       {"argument: ", "no [MASK] token", "truncation"});
}

TEST_F(FillMaskCliTest, DuplicateVocabularyToken) {
  const auto model = copy_tiny_bert();
  replace_vocab_line(model, 2000, "the");
  expect_clean_failure(run_attn({"fill-mask", "-m", model, "a [MASK]."}), kBadInput,
                       {"vocab.txt", "duplicate token 'the'"});
}

TEST_F(FillMaskCliTest, VocabularyWithoutMaskToken) {
  const auto model = copy_tiny_bert();
  replace_vocab_line(model, 104, "[NOT-A-MASK]");  // line 104 = id 103 = [MASK]
  // [MASK] becomes an added token past the vocabulary, as in transformers, and the model's
  // embedding has no row for it.
  expect_clean_failure(run_attn({"fill-mask", "-m", model, "a [MASK]."}), kBadInput,
                       {"config.json", "vocab_size"});
}

TEST_F(FillMaskCliTest, VocabularyWithoutUnknownToken) {
  const auto model = copy_tiny_bert();
  replace_vocab_line(model, 101, "[NOT-UNK]");  // id 100 = [UNK]
  expect_clean_failure(run_attn({"fill-mask", "-m", model, "a [MASK]."}), kBadInput,
                       {"vocab.txt", "[UNK]", "not in the vocabulary"});
}

TEST_F(FillMaskCliTest, EncoderBenchJson) {
  const CommandResult result = run_attn({"bench", "-m", shipped_model("tiny-bert-brown"), "-p",
                                         "32", "-r", "1", "--batch", "2", "--json"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  for (const char* key : {"ms_per_sequence", "sequences_per_s", "load_ms", "peak_rss_mb"}) {
    EXPECT_TRUE(out.contains(key)) << key;
    EXPECT_GT(out[key].get<double>(), 0) << key;
  }
}

}  // namespace
}  // namespace attn::test
