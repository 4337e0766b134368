// vocab.txt (BERT, DistilBERT, MPNet) converted into the tokenizer.json pipeline, as transformers'
// BertConverter and MPNetConverter (convert_slow_tokenizer.py) build BertTokenizerFast and
// MPNetTokenizerFast from it.
#include "src/tokenizer/wordpiece.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/tokenizer_files.h"
#include "src/tokenizer/tokenizer_json.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// vocab.txt as transformers' load_vocab reads it: one token per line (Python's universal newlines:
// \n, \r\n or \r end a line), the line number is the id. A token on two lines is refused:
// load_vocab would keep the last, and the first line's id would be a row no text reaches.
json read_vocab_txt(const fs::path& file) {
  const std::string content = read_model_file(file, kMaxTokenizerBytes);
  json vocab = json::object();
  int line = 0;
  for (std::size_t start = 0; start < content.size(); ++line) {
    std::size_t end = content.find_first_of("\r\n", start);
    if (end == std::string::npos) end = content.size();
    const std::string token = content.substr(start, end - start);
    if (!is_valid_utf8(token)) {
      throw Error(file.string() + ": line " + std::to_string(line + 1) + " is not valid UTF-8");
    }
    if (vocab.contains(token)) {
      throw Error(file.string() + ": line " + std::to_string(line + 1) + ": duplicate token '" +
                  brief_text(token) + "' (first on line " +
                  std::to_string(vocab[token].get<int>() + 1) + ")");
    }
    vocab[token] = line;
    start = end + 1;
    if (end + 1 < content.size() && content[end] == '\r' && content[end + 1] == '\n') ++start;
  }
  return vocab;
}

// BertConverter's pipeline: BertNormalizer (the class's do_lower_case, strip_accents and
// tokenize_chinese_chars replace these defaults when they differ), BertPreTokenizer, WordPiece
// with "##" continuations, "[CLS] A [SEP]" and "[CLS] A [SEP] B [SEP]" around the text, and the
// WordPiece decoder. MPNet's pairs are "<s> A </s></s> B </s>", every type id 0 as its slow
// class gives them (the model takes no token types).
json converted_vocab_txt(const fs::path& file, const NamedTokenTexts& named, bool mpnet_pairs) {
  json vocab = read_vocab_txt(file);
  const auto template_token = [&](NamedToken token) {
    const std::optional<std::string>& content = named[static_cast<std::size_t>(token)];
    const char* key = kNamedTokenKeys[static_cast<std::size_t>(token)];
    if (!content) throw Error(file.string() + ": the tokenizer has no " + key);
    if (!vocab.contains(*content)) {
      throw Error(file.string() + ": " + key + " " + brief_text(*content) +
                  " is not in the vocabulary");
    }
    return json{{"id", *content}, {"ids", {vocab[*content]}}, {"tokens", {*content}}};
  };
  const json cls = template_token(NamedToken::kCls);
  const json sep = template_token(NamedToken::kSep);
  const auto special = [](const json& token, int type_id) {
    return json{{"SpecialToken", {{"id", token["id"]}, {"type_id", type_id}}}};
  };
  const auto sequence = [](const char* id, int type_id) {
    return json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  const int second_type = mpnet_pairs ? 0 : 1;
  json single = {special(cls, 0), sequence("A", 0), special(sep, 0)};
  json pair = single;
  if (mpnet_pairs) pair.push_back(special(sep, 0));
  pair.push_back(sequence("B", second_type));
  pair.push_back(special(sep, second_type));
  // The Rust WordPiece model needs its unknown token in the vocabulary for any word it cannot
  // split; refused here rather than on the first such word.
  const std::string unk = named[static_cast<std::size_t>(NamedToken::kUnk)].value_or("[UNK]");
  if (!vocab.contains(unk)) {
    throw Error(file.string() + ": unk_token " + brief_text(unk) + " is not in the vocabulary");
  }
  return {{"added_tokens", json::array()},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", unk},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", std::move(vocab)}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", single},
            {"pair", pair},
            {"special_tokens", {{cls["id"], cls}, {sep["id"], sep}}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}}};
}

}  // namespace

std::unique_ptr<Tokenizer> load_wordpiece_tokenizer(const fs::path& model_dir) {
  const fs::path file = model_dir / "vocab.txt";
  if (!entry_exists(file)) {
    throw Error(model_dir.string() + ": no BERT vocabulary found (expected vocab.txt)");
  }
  const TokenizerFiles files = read_tokenizer_files(model_dir);
  const bool mpnet_pairs = files.class_name == "MPNetTokenizer";
  return load_converted_tokenizer(files, file, "BertTokenizer", [&](const NamedTokenTexts& named) {
    return converted_vocab_txt(file, named, mpnet_pairs);
  });
}

}  // namespace attn
