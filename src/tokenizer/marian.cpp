// Marian folders (source.spm, target.spm, vocab.json) converted at load into the tokenizer.json
// pipeline. transformers has no fast MarianTokenizer, so this converter is attn's own, made to
// give what the slow class (4.40) gives: each side's SentencePiece model as convert_slow_
// tokenizer.py converts T5's, with vocab.json's ids over its pieces (the MarianVocabulary model),
// the language codes taken out of the text, and </s> appended. Decoding is the slow class's.
#include "src/tokenizer/marian.h"

#include <algorithm>
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
#include "src/tokenizer/tokenizer_json.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kTargetModel = "target.spm";
constexpr const char* kVocabulary = "vocab.json";
constexpr std::string_view kClass = "MarianTokenizer";

// The named tokens MarianTokenizer cannot do without, each of which vocab.json must hold
// (transformers refuses a vocab.json without the unk or the pad token).
constexpr std::pair<NamedToken, const char*> kRequiredTokens[] = {{NamedToken::kEos, "eos_token"},
                                                                  {NamedToken::kUnk, "unk_token"},
                                                                  {NamedToken::kPad, "pad_token"}};

// vocab.json: {piece: id}, the ids 0 .. n-1, each given once.
struct MarianVocabulary {
  json file;
  std::unordered_map<std::string, int> ids;
  std::vector<std::string> pieces;  // by id
};

MarianVocabulary read_marian_vocabulary(const fs::path& path) {
  const std::string file = path.string();
  MarianVocabulary result{read_json_file(path, kMaxTokenizerBytes), {}, {}};
  const json& vocab = result.file;
  if (!vocab.is_object() || vocab.empty()) {
    throw Error(file + ": expected a non-empty object mapping pieces to ids");
  }
  const auto count = static_cast<std::int64_t>(vocab.size());
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
void check_model_pieces_in_vocabulary(const SentencePieceProto& model, const fs::path& model_path,
                                      const MarianVocabulary& vocab, const fs::path& vocab_path) {
  const auto found = std::count_if(
      model.pieces.begin(), model.pieces.end(),
      [&](const SentencePieceEntry& entry) { return vocab.ids.contains(entry.piece); });
  if (2 * static_cast<std::size_t>(found) < model.pieces.size()) {
    throw Error(vocab_path.string() + ": holds only " + std::to_string(found) + " of the " +
                std::to_string(model.pieces.size()) + " pieces of " +
                model_path.filename().string() + ", so it is not the vocabulary of that model");
  }
}

// One side's pipeline: the added tokens cut out (from tokenizer_config.json, as the slow class
// cuts them), then of each stretch of text between them the language code at its start a token
// of its own (JsonTokenizer's MarianTokenizer step) and every code (">>.+<<") taken out; the
// rest as SentencePiece encodes it (T5Converter's normalizer and Metaspace, a dummy prefix per
// stretch); each piece's id from vocab.json (<unk> when it is not there); </s> after the text,
// or after a pair (A B </s>), token types all 0.
json convert_side(const SentencePieceProto& proto, const MarianVocabulary& vocab,
                  const NamedTokenTexts& named) {
  std::vector<std::pair<std::string, double>> scores;
  scores.reserve(proto.pieces.size());
  for (const SentencePieceEntry& entry : proto.pieces)
    scores.emplace_back(entry.piece, entry.score);
  const std::string& eos = *named[static_cast<std::size_t>(NamedToken::kEos)];
  const std::string& unk = *named[static_cast<std::size_t>(NamedToken::kUnk)];
  const json language_codes = {
      {"type", "Replace"}, {"pattern", {{"Regex", ">>.+<<"}}}, {"content", ""}};
  const auto sequence = [](const char* id) {
    return json{{"Sequence", {{"id", id}, {"type_id", 0}}}};
  };
  const json end = {{"SpecialToken", {{"id", eos}, {"type_id", 0}}}};
  return {
      {"added_tokens", json::array()},
      {"normalizer",
       {{"type", "Sequence"}, {"normalizers", {language_codes, sentencepiece_normalizer(proto)}}}},
      {"pre_tokenizer", sentencepiece_metaspace("always", true)},
      {"model",
       {{"type", "MarianVocabulary"},
        {"pieces", sentencepiece_model_json(proto, scores, proto.unk_id, false)},
        {"vocab", vocab.file},
        {"unk_token", unk}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {sequence("A"), end}},
        {"pair", {sequence("A"), sequence("B"), end}},
        {"special_tokens",
         {{eos, {{"id", eos}, {"ids", {vocab.ids.at(eos)}}, {"tokens", {eos}}}}}}}},
      {"decoder", sentencepiece_stripping_decoder("always")}};
}

