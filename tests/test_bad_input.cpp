// Issue 2, "bad input": the attn binary on missing and broken model folders, broken
// config.json and model.safetensors, bad prompts and bad option values. Every failure must be
// exactly one line on stderr naming the file or option and the problem, exit status 1 (2 for a
// bad command line), no crash, and no file changed. Also smoke tests of info, tokenize and
// generate --json on the shipped models.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli_util.h"
#include "tests/hostile_util.h"
#include "tests/safetensors_util.h"
#include "tests/test_paths.h"
#include "tests/tokenizer_test_util.h"

namespace attn::test {
namespace {

using nlohmann::json;

// The hostile-input fixture, plus `attn info`, which loads everything a model folder holds:
// config, weights and tokenizer.
class BadInputTest : public HostileTest {
 protected:
  CommandResult info(const std::filesystem::path& model) { return run({"info", "-m", model}); }
};

void edit_config(const std::filesystem::path& model, const std::function<void(json&)>& edit) {
  json config = json::parse(read_file(model / "config.json"));
  edit(config);
  write_file(model / "config.json", config.dump(2));
}

// ---- Missing folders and files ----

TEST_F(BadInputTest, MissingModelFolder) {
  const auto missing = scratch_ / "no-such-model";
  expect_clean_failure(info(missing), kBadInput, {missing.string() + ": model folder not found"});
}

TEST_F(BadInputTest, ModelFolderIsAFile) {
  const auto file = scratch_ / "model.txt";
  write_file(file, "not a folder");
  expect_clean_failure(info(file), kBadInput, {file.string() + ": model folder not found"});
}

TEST_F(BadInputTest, MissingConfigJson) {
  const auto model = copy_model("tiny-gpt2-brown");
  std::filesystem::remove(model / "config.json");
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() + ": cannot open file"});
}

TEST_F(BadInputTest, MissingWeights) {
  const auto model = copy_model("tiny-gpt2-brown");
  std::filesystem::remove(model / "model.safetensors");
  expect_clean_failure(info(model), kBadInput,
                       {model.string() + ": no weights attn can read (it reads model.safetensors, "
                                         "model.safetensors.index.json, pytorch_model.bin or "
                                         "pytorch_model.bin.index.json)"});
}

TEST_F(BadInputTest, MissingGpt2TokenizerFiles) {
  const auto model = copy_model("tiny-gpt2-brown");
  for (const char* file : {"vocab.json", "merges.txt", "tokenizer.json"}) {
    std::filesystem::remove(model / file);
  }
  expect_clean_failure(
      info(model), kBadInput,
      {model.string() + ": no tokenizer files",
       "tokenizer.json, source.spm, tokenizer.model, spiece.model, sentencepiece.bpe.model, "
       "vocab.json + merges.txt and vocab.txt"});
}

TEST_F(BadInputTest, MissingBertVocabulary) {
  const auto model = copy_model("tiny-bert-brown");
  for (const char* file : {"vocab.txt", "tokenizer.json"}) std::filesystem::remove(model / file);
  expect_clean_failure(
      info(model), kBadInput,
      {model.string() + ": no tokenizer files",
       "tokenizer.json, source.spm, tokenizer.model, spiece.model, sentencepiece.bpe.model, "
       "vocab.json + merges.txt and vocab.txt"});
}

// ---- config.json ----

TEST_F(BadInputTest, ConfigNotJson) {
  const auto model = copy_model("tiny-gpt2-brown");
  write_file(model / "config.json", "{\"model_type\": \"gpt2\",\n  n_embd: 128}\n");
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() + ": not valid JSON", "line 2"});
}

TEST_F(BadInputTest, ConfigWithAnUnterminatedStringGivesAShortMessage) {
  const auto model = copy_model("tiny-gpt2-brown");
  write_file(model / "config.json", "{\"model_type\": \"" + std::string(100'000, 'x'));
  const CommandResult result = info(model);
  expect_clean_failure(result, kBadInput,
                       {(model / "config.json").string() + ": not valid JSON", "line 1"});
  EXPECT_LT(result.err.size(), 400u) << result.err.substr(0, 1000);
}

TEST_F(BadInputTest, ConfigEmpty) {
  const auto model = copy_model("tiny-gpt2-brown");
  write_file(model / "config.json", "");
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() + ": not valid JSON"});
}

TEST_F(BadInputTest, ConfigJsonIsAFolder) {
  const auto model = copy_model("tiny-gpt2-brown");
  std::filesystem::remove(model / "config.json");
  std::filesystem::create_directory(model / "config.json");
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() + ": is a folder, not a file"});
}

TEST_F(BadInputTest, LongBadValueIsCutShort) {
  const auto model = copy_model("tiny-gpt2-brown");
  edit_config(model, [](json& config) { config["n_embd"] = std::vector<int>(10000, 128); });
  const CommandResult result = info(model);
  expect_clean_failure(result, kBadInput,
                       {(model / "config.json").string() +
                        ": field 'n_embd' must be a positive integer, got [128,128,"});
  EXPECT_LT(result.err.size(), 300u) << result.err;
}

TEST_F(BadInputTest, ConfigNotAnObject) {
  const auto model = copy_model("tiny-gpt2-brown");
  write_file(model / "config.json", "[\"gpt2\", 128]");
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() + ": expected a JSON object"});
}

// One field of config.json set to a bad value (or removed, for a null value), and what the one
// error line must then say about which file.
struct ConfigCase {
  const char* test_name;
  const char* model;
  const char* field;
  json value;
  const char* file;  // the file the error names
  const char* problem;
};

std::ostream& operator<<(std::ostream& out, const ConfigCase& c) { return out << c.test_name; }

class BadConfigTest : public BadInputTest, public ::testing::WithParamInterface<ConfigCase> {};

