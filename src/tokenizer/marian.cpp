#include "src/tokenizer/marian.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
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
#include "src/tokenizer/sentencepiece.h"
#include "src/tokenizer/sentencepiece_model.h"
#include "src/tokenizer/special_tokens.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kTargetModel = "target.spm";
constexpr const char* kVocabulary = "vocab.json";

// The named tokens MarianTokenizer cannot do without, each of which vocab.json must hold
// (transformers refuses a vocab.json without the unk or the pad token).
constexpr std::pair<NamedToken, const char*> kRequiredTokens[] = {{NamedToken::kEos, "eos_token"},
                                                                  {NamedToken::kUnk, "unk_token"},
                                                                  {NamedToken::kPad, "pad_token"}};

// vocab.json: {piece: id}, the ids 0 .. n-1, each given once.
struct MarianVocabulary {
  std::unordered_map<std::string, int> ids;
  std::vector<std::string> pieces;  // by id
};

MarianVocabulary read_marian_vocabulary(const fs::path& path) {
  const std::string file = path.string();
  const json vocab = read_json_file(path, kMaxTokenizerBytes);
  if (!vocab.is_object() || vocab.empty()) {
    throw Error(file + ": expected a non-empty object mapping pieces to ids");
  }
  const auto count = static_cast<std::int64_t>(vocab.size());
  MarianVocabulary result;
  result.pieces.resize(vocab.size());
  std::vector<bool> given(vocab.size());
  for (const auto& [piece, id] : vocab.items()) {
    const std::string where = file + ": piece '" + brief_text(piece) + "'";
    if (!id.is_number_integer()) throw Error(where + " has id " + brief_json(id) + ", not an id");
    const std::int64_t value = id.get<std::int64_t>();
    if (value < 0 || value >= count) {
      throw Error(where + " has id " + std::to_string(value) + "; the ids of " +
                  std::to_string(count) + " pieces must be 0 to " + std::to_string(count - 1));
    }
    const auto index = static_cast<std::size_t>(value);
    if (given[index]) {
      throw Error(file + ": id " + std::to_string(value) + " is given to both '" +
                  brief_text(result.pieces[index]) + "' and '" + brief_text(piece) + "'");
    }
    given[index] = true;
    result.pieces[index] = piece;
    result.ids.emplace(piece, static_cast<int>(value));
  }
  return result;
}

// vocab.json must be the vocabulary of the SentencePiece models: a piece it lacks is <unk> when
// encoding. One that holds fewer than half of a model's pieces is another model's vocabulary.
void check_model_pieces_in_vocabulary(const SentencePieceModel& model, const fs::path& model_path,
                                      const MarianVocabulary& vocab, const fs::path& vocab_path) {
  const int count = model.processor->GetPieceSize();
  int found = 0;
  for (int id = 0; id < count; ++id) {
    if (vocab.ids.contains(model.processor->IdToPiece(id))) ++found;
  }
  if (2 * found < count) {
    throw Error(vocab_path.string() + ": holds only " + std::to_string(found) + " of the " +
                std::to_string(count) + " pieces of " + model_path.filename().string() +
                ", so it is not the vocabulary of that model");
  }
}

// MarianTokenizer.language_code_re, ">>.+<<", on one line of text (no match crosses a newline):
// from a ">>" to the last "<<" of the line, with at least one character between them.
class LanguageCodes {
 public:
  explicit LanguageCodes(std::string_view line) : line_(line), close_(line.rfind("<<")) {}

  // Where the match that starts at `begin` ends (past its "<<"), or npos.
  std::size_t match_end(std::size_t begin) const {
    if (close_ == std::string_view::npos || close_ < begin + 3 || line_.substr(begin, 2) != ">>") {
      return std::string_view::npos;
    }
    return close_ + 2;
  }

 private:
  std::string_view line_;
  std::size_t close_;
};

