// The tokenizers of the encoder families of issue 9 (RoBERTa, DistilBERT, ALBERT, XLM-RoBERTa)
// against the goldens of transformers 4.40's slow tokenizers in ../shared/golden/tiny-*-random.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/tokenizer.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/test_paths.h"
#include "tests/tokenizer_test_util.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attn::test;  // tests/tokenizer_test_util.h, tests/test_paths.h

constexpr const char* kRoberta = "tiny-roberta-random";
constexpr const char* kDistilBert = "tiny-distilbert-random";
constexpr const char* kAlbert = "tiny-albert-random";
constexpr const char* kXlmRoberta = "tiny-xlmr-random";
constexpr const char* kModernBert = "tiny-modernbert-random";

class EncoderTokenizerGolden : public ::testing::TestWithParam<const char*> {};

// Every line of tokens.jsonl: the ids of encode(text), the token strings of the golden ids, and
// the decoded text by meta.json's decoded_rule. All mismatches are reported at once.
TEST_P(EncoderTokenizerGolden, TokensJsonl) {
  ATTN_REQUIRE_SHARED();
  expect_tokens_jsonl_match(GetParam());
}

// Every line of fill_mask.jsonl: encode(text) gives input_ids, with the mask token at every
// mask's position, and every candidate's token_str is decode([token_id]).
TEST_P(EncoderTokenizerGolden, FillMaskJsonl) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const Tokenizer& tokenizer = shared_tokenizer(model);
  int lines = 0;
  int candidates = 0;
  std::string mismatches;
  for (const json& golden : GoldenSet(model).jsonl("fill_mask.jsonl")) {
    ++lines;
    const std::string text = golden["text"];
    const std::vector<int> expected_ids = golden["input_ids"];
    const std::vector<int> ids = tokenizer.encode(text).ids;
    if (ids != expected_ids) {
      mismatches += "\n  text " + json_quoted(text) + ": expected [" + join(expected_ids) +
                    "], got [" + join(ids) + "]";
    }
    EXPECT_EQ(tokens_of(tokenizer, expected_ids), golden["tokens"].get<std::vector<std::string>>());
    for (const json& mask : golden["masks"]) {
      EXPECT_EQ(expected_ids.at(mask["position"].get<std::size_t>()), tokenizer.mask_id());
      for (const json& candidate : mask["top"]) {
        ++candidates;
        const int id = candidate["token_id"];
        const std::string token_str = candidate["token_str"];
        const std::string decoded = tokenizer.decode(std::vector<int>{id}, false);
        if (decoded != token_str) {
          mismatches += "\n  decode([" + std::to_string(id) + "]) gave " + json_quoted(decoded) +
                        ", expected " + json_quoted(token_str);
        }
      }
    }
  }
  std::cout << model << " fill_mask.jsonl: " << lines << " lines, " << candidates
            << " candidates\n";
  EXPECT_EQ(lines, 30);
  EXPECT_EQ(candidates, 440);
  EXPECT_TRUE(mismatches.empty()) << "fill_mask.jsonl mismatches:" << mismatches;
}

TEST_P(EncoderTokenizerGolden, MaskTokenIsMetaJsons) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const json meta = golden_meta(model);
  const Tokenizer& tokenizer = shared_tokenizer(model);
  ASSERT_EQ(tokenizer.mask_id(), meta["mask_token_id"].get<int>());
  EXPECT_EQ(tokenizer.token_string(*tokenizer.mask_id()), meta["mask_token"].get<std::string>());
  EXPECT_TRUE(tokenizer.is_special(*tokenizer.mask_id()));
}