TEST_P(BadConfigTest, OneLineNamingTheFieldAndTheProblem) {
  const ConfigCase& c = GetParam();
  // The shipped models, or (issue 8's decoder families) the test models of ../shared.
  std::filesystem::path model;
  if (std::filesystem::exists(shipped_model(c.model))) {
    model = copy_model(c.model);
  } else {
    ATTN_REQUIRE_SHARED();
    model = scratch_ / c.model;
    std::filesystem::copy(shared_dir() / "models" / c.model, model);
  }
  edit_config(model, [&](json& config) {
    if (c.value.is_null()) {
      config.erase(c.field);
    } else {
      config[c.field] = c.value;
    }
  });
  expect_clean_failure(info(model), kBadInput, {(model / c.file).string() + ": " + c.problem});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadConfigTest,
    ::testing::Values(
        ConfigCase{"MissingNEmbd", "tiny-gpt2-brown", "n_embd", nullptr, "config.json",
                   "field 'n_embd' is missing"},
        ConfigCase{"NegativeNEmbd", "tiny-gpt2-brown", "n_embd", -128, "config.json",
                   "field 'n_embd' must be a positive integer, got -128"},
        ConfigCase{"ZeroNLayer", "tiny-gpt2-brown", "n_layer", 0, "config.json",
                   "field 'n_layer' must be a positive integer, got 0"},
        ConfigCase{"FractionalNHead", "tiny-gpt2-brown", "n_head", 2.5, "config.json",
                   "field 'n_head' must be a positive integer, got 2.5"},
        ConfigCase{"StringNPositions", "tiny-gpt2-brown", "n_positions", "512", "config.json",
                   "field 'n_positions' must be a positive integer, got \"512\""},
        ConfigCase{"HugeVocabSize", "tiny-gpt2-brown", "vocab_size", 1'000'000'000'000,
                   "config.json",
                   "field 'vocab_size' must be a positive integer, got 1000000000000"},
        ConfigCase{"NHeadNotDividingNEmbd", "tiny-gpt2-brown", "n_head", 3, "config.json",
                   "field 'n_head' must divide n_embd"},
        ConfigCase{"NegativeLayerNormEpsilon", "tiny-gpt2-brown", "layer_norm_epsilon", -1e-5,
                   "config.json", "field 'layer_norm_epsilon' must be a positive number"},
        ConfigCase{"MissingModelType", "tiny-gpt2-brown", "model_type", nullptr, "config.json",
                   "field 'model_type' is missing"},
        ConfigCase{"UnknownModelType", "tiny-gpt2-brown", "model_type", "mamba", "config.json",
                   "field 'model_type' is 'mamba', which attn does not support"},
        ConfigCase{"ModelTypeWithANewline", "tiny-gpt2-brown", "model_type", "gpt\n2",
                   "config.json", "field 'model_type' is 'gpt\\x0A2', which attn does not support"},
        ConfigCase{"BertZeroHiddenSize", "tiny-bert-brown", "hidden_size", 0, "config.json",
                   "field 'hidden_size' must be a positive integer, got 0"},
        ConfigCase{"BertHeadsNotDividingHiddenSize", "tiny-bert-brown", "num_attention_heads", 5,
                   "config.json",
                   "field 'num_attention_heads' is 5, which does not divide the hidden size 128"},
        ConfigCase{"BertMissingIntermediateSize", "tiny-bert-brown", "intermediate_size", nullptr,
                   "config.json", "field 'intermediate_size' is missing"},
        // Well-formed, but the weights were made for another shape.
        ConfigCase{"NInnerDisagreeingWithWeights", "tiny-gpt2-brown", "n_inner", 256,
                   "model.safetensors",
                   "tensor 'transformer.h.0.mlp.c_fc.weight' has shape [128, 512] but "
                   "config.json implies [128, 256]"},
        ConfigCase{"BertVocabSizeDisagreeingWithWeights", "tiny-bert-brown", "vocab_size", 40000,
                   "model.safetensors",
                   "tensor 'bert.embeddings.word_embeddings.weight' has shape [30522, 128] but "
                   "config.json implies [40000, 128]"}),
    [](const auto& info) { return std::string(info.param.test_name); });

// ---- The decoder families of issue 8 (their folders are in ../shared) ----

