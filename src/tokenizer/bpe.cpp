// vocab.json + merges.txt (GPT-2, RoBERTa, Qwen2) converted into the tokenizer.json pipeline, as
// transformers' GPT2Converter, RobertaConverter and Qwen2Converter (convert_slow_tokenizer.py)
// build GPT2TokenizerFast, RobertaTokenizerFast and Qwen2TokenizerFast from them.
#include "src/tokenizer/bpe.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/special_tokens.h"
#include "src/tokenizer/tokenizer_files.h"
#include "src/tokenizer/tokenizer_json.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Qwen2Tokenizer's pre-tokenizer pattern (PRETOKENIZE_REGEX, Qwen2Converter's Split): GPT-2's,
// but digits one by one and a letter run may take one leading non-letter.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class BpeClass { kGpt2, kRoberta, kQwen2 };

// A vocabulary entry as the file gives it, before its id is checked.
struct VocabEntry {
  std::string token;
  std::int64_t id;
};

// Reads vocab.json, a bare {token: id} object, through nlohmann's SAX interface, so that a value
// that is not an id is named with its token.
class VocabJsonReader final : public json::json_sax_t {
 public:
  explicit VocabJsonReader(std::string file) : file_(std::move(file)) {}

  std::vector<VocabEntry> read(std::string_view text) {
    check_json_depth(text, file_);
    json::sax_parse(text, this);
    return std::move(entries_);
  }

  bool null() override { refuse("null"); }
  bool boolean(bool) override { refuse("a boolean"); }
  bool number_float(number_float_t, const string_t&) override { refuse("a fractional number"); }
  bool binary(binary_t&) override { refuse("binary data"); }
  bool string(string_t&) override { refuse("a string"); }
  bool number_integer(number_integer_t value) override { return id(value); }
  bool number_unsigned(number_unsigned_t value) override {
    return id(static_cast<std::int64_t>(
        std::min<number_unsigned_t>(value, std::numeric_limits<std::int64_t>::max())));
  }

  bool start_object(std::size_t) override {
    if (in_vocab_) refuse("an object");
    in_vocab_ = true;
    return true;
  }
  // Only the vocabulary's own end: an object inside it is refused where it starts.
  bool end_object() override {
    in_vocab_ = false;
    return true;
  }
  bool start_array(std::size_t) override { refuse("an array"); }
  bool end_array() override { return true; }

  bool key(string_t& key) override {
    key_ = std::move(key);
    return true;
  }

  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    throw Error(invalid_json_message(file_, {}, error));
  }

 private:
  bool id(std::int64_t value) {
    if (!in_vocab_) refuse("a number");
    entries_.push_back({std::move(key_), value});
    return true;
  }

  [[noreturn]] void refuse(const std::string& what) const {
    if (!in_vocab_) throw Error(file_ + ": expected an object mapping tokens to ids");
    throw Error(file_ + ": token '" + brief_text(key_) + "': the id is " + what +
                ", not an integer");
  }

  std::string file_;
  bool in_vocab_ = false;  // inside the top-level object
  std::string key_;        // the token whose id comes next
  std::vector<VocabEntry> entries_;
};

// The vocabulary, checked so that every id is one token's and every token has one id: ids from 0
// below the number of tokens and added tokens (tokenizer_config.json's added_tokens_decoder),
// which real files number 0, 1, 2, ...; an id past that is refused before anything is sized by it.
struct Vocab {
  std::vector<VocabEntry> entries;
  std::unordered_map<std::string_view, int> ids;  // into entries' tokens
};

Vocab read_vocab_json(const fs::path& path, std::size_t added_token_count) {
  const std::string file = path.string();
  Vocab vocab;
  vocab.entries = VocabJsonReader(file).read(read_model_file(path, kMaxTokenizerBytes));
  const std::size_t id_limit = vocab.entries.size() + added_token_count;
  std::vector<const std::string*> token_of_id(std::min(vocab.entries.size(), id_limit), nullptr);
  for (const VocabEntry& entry : vocab.entries) {
    if (entry.token.empty()) throw Error(file + ": the vocabulary has an empty token");
    if (entry.id < 0 || static_cast<std::size_t>(entry.id) >= id_limit) {
      std::string range = "out of range for " + std::to_string(vocab.entries.size()) + " tokens";
      if (added_token_count > 0) {
        range += " and " + std::to_string(added_token_count) + " added tokens";
      }
      throw Error(file + ": token '" + brief_text(entry.token) + "' has id " +
                  std::to_string(entry.id) + ", " + range);
    }
    const auto id = static_cast<std::size_t>(entry.id);
    if (id >= token_of_id.size()) token_of_id.resize(id + 1, nullptr);
    if (token_of_id[id] != nullptr) {
      throw Error(file + ": id " + std::to_string(entry.id) + " is given to both '" +
                  brief_text(*token_of_id[id]) + "' and '" + brief_text(entry.token) + "'");
    }
    token_of_id[id] = &entry.token;
  }
  vocab.ids.reserve(vocab.entries.size());
  for (const VocabEntry& entry : vocab.entries) {
    const auto [found, added] = vocab.ids.emplace(entry.token, static_cast<int>(entry.id));
    if (!added) {
      throw Error(file + ": token '" + brief_text(entry.token) + "' has two ids, " +
                  std::to_string(found->second) + " and " + std::to_string(entry.id));
    }
  }
  return vocab;
}