INSTANTIATE_TEST_SUITE_P(Models, EncoderTokenizerGolden,
                         ::testing::Values(kRoberta, kDistilBert, kAlbert, kXlmRoberta,
                                           kModernBert),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

// ---- Pairs ------------------------------------------------------------------------------------

// The ids of a golden line without the special tokens the template put around them.
std::vector<int> inner_ids(const json& golden) {
  std::vector<int> ids = golden["ids"];
  return std::vector<int>(ids.begin() + 1, ids.end() - 1);
}

struct PairLayout {
  std::vector<int> first_prefix, first_suffix, second_prefix, second_suffix;
  int second_type_id;
};

// encode(A, B) for two golden lines (ids of each known on its own) against the template the
// class's build_inputs_with_special_tokens and create_token_type_ids_from_sequences write.
void expect_pair(const std::string& model, const PairLayout& layout) {
  const std::vector<json> lines = GoldenSet(model).jsonl("tokens.jsonl");
  const json& a = lines.at(0);
  const json& b = lines.at(1);
  std::vector<int> expected = layout.first_prefix;
  for (const std::vector<int>& part : {inner_ids(a), layout.first_suffix, layout.second_prefix,
                                       inner_ids(b), layout.second_suffix}) {
    expected.insert(expected.end(), part.begin(), part.end());
  }
  const std::size_t first_part =
      layout.first_prefix.size() + inner_ids(a).size() + layout.first_suffix.size();
  std::vector<int> expected_types(first_part, 0);
  expected_types.resize(expected.size(), layout.second_type_id);

  const Encoding pair =
      shared_tokenizer(model).encode(a["text"].get<std::string>(), b["text"].get<std::string>());
  EXPECT_EQ(pair.ids, expected) << model;
  EXPECT_EQ(pair.type_ids, expected_types) << model;
}

TEST(EncoderTokenizerPairs, FollowEachClassTemplate) {
  ATTN_REQUIRE_SHARED();
  // RobertaTokenizer / XLMRobertaTokenizer: cls A sep sep B sep, token types all 0.
  expect_pair(kRoberta, {{0}, {2}, {2}, {2}, 0});
  expect_pair(kXlmRoberta, {{0}, {2}, {2}, {2}, 0});
  // AlbertTokenizer: cls A sep B sep, token types 0 for cls A sep, 1 for B sep.
  expect_pair(kAlbert, {{2}, {3}, {}, {3}, 1});
  // DistilBertTokenizer (BertTokenizer's code): the same as ALBERT with BERT's ids.
  expect_pair(kDistilBert, {{101}, {102}, {}, {102}, 1});
}

// ---- Special tokens in the text -----------------------------------------------------------------

TEST(EncoderTokenizerText, MaskTokenEatsTheSpaceBeforeIt) {
  ATTN_REQUIRE_SHARED();
  // The mask token is lstrip in each folder's added_tokens_decoder: the space before it goes,
  // the one after it stays with the next word.
  const Tokenizer& roberta = shared_tokenizer(kRoberta);
  EXPECT_EQ(tokens_of(roberta, roberta.encode("a <mask> b").ids),
            (std::vector<std::string>{"<s>", "a", "<mask>", "Ġb", "</s>"}));
  const Tokenizer& xlmr = shared_tokenizer(kXlmRoberta);
  const std::vector<std::string> xlmr_tokens = tokens_of(xlmr, xlmr.encode("a <mask> b").ids);
  ASSERT_EQ(xlmr_tokens.size(), 5u);
  EXPECT_EQ(xlmr_tokens[2], "<mask>");
  EXPECT_EQ(xlmr_tokens[3], "▁b");
  // ALBERT lower-cases the text first, but not its special tokens.
  const Tokenizer& albert = shared_tokenizer(kAlbert);
  const std::vector<int> ids = albert.encode("A  [MASK] B [SEP] [mask]").ids;
  const std::vector<std::string> tokens = tokens_of(albert, ids);
  ASSERT_GE(tokens.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(tokens.begin(), tokens.begin() + 5),
            (std::vector<std::string>{"[CLS]", "▁a", "[MASK]", "▁b", "[SEP]"}));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *albert.mask_id()), 1);
}

TEST(EncoderTokenizerText, EndOfTextIsAnOrdinaryRobertaToken) {
  ATTN_REQUIRE_SHARED();
  const Tokenizer& roberta = shared_tokenizer(kRoberta);
  const std::vector<int> ids = roberta.encode("<|endoftext|>").ids;
  EXPECT_GT(ids.size(), 3u);  // <s>, its pieces, </s>
  EXPECT_FALSE(roberta.is_special(50260));
  EXPECT_EQ(roberta.token_string(50260), "<|endoftext|>");
  EXPECT_EQ(roberta.eos_id(), 2);
}

TEST(EncoderTokenizerText, XlmRobertaIdsAreFairseqIds) {
  ATTN_REQUIRE_SHARED();
  // XLMRobertaTokenizer: <s> <pad> </s> <unk> are 0-3, a piece of the model is its id + 1, and
  // <mask> comes after the last piece.
  const Tokenizer& xlmr = shared_tokenizer(kXlmRoberta);
  EXPECT_EQ(tokens_of(xlmr, {0, 1, 2, 3}),
            (std::vector<std::string>{"<s>", "<pad>", "</s>", "<unk>"}));
  EXPECT_EQ(xlmr.vocab_size(), 8002);
  EXPECT_EQ(xlmr.token_string(8001), "<mask>");
  EXPECT_EQ(xlmr.decode(std::vector<int>{0, 3, 2}, true), "");
}