// MarianTokenizer.remove_language_code: the code at the start of the text, if any, and the text
// with every match taken out (re.sub removes them wherever they are).
std::pair<std::optional<std::string>, std::string> remove_language_codes(std::string_view text) {
  std::optional<std::string> code;
  std::string rest;
  for (std::size_t line_begin = 0; line_begin < text.size();) {
    const std::size_t newline = text.find('\n', line_begin);
    const std::size_t line_end = newline == std::string_view::npos ? text.size() : newline;
    const std::string_view line = text.substr(line_begin, line_end - line_begin);
    const LanguageCodes codes(line);
    for (std::size_t i = 0; i < line.size();) {
      const std::size_t end = codes.match_end(i);
      if (end == std::string_view::npos) {
        rest += line[i++];
        continue;
      }
      if (line_begin == 0 && i == 0) code = std::string(line.substr(0, end));
      i = end;
    }
    if (newline != std::string_view::npos) rest += '\n';
    line_begin = line_end + 1;
  }
  return {std::move(code), std::move(rest)};
}

class MarianTokenizer final : public Tokenizer {
 public:
  MarianTokenizer(SentencePieceModel source, SentencePieceModel target, MarianVocabulary vocab,
                  const SpecialTokenConfig& special_config, DecodeJoining joining,
                  const std::string& config_file);

  Encoding encode(std::string_view text, std::optional<std::string_view> pair) const override;
  Encoding encode_target(std::string_view text) const override;
  std::vector<int> encode_plain(std::string_view text) const override {
    return sequence_ids(text, "text", *source_.processor);
  }
  std::string decode(std::span<const int> ids, bool skip_special_tokens) const override;
  // Decoding strips the text, so what a token adds can depend on what follows: decoded twice.
  std::string decode_continuation(std::span<const int> previous_ids, int id) const override {
    check_id(id);
    return is_special(id) ? "" : decode_difference(*this, previous_ids, id);
  }
  std::string token_string(int id) const override;
  int vocab_size() const override { return vocab_size_; }
  std::optional<int> eos_id() const override { return special_tokens_.id(NamedToken::kEos); }
  std::optional<int> mask_id() const override { return special_tokens_.id(NamedToken::kMask); }
  bool is_special(int id) const override { return special_tokens_.is_special(id); }

 private:
  std::vector<int> sequence_ids(std::string_view sequence, std::string_view what,
                                const sentencepiece::SentencePieceProcessor& model) const;
  int token_id(const std::string& token) const;
  std::string tokens_to_string(const std::vector<std::string>& tokens) const;
  std::string decode_pieces(const std::vector<std::string>& pieces) const;
  void check_id(int id) const;

  SentencePieceModel source_;
  SentencePieceModel target_;
  MarianVocabulary vocab_;
  SpecialTokens special_tokens_;
  DecodeJoining joining_;
  int vocab_size_ = 0;
  int unk_id_ = 0;
  int eos_id_ = 0;
  std::unordered_map<int, std::string> added_texts_;  // convert_ids_to_tokens of added tokens
  std::unordered_set<std::string> own_texts_;         // decoded on their own (decode_token_runs)
};

MarianTokenizer::MarianTokenizer(SentencePieceModel source, SentencePieceModel target,
                                 MarianVocabulary vocab, const SpecialTokenConfig& special_config,
                                 DecodeJoining joining, const std::string& config_file)
    : source_(std::move(source)),
      target_(std::move(target)),
      vocab_(std::move(vocab)),
      special_tokens_(special_config,
                      [this](const std::string& text) -> std::optional<int> {
                        const auto found = vocab_.ids.find(text);
                        if (found == vocab_.ids.end()) return std::nullopt;
                        return found->second;
                      }),
      joining_(joining),
      vocab_size_(static_cast<int>(vocab_.pieces.size())),
      unk_id_(special_tokens_.required_id(NamedToken::kUnk)),
      eos_id_(special_tokens_.required_id(NamedToken::kEos)) {
  const int pieces = vocab_size_;  // MarianTokenizer.vocab_size: len(vocab.json)
  const auto id_limit = pieces + static_cast<int>(special_config.added_tokens.size());
  for (const AddedToken& token : special_config.added_tokens) {
    const std::string where = config_file + ": added token '" + brief_text(token.content) + "'";
    if (token.id >= id_limit) {
      throw Error(where + " has id " + std::to_string(token.id) + ", past the " +
                  std::to_string(pieces) + " pieces of vocab.json and the added tokens");
    }
    // An added token that vocab.json numbers otherwise would encode and decode differently.
    const auto in_vocab = vocab_.ids.find(token.content);
    if (in_vocab != vocab_.ids.end() && in_vocab->second != token.id) {
      throw Error(where + " has id " + std::to_string(token.id) + " but vocab.json gives it " +
                  std::to_string(in_vocab->second));
    }
  }
  for (const AddedToken& token : special_tokens_.split_tokens()) {
    added_texts_[token.id] = token.content;
    vocab_size_ = std::max(vocab_size_, token.id + 1);
  }
  // PreTrainedTokenizer._decode's "legacy added tokens" (see decode_token_runs).
  for (const AddedToken& token : special_config.added_tokens) {
    if (!special_tokens_.is_special_text(token.content)) own_texts_.insert(token.content);
  }
  for (const std::string& content : special_config.additional_special_tokens) {
    const std::optional<int> id = special_tokens_.added_token_id(content);
    if (id && *id >= pieces) own_texts_.insert(content);
  }
}