INSTANTIATE_TEST_SUITE_P(
    Families, BadConfigTest,
    ::testing::Values(
        ConfigCase{"HeadsNotDividingHiddenSize", "tiny-qwen2-random", "num_attention_heads", 6,
                   "config.json",
                   "field 'num_attention_heads' is 6, which does not divide the hidden size 64 "
                   "(and no head_dim is given)"},
        ConfigCase{"KvHeadsNotDividingHeads", "tiny-qwen2-random", "num_key_value_heads", 3,
                   "config.json",
                   "field 'num_key_value_heads' is 3, which does not divide "
                   "num_attention_heads = 4"},
        ConfigCase{"ZeroKvHeads", "tiny-llama3-random", "num_key_value_heads", 0, "config.json",
                   "field 'num_key_value_heads' must be a positive integer, got 0"},
        ConfigCase{"PartialRotaryFactorAboveOne", "tiny-phi-random", "partial_rotary_factor", 1.5,
                   "config.json",
                   "field 'partial_rotary_factor' must be a number from 0 to 1, got 1.5"},
        ConfigCase{"PartialRotaryFactorZero", "tiny-phi-random", "partial_rotary_factor", 0,
                   "config.json", "field 'partial_rotary_factor' must be more than 0"},
        ConfigCase{"PartialRotaryFactorNegative", "tiny-phi-random", "partial_rotary_factor", -0.5,
                   "config.json",
                   "field 'partial_rotary_factor' must be a number from 0 to 1, got -0.5"},
        ConfigCase{"PartialRotaryFactorGivingAnOddDimension", "tiny-phi-random",
                   "partial_rotary_factor", 0.5625, "config.json",
                   "field 'partial_rotary_factor' gives a rotary dimension of 9 (of head_dim 16); "
                   "it must be even and at least 2"},
        ConfigCase{"RotaryPctGivingOneDimension", "tiny-neox-random", "rotary_pct", 0.0625,
                   "config.json",
                   "field 'rotary_pct' gives a rotary dimension of 1 (of head_dim 16)"},
        ConfigCase{"UnknownRopeScalingType", "tiny-llama3-random", "rope_scaling",
                   json{{"type", "yarn"}, {"factor", 4}}, "config.json",
                   "field 'rope_scaling.type' is 'yarn', which attn does not implement (known: "
                   "linear, dynamic, llama3, longrope)"},
        ConfigCase{"UnknownRopeScalingTypeWithoutFactor", "tiny-llama3-random", "rope_scaling",
                   json{{"rope_type", "yarn"}}, "config.json",
                   "field 'rope_scaling.rope_type' is 'yarn', which attn does not implement"},
        ConfigCase{"LongRopeFactorsOfTheWrongLength", "tiny-phi3-longrope-random", "rope_scaling",
                   json{{"type", "longrope"}, {"short_factor", {1, 2}}, {"long_factor", {1, 2}}},
                   "config.json",
                   "field 'rope_scaling.short_factor' must list 8 numbers (one per rotated pair)"},
        ConfigCase{"LongRopeFactorNotPositive", "tiny-phi3-longrope-random", "rope_scaling",
                   json{{"type", "longrope"},
                        {"short_factor", {1, 1, 1, 1, 1, 1, 1, 1}},
                        {"long_factor", {1, 1, 1, 0, 1, 1, 1, 1}}},
                   "config.json",
                   "field 'rope_scaling.long_factor' must hold positive numbers, got 0"},
        ConfigCase{"GemmaLayerTypesOfTheWrongLength", "tiny-gemma3-random", "layer_types",
                   json{"sliding_attention", "full_attention"}, "config.json",
                   "field 'layer_types' must list one type per layer (5)"},
        ConfigCase{"ModernBertGlobalEveryZeroLayers", "tiny-modernbert-random",
                   "global_attn_every_n_layers", 0, "config.json",
                   "field 'global_attn_every_n_layers' must be a positive integer, got 0"},
        ConfigCase{"ModernBertNegativeLocalAttention", "tiny-modernbert-random", "local_attention",
                   -8, "config.json", "field 'local_attention' must be a positive integer, got -8"},
        ConfigCase{"ModernBertNormBiasWithoutBiases", "tiny-modernbert-random", "norm_bias", true,
                   "model.safetensors",
                   "missing tensor 'model.embeddings.norm.bias' (nor 'embeddings.norm.bias')"},
        ConfigCase{"RopeScalingNotAnObject", "tiny-llama3-random", "rope_scaling", "linear",
                   "config.json", "field 'rope_scaling' must be an object, got \"linear\""},
        ConfigCase{"RopeScalingWithoutFactor", "tiny-llama3-random", "rope_scaling",
                   json{{"type", "linear"}}, "config.json",
                   "field 'rope_scaling.factor' is missing"},
        ConfigCase{"Llama3ScalingWithHighBelowLowFrequencyFactor", "tiny-llama3-random",
                   "rope_scaling",
                   json{{"rope_type", "llama3"},
                        {"factor", 8},
                        {"low_freq_factor", 4},
                        {"high_freq_factor", 1},
                        {"original_max_position_embeddings", 256}},
                   "config.json",
                   "field 'rope_scaling.high_freq_factor' must be larger than low_freq_factor"},
        ConfigCase{"RopeThetaZero", "tiny-qwen2-random", "rope_theta", 0, "config.json",
                   "field 'rope_theta' must be a positive number"},
        ConfigCase{"UnknownHiddenAct", "tiny-llama3-random", "hidden_act", "mish", "config.json",
                   "field 'hidden_act' is 'mish', which attn does not support"},
        ConfigCase{"BloomZeroHeads", "tiny-bloom-random", "n_head", 0, "config.json",
                   "field 'n_head' must be a positive integer, got 0"},
        ConfigCase{"BloomResidualAfterTheNorm", "tiny-bloom-random",
                   "apply_residual_connection_post_layernorm", true, "config.json",
                   "field 'apply_residual_connection_post_layernorm' is true, which attn does not "
                   "support"},
        ConfigCase{"PhiQkLayerNorm", "tiny-phi-random", "qk_layernorm", true, "config.json",
                   "field 'qk_layernorm' is true, which attn does not support"},
        // Well-formed, but the weights were made for another shape.
        ConfigCase{"LlamaIntermediateSizeDisagreeingWithWeights", "tiny-llama-brown",
                   "intermediate_size", 256, "model.safetensors",
                   "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [384, 128] but "
                   "config.json implies [256, 128]"},
        ConfigCase{"LlamaKvHeadsDisagreeingWithWeights", "tiny-llama-brown", "num_key_value_heads",
                   4, "model.safetensors",
                   "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [64, 128] but "
                   "config.json implies [128, 128]"},
        ConfigCase{"Llama3HeadDimDisagreeingWithWeights", "tiny-llama3-random", "head_dim", 16,
                   "model.safetensors",
                   "tensor 'model.layers.0.self_attn.q_proj.weight' has shape [64, 64] but "
                   "config.json implies [32, 64]"},
        ConfigCase{"NeoxHeadsDisagreeingWithFusedQkv", "tiny-neox-random", "hidden_size", 32,
                   "model.safetensors",
                   "tensor 'gpt_neox.layers.0.attention.query_key_value.weight' has shape "
                   "[192, 64] but config.json implies [96, 32]"},
        ConfigCase{"UntiedLlamaWithoutLmHead", "tiny-llama3-random", "tie_word_embeddings", false,
                   "model.safetensors",
                   "missing tensor 'model.lm_head.weight' (nor 'lm_head.weight')"}),
    [](const auto& info) { return std::string(info.param.test_name); });

// ---- The encoder families of issue 9 ----

INSTANTIATE_TEST_SUITE_P(
    Encoders, BadConfigTest,
    ::testing::Values(
        ConfigCase{"RobertaPaddingLeavingNoPosition", "tiny-roberta-random", "pad_token_id", 513,
                   "config.json",
                   "field 'max_position_embeddings' is 514, which leaves no position: RoBERTa "
                   "counts positions from pad_token_id + 1 = 514"},
        ConfigCase{"RobertaNegativePadding", "tiny-roberta-random", "pad_token_id", -1,
                   "config.json", "field 'pad_token_id' must be an integer from 0 to"},
        ConfigCase{"XlmrPositionsDisagreeingWithWeights", "tiny-xlmr-random",
                   "max_position_embeddings", 512, "model.safetensors",
                   "tensor 'roberta.embeddings.position_embeddings.weight' has shape [514, 64] but "
                   "config.json implies [512, 64]"},
        ConfigCase{"DistilbertZeroHeads", "tiny-distilbert-random", "n_heads", 0, "config.json",
                   "field 'n_heads' must be a positive integer, got 0"},
        ConfigCase{"DistilbertWithoutDim", "tiny-distilbert-random", "dim", nullptr, "config.json",
                   "field 'dim' is missing"},
        ConfigCase{"DistilbertUnknownActivation", "tiny-distilbert-random", "activation", "mish",
                   "config.json", "field 'activation' is 'mish', which attn does not support"},
        ConfigCase{"AlbertEmbeddingSizeDisagreeingWithWeights", "tiny-albert-random",
                   "embedding_size", 16, "model.safetensors",
                   "tensor 'albert.embeddings.word_embeddings.weight' has shape [8000, 32] but "
                   "config.json implies [8000, 16]"},
        ConfigCase{"AlbertMoreGroupsThanStored", "tiny-albert-random", "num_hidden_groups", 2,
                   "model.safetensors",
                   "missing tensor 'albert.encoder.albert_layer_groups.1.albert_layers.0."},
        ConfigCase{"AlbertTooManyInnerLayers", "tiny-albert-random", "inner_group_num", 2048,
                   "config.json",
                   "field 'inner_group_num' times num_hidden_layers is more than attn's limit of "
                   "4096 layers"}),
    [](const auto& info) { return std::string(info.param.test_name); });

TEST_F(BadInputTest, TokenizerJsonByteFallbackThatIsNotABoolean) {
  // byte_fallback is what makes the BPE of a tokenizer.json converted from a SentencePiece model
  // (Llama 2, Mistral) SentencePiece-like; the pipeline reads such files, and a flag that is not
  // true or false is an error naming the field.
  const auto model = copy_model("tiny-gpt2-brown");
  json tokenizer = json::parse(read_file(model / "tokenizer.json"));
  tokenizer["model"]["byte_fallback"] = "yes";
  write_file(model / "tokenizer.json", tokenizer.dump());
  expect_clean_failure(info(model), kBadInput,
                       {(model / "tokenizer.json").string() +
                        ": model.byte_fallback: expected true or false, found \"yes\""});
}