// target.spm's decode_pieces (SentencePieceProcessor::Decode, libsentencepiece 0.1.97): "▁" a
// space, the first ones dropped while nothing has been written (the model removes extra
// whitespace) or the first one (it adds a dummy prefix); a control piece nothing; the unknown
// piece its surface (" ⁇ "); a piece the model does not have written as it is.
class TargetPieces {
 public:
  explicit TargetPieces(const SentencePieceProto& proto)
      : unk_piece_(proto.unk_piece),
        unk_surface_(proto.unk_surface),
        strips_first_space_(proto.add_dummy_prefix || proto.remove_extra_whitespaces),
        strips_leading_spaces_(proto.remove_extra_whitespaces) {
    for (const SentencePieceEntry& entry : proto.pieces) types_.emplace(entry.piece, entry.type);
  }

  std::string decode(const std::vector<std::string>& pieces) const {
    std::string text;
    bool at_start = true;        // is_bos_ws: a first "▁" may still be dropped
    bool dropped_space = false;  // the previous piece's "▁" was dropped
    for (const std::string& piece : pieces) {
      if (dropped_space || !text.empty()) at_start = false;
      dropped_space = false;
      const auto found = types_.find(piece);
      if (found == types_.end()) {
        text += piece;
        continue;
      }
      if (found->second == SentencePieceType::kControl) continue;
      if (found->second == SentencePieceType::kUnknown) {
        text += piece == unk_piece_ ? unk_surface_ : piece;
        continue;
      }
      std::string_view rest = piece;
      if (at_start && strips_first_space_ && rest.starts_with(kSentencePieceSpace)) {
        rest.remove_prefix(kSentencePieceSpace.size());
        dropped_space = !strips_leading_spaces_;
      }
      append_with_spaces(text, rest);
    }
    return text;
  }

 private:
  std::unordered_map<std::string, SentencePieceType> types_;
  std::string unk_piece_;
  std::string unk_surface_;
  bool strips_first_space_;
  bool strips_leading_spaces_;
};

// PreTrainedTokenizer._decode (transformers 4.40) as MarianTokenizer inherits it.
struct DecodeJoining {
  bool spaces_between_special_tokens = true;
  bool clean_up_tokenization_spaces = true;
};

class MarianTokenizer final : public Tokenizer {
 public:
  MarianTokenizer(std::unique_ptr<Tokenizer> source, std::unique_ptr<Tokenizer> target,
                  TargetPieces target_pieces, std::unordered_set<std::string> own_texts,
                  DecodeJoining joining)
      : source_(std::move(source)),
        target_(std::move(target)),
        target_pieces_(std::move(target_pieces)),
        own_texts_(std::move(own_texts)),
        joining_(joining) {}

  Encoding encode(std::string_view text, std::optional<std::string_view> pair) const override {
    return source_->encode(text, pair);
  }
  Encoding encode_target(std::string_view text) const override { return target_->encode(text); }
  std::vector<int> encode_plain(std::string_view text) const override {
    return source_->encode_plain(text);
  }
  std::string decode(std::span<const int> ids, bool skip_special_tokens) const override;
  // Decoding strips the text, so what a token adds can depend on what follows: decoded twice.
  std::string decode_continuation(std::span<const int> previous_ids, int id) const override {
    check_id(id);
    return is_special(id) ? "" : decode_difference(*this, previous_ids, id);
  }
  std::string token_string(int id) const override {
    check_id(id);
    return source_->token_string(id);
  }
  int vocab_size() const override { return source_->vocab_size(); }
  std::optional<int> eos_id() const override { return source_->eos_id(); }
  std::optional<int> mask_id() const override { return source_->mask_id(); }
  bool is_special(int id) const override { return source_->is_special(id); }
  const TokenOffsets& offsets() const override { return source_->offsets(); }

 private:
  std::string tokens_to_string(std::span<const int> ids) const;
  void check_id(int id) const {
    if (id < 0 || id >= vocab_size()) {
      throw Error("Marian tokenizer: token id " + std::to_string(id) +
                  " is outside the vocabulary (" + std::to_string(vocab_size()) + " ids)");
    }
  }

  std::unique_ptr<Tokenizer> source_;  // source.spm's pipeline: encode()
  std::unique_ptr<Tokenizer> target_;  // target.spm's pipeline: encode_target()
  TargetPieces target_pieces_;
  std::unordered_set<std::string> own_texts_;  // decoded on their own (see decode)
  DecodeJoining joining_;
};