// ---- Decoding ---------------------------------------------------------------------------------

TEST(EncoderTokenizerDecode, KeepsSpecialTokensAsEachClassWritesThem) {
  ATTN_REQUIRE_SHARED();
  // RobertaTokenizer: the tokens' bytes joined: "<s>" "If" "</s>" (the golden line 0 starts with
  // "If", id 1536).
  EXPECT_EQ(shared_tokenizer(kRoberta).decode(std::vector<int>{0, 1536, 2}, false), "<s>If</s>");
  // AlbertTokenizer.convert_tokens_to_string(["[CLS]", "▁if", "[SEP]"]): a space before each
  // special token that does not follow one, SentencePiece's decoding of "▁if" ("if") between
  // them, then str.strip(): "[CLS] if[SEP]".
  EXPECT_EQ(shared_tokenizer(kAlbert).decode(std::vector<int>{2, 77, 3}, false), "[CLS] if[SEP]");
  // XLMRobertaTokenizer.convert_tokens_to_string(["<s>", "▁If", "</s>"]): joined, "▁" -> " ".
  EXPECT_EQ(shared_tokenizer(kXlmRoberta).decode(std::vector<int>{0, 212, 2}, false), "<s> If</s>");
}

TEST(EncoderTokenizerDecode, RobertaDecodesAsTransformersDoes) {
  ATTN_REQUIRE_SHARED();
  // RobertaTokenizer.decode: the tokens' bytes as UTF-8 with errors="replace", then
  // clean_up_tokenization (the folder's clean_up_tokenization_spaces is true), unlike GPT-2's
  // raw bytes. No golden line has a space before punctuation, so these are hand-checked.
  const Tokenizer& roberta = shared_tokenizer(kRoberta);
  EXPECT_EQ(roberta.decode(roberta.encode("He said , no .").ids, true), "He said, no.");
  const std::vector<int> emoji = roberta.encode("😀").ids;
  ASSERT_GT(emoji.size(), 3u);  // <s>, two or more byte-level pieces, </s>
  EXPECT_EQ(roberta.decode(std::vector<int>{emoji[1]}, false), "\xEF\xBF\xBD");
  EXPECT_EQ(roberta.decode(emoji, true), "😀");
}

// What generation would print, token by token, equals decoding the whole sequence: the
// SentencePiece encoders strip their decoded text, so what a token adds depends on what follows.
TEST(EncoderTokenizerDecode, StreamsWhatDecodeGives) {
  ATTN_REQUIRE_SHARED();
  for (const char* model : {kAlbert, kXlmRoberta}) expect_streaming_matches_decode(model);
}

// ---- Refused files ----------------------------------------------------------------------------