TEST_F(BadInputTest, GenerationConfigEosOutsideTheVocabulary) {
  ATTN_REQUIRE_SHARED();
  const auto model = scratch_ / "tiny-qwen2-random";
  std::filesystem::copy(shared_dir() / "models/tiny-qwen2-random", model);
  write_file(model / "generation_config.json", R"({"eos_token_id": [50256, 60000]})");
  expect_clean_failure(info(model), kBadInput,
                       {(model / "generation_config.json").string() +
                        ": field 'eos_token_id' must be a token id below vocab_size 50257 or a "
                        "list of them, got [50256,60000]"});
}

TEST_F(BadInputTest, PromptLongerThanTheSlidingWindowIsComputed) {
  ATTN_REQUIRE_SHARED();
  // A Mistral-style config with a window of 4: a longer prompt is not refused; the window masks
  // its early keys (tiny-mistral-swa-random's goldens check the numbers).
  const auto model = scratch_ / "tiny-llama3-random";
  std::filesystem::copy(shared_dir() / "models/tiny-llama3-random", model);
  edit_config(model, [](json& config) {
    config["model_type"] = "mistral";
    config["sliding_window"] = 4;
  });
  const CommandResult result =
      run({"generate", "-m", model, "-p", "one two three four five six", "-n", "4"});
  EXPECT_EQ(result.exit_status, 0) << describe(result);
}

// ---- The tokenizers of the sequence-to-sequence families (Marian, T5) ----

// attn does not run these families yet: their config.json (model_type marian, t5) is refused
// before the tokenizer is read, so the tokenizer's own errors are checked on load_tokenizer: an
// attn::Error of one line that names the file and the problem.
class Seq2SeqTokenizerBadInput : public BadInputTest {
 protected:
  std::filesystem::path copy_shared_model(const char* name) {
    const auto copy = scratch_ / name;
    std::filesystem::copy(shared_dir() / "models" / name, copy);
    return copy;
  }

  void edit_vocabulary(const std::filesystem::path& model, const std::function<void(json&)>& edit) {
    json vocab = json::parse(read_file(model / "vocab.json"));
    edit(vocab);
    write_file(model / "vocab.json", vocab.dump());
  }

  static void expect_tokenizer_error(const std::filesystem::path& model,
                                     const std::vector<std::string>& parts) {
    const std::string message = error_message([&] { load_tokenizer(model); });
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& part : parts) EXPECT_TRUE(Contains(message, part));
  }
};

TEST_F(Seq2SeqTokenizerBadInput, MarianWithoutTargetSpm) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model("tiny-marian-random");
  std::filesystem::remove(model / "target.spm");
  expect_tokenizer_error(model, {(model / "target.spm").string() +
                                 ": missing; MarianTokenizer needs source.spm, target.spm and "
                                 "vocab.json"});
}

TEST_F(Seq2SeqTokenizerBadInput, MarianVocabularyNotAnObject) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model("tiny-marian-random");
  write_file(model / "vocab.json", "[\"</s>\", \"<unk>\"]");
  expect_tokenizer_error(model, {(model / "vocab.json").string() +
                                 ": expected a non-empty object mapping pieces to ids"});
}

TEST_F(Seq2SeqTokenizerBadInput, MarianVocabularyIdOutOfRange) {
  ATTN_REQUIRE_SHARED();
  // The ids of vocab.json are 0 .. n-1: <pad>, the last, moved past them leaves a gap.
  const auto model = copy_shared_model("tiny-marian-random");
  edit_vocabulary(model, [](json& vocab) { vocab["<pad>"] = 8000; });
  expect_tokenizer_error(model, {(model / "vocab.json").string() +
                                 ": piece '<pad>' has id 8000; the ids of 8000 pieces must be 0 "
                                 "to 7999"});
}

TEST_F(Seq2SeqTokenizerBadInput, MarianVocabularyIdGivenTwice) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model("tiny-marian-random");
  edit_vocabulary(model, [](json& vocab) { vocab["<pad>"] = 1; });
  expect_tokenizer_error(model,
                         {(model / "vocab.json").string() + ": id 1 is given to both '", "<unk>"});
}

TEST_F(Seq2SeqTokenizerBadInput, MarianVocabularyWithoutTheUnkToken) {
  ATTN_REQUIRE_SHARED();
  // transformers refuses a vocab.json without the unk (or pad) token; attn also wants </s>.
  const auto model = copy_shared_model("tiny-marian-random");
  edit_vocabulary(model, [](json& vocab) {
    vocab["<unk2>"] = vocab["<unk>"];
    vocab.erase("<unk>");
  });
  expect_tokenizer_error(model, {(model / "vocab.json").string() +
                                 ": has no '<unk>' (the unk_token), which MarianTokenizer needs"});
}

TEST_F(Seq2SeqTokenizerBadInput, MarianVocabularyOfAnotherModel) {
  ATTN_REQUIRE_SHARED();
  // Well-formed, with the special tokens, but none of the pieces of the SentencePiece models:
  // every text would come out as <unk>.
  const auto model = copy_shared_model("tiny-marian-random");
  edit_vocabulary(model, [](json& vocab) {
    json renamed = json::object();
    for (const auto& [piece, id] : vocab.items()) {
      const bool special = piece == "</s>" || piece == "<unk>" || piece == "<pad>";
      renamed[special ? piece : piece + "@@"] = id;
    }
    vocab = renamed;
  });
  expect_tokenizer_error(model, {(model / "vocab.json").string() +
                                 ": holds only 3 of the 8000 pieces of source.spm, so it is not "
                                 "the vocabulary of that model"});
}

TEST_F(Seq2SeqTokenizerBadInput, MarianAddedTokenDisagreeingWithTheVocabulary) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model("tiny-marian-random");
  json config = json::parse(read_file(model / "tokenizer_config.json"));
  config["added_tokens_decoder"]["5"] = config["added_tokens_decoder"]["0"];  // </s>
  config["added_tokens_decoder"].erase("0");
  write_file(model / "tokenizer_config.json", config.dump());
  expect_tokenizer_error(model, {(model / "tokenizer_config.json").string() +
                                 ": added token '</s>' has id 5 but vocab.json gives it 0"});
}

TEST_F(Seq2SeqTokenizerBadInput, T5ModelIsNotASentencePieceModel) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model("tiny-t5-random");
  write_file(model / "spiece.model", "not a model");
  expect_tokenizer_error(model,
                         {(model / "spiece.model").string() + ": not a SentencePiece model"});
}