// merges.txt's lines as the class reads them (Python's universal newlines: \n, \r\n or \r end a
// line), with their line numbers: GPT2Tokenizer and RobertaTokenizer take read().split("\n")[1:-1],
// so the first line (the "#version" header) is dropped whatever it holds, and so is a last line
// without a line end; Qwen2Tokenizer strips each line and drops a first line starting with
// "#version:". Blank lines are skipped.
std::vector<std::pair<std::string_view, int>> merge_lines(std::string_view text, BpeClass kind) {
  std::vector<std::pair<std::string_view, int>> lines;
  lines.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
  int number = 1;
  for (std::size_t start = 0; start <= text.size(); ++number) {
    std::size_t end = text.find_first_of("\r\n", start);
    const bool has_end = end != std::string_view::npos;
    if (!has_end) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (has_end && text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') ++start;
    if (kind == BpeClass::kQwen2) {
      const std::size_t first = line.find_first_not_of(" \t\f\v");
      line = first == std::string_view::npos
                 ? std::string_view()
                 : line.substr(first, line.find_last_not_of(" \t\f\v") - first + 1);
      if (number == 1 && line.starts_with("#version:")) continue;
    } else if (number == 1 || !has_end) {
      continue;
    }
    if (!line.empty()) lines.emplace_back(line, number);
    if (!has_end) break;
  }
  return lines;
}

// The merges in rank order, as the converter lists them (list(bpe_ranks)): a pair given twice
// keeps the place of its first line. Each must be two tokens split by one space, and both and
// what they merge into must be in the vocabulary: the fast tokenizer refuses the file otherwise.
json read_merges_txt(const fs::path& path, BpeClass kind, const Vocab& vocab) {
  const std::string text = read_model_file(path, kMaxTokenizerBytes);
  const std::vector<std::pair<std::string_view, int>> lines = merge_lines(text, kind);
  json merges = json::array();
  std::unordered_set<std::string_view> seen;
  seen.reserve(lines.size());
  std::string merged;
  for (const auto& [line, number] : lines) {
    const std::string where = path.string() + " line " + std::to_string(number);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      throw Error(where + ": expected two tokens separated by one space, got '" + brief_text(line) +
                  "'");
    }
    const std::string_view left = line.substr(0, space);
    const std::string_view right = line.substr(space + 1);
    merged.assign(left).append(right);
    for (const auto& [piece, what] : {std::pair<std::string_view, const char*>{left, "piece"},
                                      {right, "piece"},
                                      {merged, "result"}}) {
      if (!vocab.ids.contains(piece)) {
        throw Error(where + ": merge " + what + " '" + brief_text(piece) +
                    "' is not in the vocabulary");
      }
    }
    if (seen.insert(line).second) merges.push_back({left, right});
  }
  return merges;
}

// GPT-2's byte-level alphabet (bytes_to_unicode): printable Latin-1 bytes stand for themselves,
// the other 68 for U+0100 onwards in byte order. Without a byte's symbol, the BPE model (which
// has no unknown token) would drop that byte from the text without a word; refused instead.
void check_byte_symbols(const Vocab& vocab, const std::string& file) {
  char32_t next_unprintable = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                           (byte >= 0xAE && byte <= 0xFF);
    std::string symbol;
    append_utf8(symbol, printable ? static_cast<char32_t>(byte) : next_unprintable++);
    if (!vocab.ids.contains(symbol)) {
      throw Error(file + ": the byte-level symbol '" + symbol + "' (byte " + std::to_string(byte) +
                  ") is not in the vocabulary");
    }
  }
}

// A named token's text and id as the slow class gives them to the converter
// (convert_tokens_to_ids: an added token of tokenizer_config.json, else the vocabulary's).
std::pair<std::string, int> named_token_id(const NamedTokenTexts& named, NamedToken token,
                                           const Vocab& vocab,
                                           const std::vector<AddedToken>& added_tokens,
                                           const std::string& file) {
  const std::optional<std::string>& content = named[static_cast<std::size_t>(token)];
  const char* key = kNamedTokenKeys[static_cast<std::size_t>(token)];
  if (!content) throw Error(file + ": the tokenizer has no " + key);
  for (const AddedToken& added : added_tokens) {
    if (added.content == *content) return {*content, added.id};
  }
  const auto found = vocab.ids.find(*content);
  if (found == vocab.ids.end()) {
    throw Error(file + ": " + key + " '" + brief_text(*content) + "' is not in the vocabulary");
  }
  return {*content, found->second};
}

json byte_level(bool add_prefix_space, bool trim_offsets, bool use_regex = true) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", trim_offsets},
          {"use_regex", use_regex}};
}

struct BpeFiles {
  fs::path vocab;
  fs::path merges;
  BpeClass kind = BpeClass::kGpt2;
  bool add_prefix_space = false;  // the class argument (GPT-2, RoBERTa)
  bool add_bos_token = false;     // GPT2Tokenizer's
  std::vector<AddedToken> added_tokens;
  std::string config_file;
};