// The ids' tokens (the special ones dropped when skip_special_tokens); of these the "legacy added
// tokens" (added tokens that are not special, additional special tokens past vocab.json) are
// written as they are, the runs of other tokens between them through convert_tokens_to_string;
// the texts joined with a space (spaces_between_special_tokens), then cleaned up.
std::string MarianTokenizer::decode(std::span<const int> ids, bool skip_special_tokens) const {
  std::vector<std::string> sub_texts;
  std::vector<int> run;
  for (const int id : ids) {
    std::string token = token_string(id);  // refuses an id outside the vocabulary
    if (skip_special_tokens && is_special(id)) continue;
    if (!own_texts_.contains(token)) {
      run.push_back(id);
      continue;
    }
    if (!run.empty()) {
      std::string text = tokens_to_string(run);
      if (!text.empty()) sub_texts.push_back(std::move(text));
      run.clear();
    }
    sub_texts.push_back(std::move(token));
  }
  if (!run.empty()) sub_texts.push_back(tokens_to_string(run));
  std::string text;
  for (std::size_t i = 0; i < sub_texts.size(); ++i) {
    if (i > 0 && joining_.spaces_between_special_tokens) text += ' ';
    text += sub_texts[i];
  }
  // A piece whose text is not UTF-8 shows as U+FFFD, as Python's decode with errors="replace"
  // does; the text is then what streaming the same ids shows.
  text = replace_invalid_utf8(text);
  return joining_.clean_up_tokenization_spaces ? clean_up_tokenization(std::move(text)) : text;
}

// MarianTokenizer.convert_tokens_to_string: the runs of pieces decoded by target.spm, each
// special token written after its run, followed by a space; the whole stripped.
std::string MarianTokenizer::tokens_to_string(std::span<const int> ids) const {
  std::string text;
  std::vector<std::string> pieces;
  for (const int id : ids) {
    if (!is_special(id)) {
      pieces.push_back(token_string(id));
      continue;
    }
    text += target_pieces_.decode(pieces) + token_string(id) + " ";
    pieces.clear();
  }
  text += target_pieces_.decode(pieces);
  return python_strip(text, "decoded text");
}

}  // namespace

std::unique_ptr<Tokenizer> load_marian_tokenizer(const fs::path& model_dir) {
  const fs::path source_path = model_dir / kMarianSourceModel;
  const fs::path target_path = model_dir / kTargetModel;
  const fs::path vocab_path = model_dir / kVocabulary;
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
  const SentencePieceProto source = read_sentencepiece_proto(source_path);
  const SentencePieceProto target = read_sentencepiece_proto(target_path);
  const MarianVocabulary vocab = read_marian_vocabulary(vocab_path);
  check_model_pieces_in_vocabulary(source, source_path, vocab, vocab_path);
  check_model_pieces_in_vocabulary(target, target_path, vocab, vocab_path);

  const SpecialTokenConfig special =
      read_special_token_config(files, class_named_token_defaults(kClass), kClass);
  for (const auto& [token, key] : kRequiredTokens) {
    const std::optional<AddedToken>& named = special.named[static_cast<std::size_t>(token)];
    if (!named || named->content.empty()) {
      throw Error(special.named_where[static_cast<std::size_t>(token)] + ": no " + key +
                  " is configured; MarianTokenizer needs one");
    }
    if (!vocab.ids.contains(named->content)) {
      throw Error(vocab_path.string() + ": has no '" + brief_text(named->content) + "' (the " +
                  key + "), which MarianTokenizer needs");
    }
  }
  const auto pieces = static_cast<int>(vocab.pieces.size());  // MarianTokenizer.vocab_size
  const auto id_limit = pieces + static_cast<int>(special.added_tokens.size());
  std::unordered_set<std::string> special_texts(special.additional_special_tokens.begin(),
                                                special.additional_special_tokens.end());
  for (const std::optional<AddedToken>& named : special.named) {
    if (named) special_texts.insert(named->content);
  }
  std::unordered_set<std::string> own_texts;  // PreTrainedTokenizer._decode's legacy added tokens
  for (const AddedToken& token : special.added_tokens) {
    const std::string where = config_file + ": added token '" + brief_text(token.content) + "'";
    if (token.id >= id_limit) {
      throw Error(where + " has id " + std::to_string(token.id) + ", past the " +
                  std::to_string(pieces) + " pieces of vocab.json and the added tokens");
    }
    // An added token that vocab.json numbers otherwise would encode and decode differently.
    const auto in_vocab = vocab.ids.find(token.content);
    if (in_vocab != vocab.ids.end() && in_vocab->second != token.id) {
      throw Error(where + " has id " + std::to_string(token.id) + " but vocab.json gives it " +
                  std::to_string(in_vocab->second));
    }
    const bool is_special = token.special || special_texts.contains(token.content);
    const bool is_additional = std::find(special.additional_special_tokens.begin(),
                                         special.additional_special_tokens.end(),
                                         token.content) != special.additional_special_tokens.end();
    if (!is_special || (is_additional && token.id >= pieces)) own_texts.insert(token.content);
  }

  const auto load_side = [&](const SentencePieceProto& proto, const fs::path& path) {
    return load_converted_tokenizer(files, path, kClass, [&](const NamedTokenTexts& named) {
      return convert_side(proto, vocab, named);
    });
  };
  const DecodeJoining joining{
      config_flag(config, "spaces_between_special_tokens", true, config_file),
      config_flag(config, "clean_up_tokenization_spaces", true, config_file)};
  return std::make_unique<MarianTokenizer>(load_side(source, source_path),
                                           load_side(target, target_path), TargetPieces(target),
                                           std::move(own_texts), joining);
}

}  // namespace attn