TEST_F(Seq2SeqTokenizerBadInput, T5AddedTokensJsonWithABadId) {
  ATTN_REQUIRE_SHARED();
  // Read when tokenizer_config.json has no added_tokens_decoder.
  const auto model = copy_shared_model("tiny-t5-random");
  json config = json::parse(read_file(model / "tokenizer_config.json"));
  config.erase("added_tokens_decoder");
  write_file(model / "tokenizer_config.json", config.dump());
  write_file(model / "added_tokens.json", R"({"<extra_id_0>": "8099"})");
  expect_tokenizer_error(model, {(model / "added_tokens.json").string() +
                                 ": \"<extra_id_0>\": id \"8099\" is not a token id"});
}

// ---- model.safetensors ----

TEST_F(BadInputTest, SafetensorsShorterThan8Bytes) {
  const auto model = copy_model("tiny-gpt2-brown");
  std::filesystem::resize_file(model / "model.safetensors", 7);
  expect_clean_failure(info(model), kBadInput,
                       {(model / "model.safetensors").string() + ": truncated: 7 bytes"});
}

TEST_F(BadInputTest, SafetensorsDataSectionTruncated) {
  const auto model = copy_model("tiny-gpt2-brown");
  const auto file = model / "model.safetensors";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  expect_clean_failure(info(model), kBadInput,
                       {file.string() + ": tensor '", "data_offsets",
                        "past the end of the data section", "is the file truncated?"});
}

TEST_F(BadInputTest, SafetensorsHeaderNotJson) {
  const auto model = copy_model("tiny-gpt2-brown");
  const auto file = model / "model.safetensors";
  std::string bytes = read_file(file);
  bytes[8] = '[';  // the header's opening brace
  write_file(file, bytes);
  expect_clean_failure(info(model), kBadInput, {file.string() + ": header is not valid JSON"});
}

TEST_F(BadInputTest, SafetensorsHeaderLengthPastTheEnd) {
  const auto model = copy_model("tiny-gpt2-brown");
  const auto file = model / "model.safetensors";
  std::string bytes = read_file(file);
  bytes.resize(4096);  // the header (about 5 KB) no longer fits
  write_file(file, bytes);
  expect_clean_failure(info(model), kBadInput,
                       {file.string() + ": header length", "past the end of the file"});
}

TEST_F(BadInputTest, RequiredTensorMissing) {
  const auto model = copy_model("tiny-gpt2-brown");
  auto tensors = read_safetensors(model / "model.safetensors");
  std::erase_if(tensors, [](const RawTensor& t) { return t.name == "transformer.ln_f.weight"; });
  write_safetensors(model / "model.safetensors", tensors);
  expect_clean_failure(
      info(model), kBadInput,
      {(model / "model.safetensors").string() + ": missing tensor 'transformer.ln_f.weight'"});
}

TEST_F(BadInputTest, BertRequiredTensorMissing) {
  const auto model = copy_model("tiny-bert-brown");
  auto tensors = read_safetensors(model / "model.safetensors");
  const std::string name = "bert.encoder.layer.3.attention.self.key.weight";
  std::erase_if(tensors, [&](const RawTensor& t) { return t.name == name; });
  write_safetensors(model / "model.safetensors", tensors);
  expect_clean_failure(info(model), kBadInput,
                       {(model / "model.safetensors").string() + ": missing tensor '" + name});
}

TEST_F(BadInputTest, TensorShapeDisagreeingWithConfig) {
  const auto model = copy_model("tiny-gpt2-brown");
  auto tensors = read_safetensors(model / "model.safetensors");
  RawTensor* positions = find_tensor(tensors, "transformer.wpe.weight");
  positions->shape = {256, 128};
  positions->bytes.resize(256 * 128 * 4);
  write_safetensors(model / "model.safetensors", tensors);
  expect_clean_failure(info(model), kBadInput,
                       {(model / "model.safetensors").string() +
                        ": tensor 'transformer.wpe.weight' has shape [256, 128] but "
                        "config.json implies [512, 128]"});
}

TEST_F(BadInputTest, IntegerWeight) {
  const auto model = copy_model("tiny-gpt2-brown");
  auto tensors = read_safetensors(model / "model.safetensors");
  RawTensor* bias = find_tensor(tensors, "transformer.ln_f.bias");
  bias->dtype = "I64";
  bias->bytes.assign(128 * 8, '\0');
  write_safetensors(model / "model.safetensors", tensors);
  expect_clean_failure(
      info(model), kBadInput,
      {(model / "model.safetensors").string() + ": tensor 'transformer.ln_f.bias' has dtype I64",
       "F32, F16 or BF16"});
}

// ---- Prompts ----

TEST_F(BadInputTest, InvalidUtf8InPromptFile) {
  const auto prompt = scratch_ / "prompt.txt";
  write_file(prompt, "The jury\xff said");
  // --prompt-file: the whole file is the prompt; --file: each line is one.
  expect_clean_failure(run({"generate", "--prompt-file", prompt, "-n", "3"}), kBadInput,
                       {"--prompt-file " + prompt.string() + ": invalid UTF-8 at byte 8\n"});
  expect_clean_failure(run({"generate", "--file", prompt, "-n", "3"}), kBadInput,
                       {"--file " + prompt.string() + ": line 1: invalid UTF-8 at byte 8\n"});
}

TEST_F(BadInputTest, TruncatedUtf8CharacterInPromptFile) {
  const auto prompt = scratch_ / "prompt.txt";
  write_file(prompt, "caf\xc3");  // the first byte of "é" only
  expect_clean_failure(run({"generate", "--prompt-file", prompt, "-n", "3"}), kBadInput,
                       {"--prompt-file " + prompt.string() + ": invalid UTF-8 at byte 3\n"});
  expect_clean_failure(run({"generate", "--file", prompt, "-n", "3"}), kBadInput,
                       {"--file " + prompt.string() + ": line 1: invalid UTF-8 at byte 3\n"});
}

TEST_F(BadInputTest, InvalidUtf8InPromptOption) {
  expect_clean_failure(run({"generate", "-p", "ab\xc0\xafz", "-n", "3"}), kBadInput,
                       {"--prompt: invalid UTF-8 at byte 2"});
}

TEST_F(BadInputTest, EmptyPromptOption) {
  // GPT-2 gives "" no tokens (no beginning-of-text token), so there is nothing to generate from.
  expect_clean_failure(run({"generate", "-p", "", "-n", "3"}), kBadInput,
                       {"--prompt: the text gives no tokens\n"});
}

