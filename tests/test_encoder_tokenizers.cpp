// The tokenizers of the encoder families of issue 9 (RoBERTa, DistilBERT, ALBERT, XLM-RoBERTa)
// against the goldens of transformers 4.40's slow tokenizers in ../shared/golden/tiny-*-random.

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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

fs::path model_dir(const std::string& model) { return shared_dir() / "models" / model; }
fs::path golden_dir(const std::string& model) { return shared_dir() / "golden" / model; }

const Tokenizer& tokenizer_of(const std::string& model) {
  // Loaded once per model: every test reads the same files.
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  std::unique_ptr<Tokenizer>& tokenizer = loaded[model];
  if (!tokenizer) tokenizer = load_tokenizer(model_dir(model));
  return *tokenizer;
}

json meta_of(const std::string& model) {
  return json::parse(read_file(golden_dir(model) / "meta.json"));
}

std::vector<std::string> token_strings(const Tokenizer& tokenizer, const std::vector<int>& ids) {
  std::vector<std::string> tokens;
  for (int id : ids) tokens.push_back(tokenizer.token_string(id));
  return tokens;
}

// A golden line's decoded text, and what attn's decode() gives for it.
struct Decoded {
  std::string expected;
  std::string got;
};

// By meta.json's decoded_rule; nullopt when the folder has no decoded text (WordPiece).
std::optional<Decoded> decoded_by_rule(const Tokenizer& tokenizer, const json& rule,
                                       const json& golden) {
  if (rule.is_null()) return std::nullopt;
  const std::vector<int> ids = golden["ids"];
  const std::string decoded = golden["decoded"];
  if (rule == "decode(ids, skip_special_tokens=True)") {
    return Decoded{decoded, tokenizer.decode(ids, true)};
  }
  if (rule == "decode(ids, clean_up_tokenization_spaces=False)") {
    // attn's decode() cleans up as the folder's tokenizer_config.json says (true for the RoBERTa
    // folder); transformers' clean-up is the last step of its decode(), applied to exactly the
    // text the golden holds.
    return Decoded{clean_up_tokenization(decoded), tokenizer.decode(ids, false)};
  }
  ADD_FAILURE() << "unknown decoded_rule " << rule.dump();
  return std::nullopt;
}

class EncoderTokenizerGolden : public ::testing::TestWithParam<const char*> {};

// Every line of tokens.jsonl: the ids of encode(text), the token strings of the golden ids, and
// the decoded text by meta.json's decoded_rule. All mismatches are reported at once.
TEST_P(EncoderTokenizerGolden, TokensJsonl) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const Tokenizer& tokenizer = tokenizer_of(model);
  const json rule = meta_of(model)["decoded_rule"];
  int checked = 0;
  int matched = 0;
  std::string mismatches;
  for (const json& golden : read_jsonl(golden_dir(model) / "tokens.jsonl")) {
    ++checked;
    const std::string text = golden["text"];
    const std::vector<int> expected_ids = golden["ids"];
    const std::vector<std::string> expected_tokens = golden["tokens"];
    const std::vector<int> ids = tokenizer.encode(text).ids;
    const std::vector<std::string> tokens = token_strings(tokenizer, expected_ids);
    const Decoded decoded = decoded_by_rule(tokenizer, rule, golden).value_or(Decoded{});
    if (ids == expected_ids && tokens == expected_tokens && decoded.got == decoded.expected) {
      ++matched;
      continue;
    }
    mismatches += "\n  text " + json_quoted(text) + "\n    expected ids [" + join(expected_ids) +
                  "] tokens " + json(expected_tokens).dump() + " decoded " +
                  json_quoted(decoded.expected) + "\n    got      ids [" + join(ids) + "] tokens " +
                  json(tokens).dump(-1, ' ', false, json::error_handler_t::replace) + " decoded " +
                  json_quoted(decoded.got);
  }
  std::cout << model << " tokens.jsonl: " << matched << " of " << checked << " lines match\n";
  EXPECT_EQ(checked, 301);
  EXPECT_TRUE(mismatches.empty()) << "tokens.jsonl mismatches:" << mismatches;
}