Encoding MarianTokenizer::encode(std::string_view text,
                                 std::optional<std::string_view> pair) const {
  // build_inputs_with_special_tokens: A </s>, A B </s>; the class returns no token types.
  Encoding encoding;
  encoding.ids = sequence_ids(text, "text", *source_.processor);
  if (pair) {
    const std::vector<int> second = sequence_ids(*pair, "pair", *source_.processor);
    encoding.ids.insert(encoding.ids.end(), second.begin(), second.end());
  }
  encoding.ids.push_back(eos_id_);
  encoding.type_ids.assign(encoding.ids.size(), 0);
  return encoding;
}

Encoding MarianTokenizer::encode_target(std::string_view text) const {
  Encoding encoding;
  encoding.ids = sequence_ids(text, "text", *target_.processor);
  encoding.ids.push_back(eos_id_);
  encoding.type_ids.assign(encoding.ids.size(), 0);
  return encoding;
}

// PreTrainedTokenizer.tokenize + convert_tokens_to_ids with MarianTokenizer._tokenize: the added
// tokens cut out, then each piece of text between them without its language codes (the one at
// its start a token of its own), encoded by `model`.
std::vector<int> MarianTokenizer::sequence_ids(
    std::string_view sequence, std::string_view what,
    const sentencepiece::SentencePieceProcessor& model) const {
  decode_utf8(sequence, what);  // refuses text that is not UTF-8
  std::vector<int> ids;
  for (const TextSegment& segment : split_added_tokens(sequence, special_tokens_.split_tokens())) {
    if (segment.token) {
      ids.push_back(segment.token->id);
      continue;
    }
    if (segment.text.empty()) continue;
    const auto [code, rest] = remove_language_codes(segment.text);
    if (code) ids.push_back(token_id(*code));
    std::vector<std::string> pieces;
    const sentencepiece::util::Status status = model.Encode(rest, &pieces);
    if (!status.ok()) {
      throw Error(std::string("Marian tokenizer: cannot encode the text (") +
                  brief_text(status.message(), 200) + ")");
    }
    for (const std::string& piece : pieces) ids.push_back(token_id(piece));
  }
  return ids;
}

// convert_tokens_to_ids: an added token's id, else vocab.json's, else the unk token's.
int MarianTokenizer::token_id(const std::string& token) const {
  if (const std::optional<int> added = special_tokens_.added_token_id(token)) return *added;
  const auto found = vocab_.ids.find(token);
  return found == vocab_.ids.end() ? unk_id_ : found->second;
}

std::string MarianTokenizer::token_string(int id) const {
  check_id(id);
  if (const auto added = added_texts_.find(id); added != added_texts_.end()) {
    return added->second;
  }
  if (static_cast<std::size_t>(id) < vocab_.pieces.size()) return vocab_.pieces[id];
  throw Error("Marian tokenizer: token id " + std::to_string(id) +
              " is neither a piece of vocab.json nor an added token");
}