TEST_F(BadInputTest, EmptyPromptFile) {
  const auto prompt = scratch_ / "empty.txt";
  write_file(prompt, "");
  expect_clean_failure(run({"generate", "--prompt-file", prompt, "-n", "3"}), kBadInput,
                       {"--prompt-file " + prompt.string() + ": no text\n"});
  expect_clean_failure(run({"generate", "--file", prompt, "-n", "3"}), kBadInput,
                       {"--file " + prompt.string() + ": no text\n"});
  // A prompt file of one newline is empty once its final newline is dropped.
  write_file(prompt, "\n");
  expect_clean_failure(run({"generate", "--prompt-file", prompt, "-n", "3"}), kBadInput,
                       {"--prompt-file " + prompt.string() + ": no text\n"});
  expect_clean_failure(run({"generate", "--file", prompt, "-n", "3"}), kBadInput,
                       {"--file " + prompt.string() + ": no text (only blank lines)\n"});
}

TEST_F(BadInputTest, EmptyStandardInput) {
  expect_clean_failure(run({"generate", "-n", "3"}, "/dev/null"), kBadInput,
                       {"standard input: no text\n"});
  expect_clean_failure(run({"generate", "--prompt-file", "-", "-n", "3"}, "/dev/null"), kBadInput,
                       {"standard input: no text\n"});
}

// --file and standard input give one prompt per line (blank lines skipped, "line" in --json);
// --prompt-file gives one prompt, the whole file less one final newline.
TEST_F(BadInputTest, FileGivesAPromptPerLineAndPromptFileOnePrompt) {
  const auto prompts = scratch_ / "prompts.txt";
  write_file(prompts, "The jury said\n\nIt was a dark night\r\n");
  const auto greedy = [](std::vector<std::string> args) {
    args.insert(args.end(), {"-n", "4", "--temp", "0", "--ignore-eos", "--json", "-q"});
    return args;
  };
  const auto parsed_lines = [](const CommandResult& result) {
    std::vector<json> lines;
    for (const std::string& line : split_lines_of(result.out)) {
      json out = json::parse(line);
      out.erase("timings");
      out.erase("seed");  // drawn afresh each run; greedy decoding does not use it
      lines.push_back(out);
    }
    return lines;
  };
  const CommandResult first = run(greedy({"generate", "-p", "The jury said"}));
  const CommandResult second = run(greedy({"generate", "-p", "It was a dark night"}));
  ASSERT_EQ(first.exit_status, 0) << describe(first);
  ASSERT_EQ(second.exit_status, 0) << describe(second);
  std::vector<json> expected = {parsed_lines(first).at(0), parsed_lines(second).at(0)};
  EXPECT_FALSE(expected[0].contains("line"));
  expected[0]["line"] = 1;
  expected[1]["line"] = 3;

  const CommandResult file = run(greedy({"generate", "--file", prompts.string()}));
  ASSERT_EQ(file.exit_status, 0) << describe(file);
  EXPECT_EQ(file.err, "");
  EXPECT_EQ(parsed_lines(file), expected);
  const CommandResult piped = run(greedy({"generate"}), prompts);
  ASSERT_EQ(piped.exit_status, 0) << describe(piped);
  EXPECT_EQ(parsed_lines(piped), expected);

  // The text output: each prompt and its continuation, as for one prompt, a blank line between.
  const auto greedy_text = [](std::vector<std::string> args) {
    args.insert(args.end(), {"-n", "4", "--temp", "0", "--ignore-eos", "-q"});
    return args;
  };
  const CommandResult text = run(greedy_text({"generate", "--file", prompts.string()}));
  ASSERT_EQ(text.exit_status, 0) << describe(text);
  EXPECT_EQ(text.out, run(greedy_text({"generate", "-p", "The jury said"})).out + "\n" +
                          run(greedy_text({"generate", "-p", "It was a dark night"})).out);
  EXPECT_TRUE(text.out.starts_with("The jury said")) << text.out;

  const CommandResult whole = run(greedy({"generate", "--prompt-file", prompts.string()}));
  ASSERT_EQ(whole.exit_status, 0) << describe(whole);
  const CommandResult as_one =
      run(greedy({"generate", "-p", "The jury said\n\nIt was a dark night"}));
  ASSERT_EQ(as_one.exit_status, 0) << describe(as_one);
  EXPECT_EQ(parsed_lines(whole), parsed_lines(as_one));
  EXPECT_EQ(parsed_lines(whole).size(), 1u);
  const CommandResult whole_stdin = run(greedy({"generate", "--prompt-file", "-"}), prompts);
  ASSERT_EQ(whole_stdin.exit_status, 0) << describe(whole_stdin);
  EXPECT_EQ(parsed_lines(whole_stdin), parsed_lines(as_one));
  expect_clean_failure(run({"generate", "--prompt-file", prompts.string(), "-p", "hi"}),
                       kUsageError, {"--prompt-file: give the prompt one way"});
  expect_clean_failure(run({"generate", "--file", prompts.string(), "-p", "hi"}), kUsageError,
                       {"--file: give the texts one way"});
}

// ---- perplexity ----

TEST_F(BadInputTest, PerplexityStrideLongerThanTheWindow) {
  expect_clean_failure(run({"perplexity", "-p", "The jury said", "--window", "8", "--stride", "9"}),
                       kUsageError, {"--stride: must be in 1..--window (8), got 9"});
}

TEST_F(BadInputTest, PerplexityWindowLongerThanTheContext) {
  expect_clean_failure(run({"perplexity", "-p", "The jury said", "--window", "513"}), kUsageError,
                       {"--window: 513 tokens is more than the model's context of 512"});
}

TEST_F(BadInputTest, PerplexityTextOfOneToken) {
  const auto text = scratch_ / "one-token.txt";
  write_file(text, "The");
  expect_clean_failure(run({"perplexity", "--file", text}), kBadInput,
                       {"--file " + text.string() +
                        ": the text gives 1 token; perplexity "
                        "needs at least 2"});
}

TEST_F(BadInputTest, PerplexityOnAnEncoder) {
  expect_clean_failure(
      run({"perplexity", "-p", "The jury said", "-m", shipped_model("tiny-bert-brown").string()}),
      kUsageError, {"perplexity needs a decoder model"});
}

TEST_F(BadInputTest, MissingPromptFile) {
  const auto prompt = scratch_ / "no-such-prompt.txt";
  expect_clean_failure(run({"generate", "--file", prompt, "-n", "3"}), kBadInput,
                       {"--file " + prompt.string() + ": cannot open file"});
}

class LongPromptTest : public BadInputTest {
 protected:
  // 600 tokens (" the" is one GPT-2 token) against the tiny GPT-2's context of 512.
  void SetUp() override {
    BadInputTest::SetUp();
    std::string text = "the";
    for (int i = 1; i < 600; ++i) text += " the";
    write_file(prompt_, text);
  }

  std::filesystem::path prompt_ = scratch_ / "long.txt";
};