// The converter's tokenizer: BPE over the byte-level symbols (no unknown token, no prefix or
// suffix), the ByteLevel pre-tokenizer (Qwen2: NFC, its own Split, then ByteLevel without the
// regex) and decoder, and the class's post-processor.
json converted_bpe(const BpeFiles& files, const NamedTokenTexts& named) {
  const Vocab vocab = read_vocab_json(files.vocab, files.added_tokens.size());
  json merges = read_merges_txt(files.merges, files.kind, vocab);
  check_byte_symbols(vocab, files.vocab.string());
  json vocab_json = json::object();
  for (const VocabEntry& entry : vocab.entries) vocab_json[entry.token] = entry.id;
  json model = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"vocab", std::move(vocab_json)},
                {"merges", std::move(merges)}};
  json tokenizer = {{"added_tokens", json::array()},
                    {"model", std::move(model)},
                    {"decoder", byte_level(true, true)}};
  const auto id_of = [&](NamedToken token) {
    return named_token_id(named, token, vocab, files.added_tokens, files.config_file);
  };
  switch (files.kind) {
    case BpeClass::kGpt2:
      tokenizer["pre_tokenizer"] = byte_level(files.add_prefix_space, true);
      if (files.add_bos_token) {
        // (Not a structured binding: clang's C++20 does not let a lambda capture one.)
        const auto bos_token = id_of(NamedToken::kBos);
        const std::string& bos = bos_token.first;
        const int bos_id = bos_token.second;
        const auto bos_piece = [&](int type_id) {
          return json{{"SpecialToken", {{"id", bos}, {"type_id", type_id}}}};
        };
        const auto sequence = [](const char* id, int type_id) {
          return json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
        };
        tokenizer["post_processor"] = {
            {"type", "TemplateProcessing"},
            {"single", {bos_piece(0), sequence("A", 0)}},
            {"pair", {bos_piece(0), sequence("A", 0), sequence("B", 1)}},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", {bos_id}}, {"tokens", {bos}}}}}}};
      } else {
        tokenizer["post_processor"] = byte_level(true, false);
      }
      break;
    case BpeClass::kRoberta: {
      tokenizer["pre_tokenizer"] = byte_level(files.add_prefix_space, true);
      const auto [sep, sep_id] = id_of(NamedToken::kSep);
      const auto [cls, cls_id] = id_of(NamedToken::kCls);
      tokenizer["post_processor"] = {{"type", "RobertaProcessing"},
                                     {"sep", {sep, sep_id}},
                                     {"cls", {cls, cls_id}},
                                     {"trim_offsets", true},
                                     {"add_prefix_space", files.add_prefix_space}};
      break;
    }
    case BpeClass::kQwen2:
      tokenizer["normalizer"] = {{"type", "NFC"}};
      tokenizer["pre_tokenizer"] = {{"type", "Sequence"},
                                    {"pretokenizers",
                                     {{{"type", "Split"},
                                       {"pattern", {{"Regex", kQwen2Pattern}}},
                                       {"behavior", "Isolated"},
                                       {"invert", false}},
                                      byte_level(false, true, false)}}};
      tokenizer["post_processor"] = byte_level(true, false);
      break;
  }
  return tokenizer;
}

}  // namespace

std::unique_ptr<Tokenizer> load_bpe_tokenizer(const fs::path& model_dir) {
  std::error_code status_error;
  if (!fs::is_directory(model_dir, status_error)) {
    throw Error(model_dir.string() + ": model folder not found" +
                (status_error ? " (" + status_error.message() + ")" : ""));
  }
  BpeFiles files;
  files.vocab = model_dir / "vocab.json";
  files.merges = model_dir / "merges.txt";
  if (!entry_exists(files.vocab) || !entry_exists(files.merges)) {
    throw Error(model_dir.string() + ": no GPT-2 tokenizer files (need vocab.json + merges.txt)");
  }
  const TokenizerFiles config = read_tokenizer_files(model_dir);
  files.config_file = config.config_file;
  if (config.class_name == "RobertaTokenizer") files.kind = BpeClass::kRoberta;
  if (config.class_name == "Qwen2Tokenizer") files.kind = BpeClass::kQwen2;
  // GPT2Tokenizer's and RobertaTokenizer's add_prefix_space (Qwen2Tokenizer has none); a value
  // that is not a boolean is refused by the loader, which applies the same argument.
  const json& add_prefix_space = config.config.value("add_prefix_space", json());
  files.add_prefix_space = files.kind != BpeClass::kQwen2 && add_prefix_space.is_boolean() &&
                           add_prefix_space.get<bool>();
  files.add_bos_token = files.kind == BpeClass::kGpt2 &&
                        config_flag(config.config, "add_bos_token", false, config.config_file);
  files.added_tokens = read_added_tokens_decoder(config.config, config.config_file);
  return load_converted_tokenizer(
      config, files.vocab, "GPT2Tokenizer",
      [&](const NamedTokenTexts& named) { return converted_bpe(files, named); });
}

}  // namespace attn