// Every line of fill_mask.jsonl: encode(text) gives input_ids, with the mask token at every
// mask's position, and every candidate's token_str is decode([token_id]).
TEST_P(EncoderTokenizerGolden, FillMaskJsonl) {
  ATTN_REQUIRE_SHARED();
  const std::string model = GetParam();
  const Tokenizer& tokenizer = tokenizer_of(model);
  int lines = 0;
  int candidates = 0;
  std::string mismatches;
  for (const json& golden : read_jsonl(golden_dir(model) / "fill_mask.jsonl")) {
    ++lines;
    const std::string text = golden["text"];
    const std::vector<int> expected_ids = golden["input_ids"];
    const std::vector<int> ids = tokenizer.encode(text).ids;
    if (ids != expected_ids) {
      mismatches += "\n  text " + json_quoted(text) + ": expected [" + join(expected_ids) +
                    "], got [" + join(ids) + "]";
    }
    EXPECT_EQ(token_strings(tokenizer, expected_ids),
              golden["tokens"].get<std::vector<std::string>>());
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
  const json meta = meta_of(model);
  const Tokenizer& tokenizer = tokenizer_of(model);
  ASSERT_EQ(tokenizer.mask_id(), meta["mask_token_id"].get<int>());
  EXPECT_EQ(tokenizer.token_string(*tokenizer.mask_id()), meta["mask_token"].get<std::string>());
  EXPECT_TRUE(tokenizer.is_special(*tokenizer.mask_id()));
}

INSTANTIATE_TEST_SUITE_P(Models, EncoderTokenizerGolden,
                         ::testing::Values(kRoberta, kDistilBert, kAlbert, kXlmRoberta),
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
  const std::vector<json> lines = read_jsonl(golden_dir(model) / "tokens.jsonl");
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
      tokenizer_of(model).encode(a["text"].get<std::string>(), b["text"].get<std::string>());
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
  const Tokenizer& roberta = tokenizer_of(kRoberta);
  EXPECT_EQ(token_strings(roberta, roberta.encode("a <mask> b").ids),
            (std::vector<std::string>{"<s>", "a", "<mask>", "Ġb", "</s>"}));
  const Tokenizer& xlmr = tokenizer_of(kXlmRoberta);
  const std::vector<std::string> xlmr_tokens = token_strings(xlmr, xlmr.encode("a <mask> b").ids);
  ASSERT_EQ(xlmr_tokens.size(), 5u);
  EXPECT_EQ(xlmr_tokens[2], "<mask>");
  EXPECT_EQ(xlmr_tokens[3], "▁b");
  // ALBERT lower-cases the text first, but not its special tokens.
  const Tokenizer& albert = tokenizer_of(kAlbert);
  const std::vector<int> ids = albert.encode("A  [MASK] B [SEP] [mask]").ids;
  const std::vector<std::string> tokens = token_strings(albert, ids);
  ASSERT_GE(tokens.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(tokens.begin(), tokens.begin() + 5),
            (std::vector<std::string>{"[CLS]", "▁a", "[MASK]", "▁b", "[SEP]"}));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *albert.mask_id()), 1);
}

TEST(EncoderTokenizerText, EndOfTextIsAnOrdinaryRobertaToken) {
  ATTN_REQUIRE_SHARED();
  const Tokenizer& roberta = tokenizer_of(kRoberta);
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
  const Tokenizer& xlmr = tokenizer_of(kXlmRoberta);
  EXPECT_EQ(token_strings(xlmr, {0, 1, 2, 3}),
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
  EXPECT_EQ(tokenizer_of(kRoberta).decode(std::vector<int>{0, 1536, 2}, false), "<s>If</s>");
  // AlbertTokenizer.convert_tokens_to_string(["[CLS]", "▁if", "[SEP]"]): a space before each
  // special token that does not follow one, SentencePiece's decoding of "▁if" ("if") between
  // them, then str.strip(): "[CLS] if[SEP]".
  EXPECT_EQ(tokenizer_of(kAlbert).decode(std::vector<int>{2, 77, 3}, false), "[CLS] if[SEP]");
  // XLMRobertaTokenizer.convert_tokens_to_string(["<s>", "▁If", "</s>"]): joined, "▁" -> " ".
  EXPECT_EQ(tokenizer_of(kXlmRoberta).decode(std::vector<int>{0, 212, 2}, false), "<s> If</s>");
}

TEST(EncoderTokenizerDecode, RobertaDecodesAsTransformersDoes) {
  ATTN_REQUIRE_SHARED();
  // RobertaTokenizer.decode: the tokens' bytes as UTF-8 with errors="replace", then
  // clean_up_tokenization (the folder's clean_up_tokenization_spaces is true), unlike GPT-2's
  // raw bytes. No golden line has a space before punctuation, so these are hand-checked.
  const Tokenizer& roberta = tokenizer_of(kRoberta);
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
  for (const char* model : {kAlbert, kXlmRoberta}) {
    const Tokenizer& tokenizer = tokenizer_of(model);
    for (const json& golden : read_jsonl(golden_dir(model) / "tokens.jsonl")) {
      const std::vector<int> ids = golden["ids"];
      std::string streamed;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        streamed += tokenizer.decode_continuation(std::span(ids).first(i), ids[i]);
      }
      EXPECT_EQ(streamed, tokenizer.decode(ids, true))
          << model << ": " << json_quoted(golden["text"]);
    }
  }
}