TEST_F(LongPromptTest, IsAnErrorNamingTheLengthAndTheContext) {
  expect_clean_failure(run({"generate", "--prompt-file", prompt_, "-n", "5"}), kBadInput,
                       {"--prompt-file " + prompt_.string() +
                        ": the prompt is 600 tokens, longer than the context of 512 (use "
                        "--truncate to keep the last tokens)\n"});
  expect_clean_failure(run({"generate", "--file", prompt_, "-n", "5"}), kBadInput,
                       {"--file " + prompt_.string() +
                        ": line 1: the prompt is 600 tokens, longer than the context of 512 (use "
                        "--truncate to keep the last tokens)\n"});
}

TEST_F(LongPromptTest, TruncateKeepsTheEndAndGenerates) {
  const CommandResult result = run({"generate", "--file", prompt_, "-n", "5", "--temp", "0",
                                    "--ignore-eos", "--truncate", "--json"});
  ASSERT_FALSE(result.signaled) << describe(result);
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  // Room is left for the new tokens: 512 - 5 prompt tokens are kept.
  EXPECT_EQ(out["prompt_ids"].size(), 507u);
  EXPECT_EQ(out["generated_ids"].size(), 5u);
  EXPECT_NE(result.err.find("truncated"), std::string::npos) << describe(result);
}

TEST_F(BadInputTest, GenerateOnAnEncoder) {
  const auto bert = shipped_model("tiny-bert-brown");
  expect_clean_failure(run({"generate", "-m", bert, "-p", "hello", "-n", "3"}), kUsageError,
                       {bert.string() + ": generate needs a decoder model",
                        "BertForMaskedLM, a masked language model (try attn fill-mask"});
}

// ---- Option values ----

// Each case's arguments come after "generate -p hello".
class BadOptionTest : public BadInputTest, public ::testing::WithParamInterface<OptionCase> {};