TEST(EncoderTokenizerFiles, SentencePieceFileThatIsNotAModel) {
  ATTN_REQUIRE_SHARED();
  for (const auto& [model, file] :
       {std::pair{kAlbert, "spiece.model"}, std::pair{kXlmRoberta, "sentencepiece.bpe.model"}}) {
    EditedFolder folder(model, "config.json", [](json&) {});
    const fs::path model_file = folder.path() / file;
    write_file(model_file, "{\"not\": \"a model\"}\n");
    const std::string message = error_message([&] { load_tokenizer(folder.path()); });
    EXPECT_TRUE(Contains(message, model_file.string() + ": not a SentencePiece model ("));
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

// The byte-level BPE folders are converted as transformers' fast classes build them: a mask token
// the vocabulary lacks is added after it (the model's embedding has no row for it, which loading
// the model refuses).
TEST(EncoderTokenizerFiles, RobertaMaskTokenMissingFromTheVocabularyIsAddedAfterIt) {
  ATTN_REQUIRE_SHARED();
  EditedFolder roberta(kRoberta, "tokenizer_config.json",
                       [](json& config) { config["mask_token"] = "<mask2>"; });
  const int vocabulary = int(json::parse(read_file(roberta.path() / "vocab.json")).size());
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(roberta.path());
  EXPECT_EQ(tokenizer->mask_id(), vocabulary);
  EXPECT_EQ(tokenizer->vocab_size(), vocabulary + 1);
  EXPECT_EQ(tokenizer->token_string(vocabulary), "<mask2>");
}

// The SentencePiece folders are converted as transformers' fast classes build them: a mask token
// the vocabulary lacks is added after it (the model's embedding has no row for it, which loading
// the model refuses).
TEST(EncoderTokenizerFiles, SentencePieceMaskTokenMissingFromTheVocabularyIsAddedAfterIt) {
  ATTN_REQUIRE_SHARED();
  {
    EditedFolder xlmr(kXlmRoberta, "tokenizer_config.json",
                      [](json& config) { config["mask_token"] = "[MASK]"; });
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(xlmr.path());
    // fairseq's 4 + the model's 7997 pieces after its first 3 + <mask>: 8002 ids.
    EXPECT_EQ(tokenizer->mask_id(), 8002);
    EXPECT_EQ(tokenizer->vocab_size(), 8003);
    EXPECT_EQ(tokenizer->token_string(8002), "[MASK]");
  }
  {
    // Without added_tokens_decoder in tokenizer_config.json, transformers reads the named
    // tokens of special_tokens_map.json too.
    EditedFolder albert(kAlbert, "special_tokens_map.json", [](json& map) {
      map["mask_token"] = {{"content", "[MASK2]"}, {"lstrip", true}};
    });
    json config = json::parse(read_file(albert.path() / "tokenizer_config.json"));
    config.erase("added_tokens_decoder");
    write_file(albert.path() / "tokenizer_config.json", config.dump());
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(albert.path());
    EXPECT_EQ(tokenizer->mask_id(), 8000);  // after the model's 8000 pieces
    EXPECT_EQ(tokenizer->vocab_size(), 8001);
    EXPECT_EQ(tokenizer->token_string(8000), "[MASK2]");
  }
}

TEST(EncoderTokenizerFiles, RobertaWithoutTokenizerConfigIsToldByConfigJson) {
  ATTN_REQUIRE_SHARED();
  // As roberta-base ships: vocab.json, merges.txt and config.json (model_type "roberta"); the
  // special tokens are then RobertaTokenizer's defaults, <mask> with lstrip.
  TempDir folder;
  for (const char* file : {"vocab.json", "merges.txt", "config.json"}) {
    fs::copy_file(shared_model_dir(kRoberta) / file, folder.path() / file);
  }
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(folder.path());
  for (const json& golden : GoldenSet(kRoberta).jsonl("fill_mask.jsonl")) {
    EXPECT_EQ(tokenizer->encode(golden["text"].get<std::string>()).ids,
              golden["input_ids"].get<std::vector<int>>());
  }
  EXPECT_EQ(tokenizer->mask_id(), 50261);
}

TEST(EncoderTokenizerFiles, SentencePieceOptionsAreRefused) {
  ATTN_REQUIRE_SHARED();
  EditedFolder albert(kAlbert, "tokenizer_config.json", [](json& config) {
    config["sp_model_kwargs"] = {{"enable_sampling", true}};
  });
  EXPECT_EQ(error_message([&] { load_tokenizer(albert.path()); }),
            (albert.path() / "tokenizer_config.json").string() +
                ": sp_model_kwargs {\"enable_sampling\":true} is not supported");
}

TEST(EncoderTokenizerFiles, SpieceModelOfAnotherClassIsRefused) {
  ATTN_REQUIRE_SHARED();
  // spiece.model is read by AlbertTokenizer and T5Tokenizer (tests/test_seq2seq_tokenizers.cpp);
  // other classes that ship one (XLNetTokenizer, say) are refused rather than misread.
  EditedFolder xlnet(kAlbert, "tokenizer_config.json",
                     [](json& config) { config["tokenizer_class"] = "XLNetTokenizer"; });
  EXPECT_EQ(error_message([&] { load_tokenizer(xlnet.path()); }),
            (xlnet.path() / "spiece.model").string() +
                ": the folder's tokenizer class is XLNetTokenizer; attn reads spiece.model with "
                "AlbertTokenizer or T5Tokenizer only");
  // A folder that names no class: ALBERT or T5 is not for attn to guess.
  EditedFolder unnamed(kAlbert, "tokenizer_config.json",
                       [](json& config) { config.erase("tokenizer_class"); });
  std::filesystem::remove(unnamed.path() / "config.json");
  EXPECT_EQ(error_message([&] { load_tokenizer(unnamed.path()); }),
            (unnamed.path() / "spiece.model").string() +
                ": neither tokenizer_config.json (tokenizer_class) nor config.json (model_type) "
                "names the tokenizer class; attn reads spiece.model with AlbertTokenizer or "
                "T5Tokenizer only");
}

}  // namespace
}  // namespace attn