void MarianTokenizer::check_id(int id) const {
  if (id < 0 || id >= vocab_size_) {
    throw Error("Marian tokenizer: token id " + std::to_string(id) +
                " is outside the vocabulary (" + std::to_string(vocab_size_) + " ids)");
  }
}

std::string MarianTokenizer::decode(std::span<const int> ids, bool skip_special_tokens) const {
  return decode_token_runs(
      *this, ids, skip_special_tokens, own_texts_,
      [this](const std::vector<std::string>& run) { return tokens_to_string(run); }, joining_);
}

// MarianTokenizer.convert_tokens_to_string: the runs of pieces decoded by target.spm, each
// special token written after its run, followed by a space; the whole stripped.
std::string MarianTokenizer::tokens_to_string(const std::vector<std::string>& tokens) const {
  std::string text;
  std::vector<std::string> pieces;
  for (const std::string& token : tokens) {
    if (!special_tokens_.is_special_text(token)) {
      pieces.push_back(token);
      continue;
    }
    text += decode_pieces(pieces) + token + " ";
    pieces.clear();
  }
  text += decode_pieces(pieces);
  return python_strip(text, "decoded text");
}

// target.spm's decode_pieces: "▁" a space (the first one dropped), a piece the model does not
// have written as it is.
std::string MarianTokenizer::decode_pieces(const std::vector<std::string>& pieces) const {
  std::string text;
  const sentencepiece::util::Status status = target_.processor->Decode(pieces, &text);
  if (!status.ok()) {
    throw Error(std::string("Marian tokenizer: cannot decode the pieces (") +
                brief_text(status.message(), 200) + ")");
  }
  return text;
}

}  // namespace

std::unique_ptr<Tokenizer> load_marian_tokenizer(const fs::path& model_dir) {
  const fs::path source_path = model_dir / kMarianSourceModel;
  const fs::path target_path = model_dir / kTargetModel;
  const fs::path vocab_path = model_dir / kVocabulary;
  constexpr std::string_view kClass = "MarianTokenizer";
  const TokenizerFiles files = read_tokenizer_files(model_dir);
  sentencepiece_class(files, source_path, std::span(&kClass, 1), true);
  const json& config = sentencepiece_tokenizer_config(files);
  const std::string& config_file = files.config_file;
  if (config_flag(config, "separate_vocabs", false, config_file)) {
    throw Error(config_file +
                ": separate_vocabs is true (the decoder's own target_vocab.json), which attn does "
                "not implement");
  }
  for (const fs::path& path : {target_path, vocab_path}) {
    if (!entry_exists(path)) {
      throw Error(path.string() + ": missing; MarianTokenizer needs source.spm, target.spm and " +
                  "vocab.json");
    }
  }
  SentencePieceModel source = read_sentencepiece_model(source_path);
  SentencePieceModel target = read_sentencepiece_model(target_path);
  MarianVocabulary vocab = read_marian_vocabulary(vocab_path);
  check_model_pieces_in_vocabulary(source, source_path, vocab, vocab_path);
  check_model_pieces_in_vocabulary(target, target_path, vocab, vocab_path);

  const SpecialTokenConfig special_config =
      read_special_token_config(files, class_named_token_defaults(kClass), kClass);
  for (const auto& [token, key] : kRequiredTokens) {
    const std::optional<AddedToken>& named = special_config.named[static_cast<std::size_t>(token)];
    if (!named || named->content.empty()) {
      throw Error(special_config.named_where[static_cast<std::size_t>(token)] + ": no " + key +
                  " is configured; MarianTokenizer needs one");
    }
    if (!vocab.ids.contains(named->content)) {
      throw Error(vocab_path.string() + ": has no '" + brief_text(named->content) + "' (the " +
                  key + "), which MarianTokenizer needs");
    }
  }
  const DecodeJoining joining{
      config_flag(config, "spaces_between_special_tokens", true, config_file),
      config_flag(config, "clean_up_tokenization_spaces", true, config_file)};
  return std::make_unique<MarianTokenizer>(std::move(source), std::move(target), std::move(vocab),
                                           special_config, joining, config_file);
}

}  // namespace attn