TEST_P(BadOptionTest, UsageErrorNamingTheOption) {
  std::vector<std::string> args = {"generate", "-p", "hello"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  expect_clean_failure(run(args), kUsageError, {GetParam().expected});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadOptionTest,
    ::testing::Values(
        OptionCase{"NegativeMaxNewTokens", {"-n", "-1"}, "--max-new-tokens: must be >= 0, got -1"},
        OptionCase{"NonNumericMaxNewTokens", {"-n", "many"}, "--max-new-tokens"},
        OptionCase{"TopPAboveOne", {"--top-p", "2"}, "--top-p: must be in (0, 1], got 2"},
        OptionCase{"TopPZero", {"--top-p", "0"}, "--top-p: must be in (0, 1], got 0"},
        OptionCase{"TopPNotANumber", {"--top-p", "nan"}, "--top-p: must be in (0, 1], got nan"},
        OptionCase{"MinPAboveOne", {"--min-p", "1.5"}, "--min-p: must be in [0, 1], got 1.5"},
        OptionCase{"TypicalPZero", {"--typical-p", "0"}, "--typical-p: must be in (0, 1], got 0"},
        OptionCase{"ZeroBeams", {"--beams", "0"}, "--beams: must be > 0, got 0"},
        OptionCase{"MoreReturnedThanBeams",
                   {"--beams", "2", "--num-return", "3"},
                   "--num-return: must be at most --beams (2), got 3"},
        OptionCase{"BeamsWithTemperature",
                   {"--beams", "2", "--temp", "0.7"},
                   "--temp: beam search (--beams) is deterministic; give one or the other"},
        OptionCase{"BeamsWithSeed",
                   {"--beams", "2", "--seed", "3"},
                   "--seed: beam search (--beams) is deterministic; give one or the other"},
        OptionCase{"BeamsWithTemperatureZero",
                   {"--beams", "2", "--temp", "0"},
                   "--temp: beam search (--beams) is deterministic; give one or the other"},
        OptionCase{"BeamsWithTopKAndTopP",
                   {"--beams", "2", "--top-k", "5", "--top-p", "0.9"},
                   "--top-k, --top-p: beam search (--beams) is deterministic; give one or the "
                   "other"},
        OptionCase{"StreamWithBeams",
                   {"--beams", "2", "--json", "--stream"},
                   "--stream: not with --beams, which decides its sequences only at the end"},
        OptionCase{"StreamWithoutJson",
                   {"--stream"},
                   "--stream: only with --json (the text output always streams)"},
        OptionCase{"NumReturnWithoutBeams",
                   {"--num-return", "2"},
                   "--num-return: only with --beams 2 or more"},
        OptionCase{"LengthPenaltyWithOneBeam",
                   {"--beams", "1", "--length-penalty", "2"},
                   "--length-penalty: only with --beams 2 or more"},
        OptionCase{"EarlyStoppingWithoutBeams",
                   {"--early-stopping"},
                   "--early-stopping: only with --beams 2 or more"},
        OptionCase{"SamplingWithTemperatureZero",
                   {"--temp", "0", "--top-k", "5"},
                   "--top-k: --temp 0 is greedy decoding, which samples nothing"},
        OptionCase{"SeedWithTemperatureZero",
                   {"--temp", "0", "--seed", "3"},
                   "--seed: --temp 0 is greedy decoding, which samples nothing"},
        OptionCase{"NegativeTemperature", {"--temp", "-1"}, "--temp: must be >= 0, got -1"},
        OptionCase{"NanTemperature", {"--temp", "nan"}, "--temp: must be >= 0, got nan"},
        OptionCase{"InfiniteTemperature", {"--temp", "inf"}, "--temp: must be finite, got inf"},
        OptionCase{"NegativeTopK", {"--top-k", "-1"}, "--top-k: must be >= 0, got -1"},
        OptionCase{
            "ZeroRepeatPenalty", {"--repeat-penalty", "0"}, "--repeat-penalty: must be > 0, got 0"},
        OptionCase{"NanRepeatPenalty",
                   {"--repeat-penalty", "nan"},
                   "--repeat-penalty: must be > 0, got nan"},
        OptionCase{"NegativeThreads", {"-t", "-1"}, "--threads: must be >= 0, got -1"},
        OptionCase{"TooManyThreads", {"-t", "100000"}, "--threads: must be <= 1024, got 100000"},
        OptionCase{"UnknownDtype", {"--dtype", "f8"}, "--dtype: f8 not in {f32,f16,bf16,q8,q4}"}),
    [](const auto& info) { return std::string(info.param.test_name); });

// ---- The happy path on the shipped models ----

TEST_F(BadInputTest, InfoJsonDescribesTheModel) {
  const CommandResult result =
      run({"info", "--json", "-m", shipped_model("tiny-gpt2-brown").string()});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  EXPECT_EQ(out["model_type"], "gpt2");
  EXPECT_EQ(out["kind"], "decoder");
  EXPECT_EQ(out["n_layers"], 4);
  EXPECT_EQ(out["d_model"], 128);
  EXPECT_EQ(out["n_heads"], 4);
  EXPECT_EQ(out["vocab_size"], 50257);
  EXPECT_EQ(out["context"], 512);
  EXPECT_EQ(out["tensor_dtypes"], json({{"F32", 52}}));
  EXPECT_EQ(out["compute_dtype"], "f32");
}

TEST_F(BadInputTest, InfoAndBenchReportTheComputedDtype) {
  for (const auto& [dtype, computed] :
       {std::pair{"f16", "f16"}, {"bf16", "bf16"}, {"q8", "q8_0"}, {"q4", "q8_0 + q4_0"}}) {
    const CommandResult info = run({"info", "--json", "--dtype", dtype});
    ASSERT_EQ(info.exit_status, 0) << describe(info);
    EXPECT_EQ(json::parse(info.out)["compute_dtype"], computed);
    const CommandResult bench =
        run({"bench", "--json", "--dtype", dtype, "-p", "8", "-n", "4", "-r", "1"});
    ASSERT_EQ(bench.exit_status, 0) << describe(bench);
    const json out = json::parse(bench.out);
    EXPECT_EQ(out["dtype"], computed);
    EXPECT_GT(out["weight_bytes_per_token"].get<double>(), 0);
    EXPECT_GT(out["decode_gb_per_s"].get<double>(), 0);
  }
}

TEST_F(BadInputTest, InfoOnBert) {
  const CommandResult result =
      run({"info", "--json", "-m", shipped_model("tiny-bert-brown").string()});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  EXPECT_EQ(out["model_type"], "bert");
  EXPECT_EQ(out["kind"], "encoder");
  EXPECT_EQ(out["vocab_size"], 30522);
}

TEST_F(BadInputTest, TokenizeJson) {
  const CommandResult result = run({"tokenize", "--json", "Hello world"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  EXPECT_EQ(out["ids"], json({15496, 995}));
  EXPECT_EQ(out["tokens"], json({"Hello", "\u0120world"}));
}

TEST_F(BadInputTest, GenerateJsonHasTheDocumentedKeys) {
  const CommandResult result =
      run({"generate", "--json", "-p", "The jury said", "--temp", "0", "-n", "20", "--ignore-eos"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  for (const char* key : {"prompt_ids", "generated_ids", "text", "timings"}) {
    EXPECT_TRUE(out.contains(key)) << key << " missing from " << result.out;
  }
  EXPECT_EQ(out["prompt_ids"], json({464, 9002, 531}));
  EXPECT_EQ(out["generated_ids"].size(), 20u);
  EXPECT_TRUE(out["text"].is_string());
  EXPECT_TRUE(out["timings"].is_object());
}

TEST_F(BadInputTest, StreamedTextIsThePromptAndTheJsonText) {
  const std::string prompt = "The jury said";
  const std::vector<std::string> args = {"generate", "-p", prompt, "--temp", "0", "-n", "20"};
  const CommandResult streamed = run(args);
  ASSERT_EQ(streamed.exit_status, 0) << describe(streamed);
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const CommandResult as_json = run(json_args);
  ASSERT_EQ(as_json.exit_status, 0) << describe(as_json);
  const std::string text = json::parse(as_json.out)["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(streamed.out, prompt + text + "\n");
}

// ---- Encoder-decoders (issue 12; their folders are in ../shared) ----

// A copy of a ../shared test model for the test to break.
std::filesystem::path copy_shared_model(const TempDir& scratch, const char* name) {
  const auto model = scratch / name;
  std::filesystem::copy(shared_dir() / "models" / name, model);
  return model;
}

TEST_F(BadInputTest, GenerateOnAnEncoderDecoder) {
  ATTN_REQUIRE_SHARED();
  const auto model = (shared_dir() / "models/tiny-t5-random").string();
  expect_clean_failure(
      run({"generate", "-m", model, "-p", "The jury"}), kUsageError,
      {"generate: 't5' is an encoder-decoder (translation) model; use attn translate"});
  expect_clean_failure(run({"perplexity", "-m", model, "-p", "The jury"}), kUsageError,
                       {"perplexity: 't5' is an encoder-decoder"});
}

TEST_F(BadInputTest, TranslateWithADecoder) {
  expect_clean_failure(run({"translate", "-m", shipped_model("tiny-gpt2-brown"), "The jury"}),
                       kUsageError,
                       {"translate: needs an encoder-decoder (Marian, T5); 'gpt2' is a decoder"});
}

TEST_F(BadInputTest, TargetForADecoderOnlyModel) {
  expect_clean_failure(
      run({"attention", "-m", shipped_model("tiny-gpt2-brown"), "The jury", "--target", "x"}),
      kUsageError, {"--target: only for an encoder-decoder (Marian, T5); 'gpt2' is a decoder"});
}

TEST_F(BadInputTest, DecoderStartTokenOutsideTheVocabulary) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model(scratch_, "tiny-marian-random");
  json generation = json::parse(read_file(model / "generation_config.json"));
  generation["decoder_start_token_id"] = 8000;
  write_file(model / "generation_config.json", generation.dump());
  expect_clean_failure(run({"translate", "-m", model, "The jury"}), kBadInput,
                       {(model / "generation_config.json").string() +
                        ": field 'decoder_start_token_id' must be a token id below vocab_size "
                        "8000"});
}

TEST_F(BadInputTest, DecoderStartTokenMissing) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model(scratch_, "tiny-t5-random");
  std::filesystem::remove(model / "generation_config.json");
  edit_config(model, [](json& config) { config.erase("decoder_start_token_id"); });
  expect_clean_failure(run({"translate", "-m", model, "The jury"}), kBadInput,
                       {(model / "config.json").string() + ": decoder_start_token_id: missing"});
}

TEST_F(BadInputTest, SourceLongerThanTheContext) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_shared_model(scratch_, "tiny-marian-random");
  edit_config(model, [](json& config) { config["max_position_embeddings"] = 16; });
  const std::string source =
      "The jury said it did find that many of the voters had been registered twice.";
  expect_clean_failure(
      run({"translate", "-m", model, source}), kBadInput,
      {"attn: error: argument: ", "tokens, more than the model's context of 16 (use --truncate"});
  const CommandResult truncated = run({"translate", "-m", model, source, "--truncate", "--json"});
  ASSERT_EQ(truncated.exit_status, 0) << describe(truncated);
  const json out = json::parse(truncated.out);
  EXPECT_EQ(out["source_ids"].size(), 16u);
  EXPECT_EQ(out["source_ids"].back(), 0) << "the final </s> is kept";
  EXPECT_LE(out["generated_ids"].size(), 15u) << "the decoder's context: start + 15 tokens";
}

}  // namespace
}  // namespace attn::test