// ---- Refused files ----------------------------------------------------------------------------

// A scratch copy of a test model's tokenizer files, with `edit` applied to one of its JSON files.
class EditedFolder {
 public:
  EditedFolder(const std::string& model, const std::string& edited_file,
               const std::function<void(json&)>& edit) {
    for (const auto& entry : fs::directory_iterator(model_dir(model))) {
      if (entry.path().filename() == "model.safetensors") continue;
      fs::copy_file(entry.path(), dir_.path() / entry.path().filename());
    }
    const fs::path file = dir_.path() / edited_file;
    json content = json::parse(read_file(file));
    edit(content);
    fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
    write_file(file, content.dump());
  }
  const fs::path& path() const { return dir_.path(); }

 private:
  TempDir dir_;
};

TEST(EncoderTokenizerFiles, SentencePieceFileThatIsNotAModel) {
  ATTN_REQUIRE_SHARED();
  for (const auto& [model, file] :
       {std::pair{kAlbert, "spiece.model"}, std::pair{kXlmRoberta, "sentencepiece.bpe.model"}}) {
    EditedFolder folder(model, "config.json", [](json&) {});
    const fs::path model_file = folder.path() / file;
    fs::permissions(model_file, fs::perms::owner_write, fs::perm_options::add);
    write_file(model_file, "{\"not\": \"a model\"}\n");
    const std::string message = error_message([&] { load_tokenizer(folder.path()); });
    EXPECT_TRUE(Contains(message, model_file.string() + ": not a SentencePiece model ("));
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(EncoderTokenizerFiles, MaskTokenMissingFromTheVocabulary) {
  ATTN_REQUIRE_SHARED();
  const std::string suffix =
      " (transformers would add it as a new token, for which the model has no embedding)";
  {
    EditedFolder roberta(kRoberta, "tokenizer_config.json",
                         [](json& config) { config["mask_token"] = "<mask2>"; });
    EXPECT_EQ(error_message([&] { load_tokenizer(roberta.path()); }),
              (roberta.path() / "tokenizer_config.json").string() +
                  ": mask_token '<mask2>' is not in the vocabulary" + suffix);
  }
  {
    EditedFolder xlmr(kXlmRoberta, "tokenizer_config.json",
                      [](json& config) { config["mask_token"] = "[MASK]"; });
    EXPECT_EQ(error_message([&] { load_tokenizer(xlmr.path()); }),
              (xlmr.path() / "tokenizer_config.json").string() +
                  ": mask_token '[MASK]' is not in the vocabulary" + suffix);
  }
  {
    // Without added_tokens_decoder in tokenizer_config.json, transformers reads the named
    // tokens of special_tokens_map.json too.
    EditedFolder albert(kAlbert, "special_tokens_map.json", [](json& map) {
      map["mask_token"] = {{"content", "[MASK2]"}, {"lstrip", true}};
    });
    json config = json::parse(read_file(albert.path() / "tokenizer_config.json"));
    config.erase("added_tokens_decoder");
    fs::permissions(albert.path() / "tokenizer_config.json", fs::perms::owner_write,
                    fs::perm_options::add);
    write_file(albert.path() / "tokenizer_config.json", config.dump());
    EXPECT_EQ(error_message([&] { load_tokenizer(albert.path()); }),
              (albert.path() / "special_tokens_map.json").string() +
                  ": mask_token '[MASK2]' is not in the vocabulary" + suffix);
  }
}

TEST(EncoderTokenizerFiles, RobertaWithoutTokenizerConfigIsToldByConfigJson) {
  ATTN_REQUIRE_SHARED();
  // As roberta-base ships: vocab.json, merges.txt and config.json (model_type "roberta"); the
  // special tokens are then RobertaTokenizer's defaults, <mask> with lstrip.
  TempDir folder;
  for (const char* file : {"vocab.json", "merges.txt", "config.json"}) {
    fs::copy_file(model_dir(kRoberta) / file, folder.path() / file);
  }
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(folder.path());
  for (const json& golden : read_jsonl(golden_dir(kRoberta) / "fill_mask.jsonl")) {
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
  // T5 ships spiece.model too, read by T5Tokenizer, which attn does not implement.
  const fs::path t5 = shared_dir() / "models/tiny-t5-random";
  EXPECT_EQ(error_message([&] { load_tokenizer(t5); }),
            (t5 / "spiece.model").string() +
                ": the folder's tokenizer class is T5Tokenizer; attn reads spiece.model with "
                "AlbertTokenizer only");
}

}  // namespace
}  // namespace attn
