#include "src/tokenizer/sentencepiece.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
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
#include "src/tokenizer/sentencepiece_model.h"
#include "src/tokenizer/special_tokens.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What SentencePiece decodes an invalid byte of byte-fallback pieces to: U+FFFD.
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// ---- The tokenizer classes --------------------------------------------------------------------

// How a class's convert_tokens_to_string turns tokens back into text.
enum class TokensToString {
  // LlamaTokenizer, AlbertTokenizer: SentencePiece decodes the runs of pieces between special
  // tokens; the special tokens are written as they are, spaced by the rules below.
  kDecodePieces,
  // XLMRobertaTokenizer: "".join(tokens), every "▁" a space.
  kJoinPieces,
};

// When convert_tokens_to_string writes a space before a special token that does not follow
// another special token.
enum class SpaceBeforeSpecial { kNever, kUnlessFirst, kAlways };

// How token ids relate to the model's pieces.
enum class IdLayout {
  kPieces,  // token id = piece id
  // XLM-R's fairseq ids: <s> 0, <pad> 1, </s> 2, <unk> 3, piece i (from 3 on) i + 1, and <mask>
  // after the last piece (the model's own <unk> <s> </s>, pieces 0-2, are not used).
  kFairseq,
};

// AlbertTokenizer._tokenize: preprocess_text(text) with these settings, then the model, then
// pieces that end in a digit and "," re-split ("▁9," -> "▁9" ","; as BERT's tokenization does).
struct AlbertTokenize {
  bool remove_space = true;   // " ".join(text.strip().split())
  bool keep_accents = false;  // false: NFKD, then combining marks dropped
  bool do_lower_case = true;
};

// Everything that differs between the transformers classes that run a SentencePiece model
// (LlamaTokenizer, AlbertTokenizer, XLMRobertaTokenizer, T5Tokenizer): their constructor's
// defaults and the settings of the folder's tokenizer_config.json.
struct SentencePieceSettings {
  std::string class_name;
  NamedTokenDefaults named_defaults;
  NamedSequenceTemplate sequence_template;
  IdLayout id_layout = IdLayout::kPieces;

  // Encoding.
  // LlamaTokenizer's legacy (the others are legacy): false encodes text without the model's
  // dummy prefix, after the unk token's text (see encode_pieces), and adds the prefix space
  // itself once (add_prefix_space).
  bool legacy = true;
  bool add_prefix_space = true;
  // do_lower_case: PreTrainedTokenizer.tokenize lowers the text outside the added tokens first.
  bool lowercase_text = false;
  std::optional<AlbertTokenize> albert_tokenize;

  // Decoding (convert_tokens_to_string, then _decode).
  TokensToString tokens_to_string = TokensToString::kDecodePieces;
  bool drop_first_prefix_space = false;  // the first token's "▁" goes (Llama's add_prefix_space)
  SpaceBeforeSpecial space_before_special = SpaceBeforeSpecial::kNever;
  // A space between a leading special token and a first piece without "▁" (Llama).
  bool space_after_leading_special = false;
  bool strip_text = false;  // str.strip() of the result (ALBERT, XLM-R)
  bool spaces_between_special_tokens = false;
  bool clean_up_tokenization_spaces = false;

  // T5Tokenizer's _add_eos_if_not_present: a sequence that already ends with its template suffix
  // does not get it a second time.
  bool suffix_once = false;
  // T5Tokenizer's extra_ids: the sentinels <extra_id_0> ... <extra_id_{n-1}>, additional special
  // tokens with the ids after the pieces, counted down: <extra_id_0> is the last id.
  std::optional<int> extra_ids;
};

SentencePieceSettings llama_settings(const json& config, const std::string& file) {
  SentencePieceSettings settings;
  settings.class_name = "LlamaTokenizer";
  settings.named_defaults = class_named_token_defaults(settings.class_name);
  // build_inputs_with_special_tokens: bos A eos (bos B eos), each when enabled;
  // create_token_type_ids_from_sequences: 0 for the first part, 1 for the second.
  std::vector<NamedToken> prefix;
  std::vector<NamedToken> suffix;
  if (config_flag(config, "add_bos_token", true, file)) prefix.push_back(NamedToken::kBos);
  if (config_flag(config, "add_eos_token", false, file)) suffix.push_back(NamedToken::kEos);
  settings.sequence_template = {prefix, suffix, prefix, suffix, 1};
  settings.legacy = config_flag(config, "legacy", true, file);
  settings.add_prefix_space = config_flag(config, "add_prefix_space", true, file);
  settings.drop_first_prefix_space = settings.add_prefix_space;
  settings.space_before_special =
      settings.legacy ? SpaceBeforeSpecial::kUnlessFirst : SpaceBeforeSpecial::kNever;
  settings.space_after_leading_special = settings.add_prefix_space;
  settings.spaces_between_special_tokens =
      config_flag(config, "spaces_between_special_tokens", false, file);
  settings.clean_up_tokenization_spaces =
      config_flag(config, "clean_up_tokenization_spaces", false, file);
  return settings;
}

// GemmaTokenizer: LlamaTokenizer's template (add_bos_token, add_eos_token), but text goes to
// sp_model.encode as it is (the model's own normalizer adds its dummy prefix, as Llama's
// legacy: true), and pieces are decoded as they are, with no space added around special tokens
// and none taken off the first piece.
SentencePieceSettings gemma_settings(const json& config, const std::string& file) {
  SentencePieceSettings settings = llama_settings(config, file);
  settings.class_name = "GemmaTokenizer";
  settings.named_defaults = class_named_token_defaults(settings.class_name);
  settings.legacy = true;
  settings.add_prefix_space = false;
  settings.drop_first_prefix_space = false;
  settings.space_before_special = SpaceBeforeSpecial::kNever;
  settings.space_after_leading_special = false;
  return settings;
}

SentencePieceSettings albert_settings(const json& config, const std::string& file) {
  SentencePieceSettings settings;
  settings.class_name = "AlbertTokenizer";
  settings.named_defaults = class_named_token_defaults(settings.class_name);
  // build_inputs_with_special_tokens: cls A sep (B sep); create_token_type_ids_from_sequences:
  // 0 for cls A sep, 1 for B sep.
  settings.sequence_template = {{NamedToken::kCls}, {NamedToken::kSep}, {}, {NamedToken::kSep}, 1};
  AlbertTokenize albert;
  albert.remove_space = config_flag(config, "remove_space", true, file);
  albert.keep_accents = config_flag(config, "keep_accents", false, file);
  albert.do_lower_case = config_flag(config, "do_lower_case", true, file);
  settings.lowercase_text = albert.do_lower_case;
  settings.albert_tokenize = albert;
  settings.space_before_special = SpaceBeforeSpecial::kAlways;
  settings.strip_text = true;
  settings.spaces_between_special_tokens =
      config_flag(config, "spaces_between_special_tokens", true, file);
  settings.clean_up_tokenization_spaces =
      config_flag(config, "clean_up_tokenization_spaces", true, file);
  return settings;
}

SentencePieceSettings xlm_roberta_settings(const json& config, const std::string& file) {
  SentencePieceSettings settings;
  settings.class_name = "XLMRobertaTokenizer";
  settings.named_defaults = class_named_token_defaults(settings.class_name);
  // build_inputs_with_special_tokens: cls A sep, pairs cls A sep sep B sep;
  // create_token_type_ids_from_sequences: all 0.
  settings.sequence_template = {
      {NamedToken::kCls}, {NamedToken::kSep}, {NamedToken::kSep}, {NamedToken::kSep}, 0};
  settings.id_layout = IdLayout::kFairseq;
  settings.tokens_to_string = TokensToString::kJoinPieces;
  settings.strip_text = true;
  settings.spaces_between_special_tokens =
      config_flag(config, "spaces_between_special_tokens", true, file);
  settings.clean_up_tokenization_spaces =
      config_flag(config, "clean_up_tokenization_spaces", true, file);
  return settings;
}

SentencePieceSettings t5_settings(const json& config, const std::string& file) {
  SentencePieceSettings settings;
  settings.class_name = "T5Tokenizer";
  settings.named_defaults = class_named_token_defaults(settings.class_name);
  // build_inputs_with_special_tokens: A </s> (B </s>), each </s> only when the sequence does not
  // end with one already; create_token_type_ids_from_sequences: all 0.
  settings.sequence_template = {{}, {NamedToken::kEos}, {}, {NamedToken::kEos}, 0};
  settings.suffix_once = true;
  // legacy: false encodes as LlamaTokenizer's legacy: false does (T5Tokenizer's tokenize and
  // _tokenize are the same code): the model without its dummy prefix, the prefix space added
  // once to the whole text, so that text right after a special token gets no space of its own.
  settings.legacy = config_flag(config, "legacy", true, file);
  settings.add_prefix_space = config_flag(config, "add_prefix_space", true, file);
  settings.drop_first_prefix_space = settings.add_prefix_space;
  settings.space_before_special = SpaceBeforeSpecial::kAlways;
  settings.strip_text = true;
  settings.spaces_between_special_tokens =
      config_flag(config, "spaces_between_special_tokens", true, file);
  settings.clean_up_tokenization_spaces =
      config_flag(config, "clean_up_tokenization_spaces", true, file);
  settings.extra_ids = 100;
  if (config.contains("extra_ids") && !config["extra_ids"].is_null()) {
    const json& extra_ids = config["extra_ids"];
    if (!extra_ids.is_number_integer() || extra_ids.get<std::int64_t>() < 0 ||
        extra_ids.get<std::int64_t>() > 100'000) {
      throw Error(file + ": 'extra_ids' must be an integer from 0 to 100000, got " +
                  brief_json(extra_ids));
    }
    settings.extra_ids = extra_ids.get<int>();
  }
  return settings;
}

// The SentencePiece files attn reads, each with the classes that read it.
struct SentencePieceClass {
  const char* file;
  const char* class_name;
  SentencePieceSettings (*settings)(const json& config, const std::string& file);
  bool is_default;  // the class of the file when the folder does not declare one
};
constexpr SentencePieceClass kSentencePieceClasses[] = {
    {"tokenizer.model", "LlamaTokenizer", llama_settings, true},
    {"tokenizer.model", "GemmaTokenizer", gemma_settings, false},
    {"spiece.model", "AlbertTokenizer", albert_settings, false},
    {"spiece.model", "T5Tokenizer", t5_settings, false},
    {"sentencepiece.bpe.model", "XLMRobertaTokenizer", xlm_roberta_settings, false}};

// The file of the first of kSentencePieceClasses the folder has, or null.
const char* find_sentencepiece_file(const fs::path& model_dir) {
  for (const SentencePieceClass& entry : kSentencePieceClasses) {
    if (entry_exists(model_dir / entry.file)) return entry.file;
  }
  return nullptr;
}

// The entry of kSentencePieceClasses for `file` and the class the folder declares.
const SentencePieceClass& find_sentencepiece_class(const fs::path& model_dir, const char* file) {
  std::vector<std::string_view> classes;
  bool has_default = false;
  for (const SentencePieceClass& entry : kSentencePieceClasses) {
    if (std::string_view(entry.file) != file) continue;
    // The default class, if any, goes first.
    classes.insert(entry.is_default ? classes.begin() : classes.end(), entry.class_name);
    has_default = has_default || entry.is_default;
  }
  const std::string class_name =
      sentencepiece_class(model_dir, model_dir / file, classes, has_default);
  for (const SentencePieceClass& entry : kSentencePieceClasses) {
    if (std::string_view(entry.file) == file && entry.class_name == class_name) return entry;
  }
  throw Error(model_dir.string() + ": no SentencePiece class " + class_name);  // not reached
}

// T5Tokenizer.__init__'s sentinels: the <extra_id_N> of additional_special_tokens (made when it
// has none), each an added token (lstrip, rstrip, special) with id piece_count - 1 + extra_ids
// - N unless the folder's added tokens give that id already.
void add_extra_ids(SpecialTokenConfig& config, int extra_ids, int piece_count,
                   const std::string& file) {
  const auto count = static_cast<int>(std::count_if(
      config.additional_special_tokens.begin(), config.additional_special_tokens.end(),
      [](const std::string& token) { return token.find("<extra_id_") != std::string::npos; }));
  if (count == 0) {
    for (int i = 0; i < extra_ids; ++i) {
      config.additional_special_tokens.push_back("<extra_id_" + std::to_string(i) + ">");
    }
  } else if (count != extra_ids) {
    throw Error(file + ": extra_ids is " + std::to_string(extra_ids) +
                " but additional_special_tokens has " + std::to_string(count) +
                " <extra_id_N> tokens; T5Tokenizer needs the two to agree");
  }
  std::unordered_set<int> given;
  for (const AddedToken& token : config.added_tokens) given.insert(token.id);
  for (int i = 0; i < extra_ids; ++i) {
    const int id = piece_count - 1 + extra_ids - i;
    if (given.contains(id)) continue;
    AddedToken sentinel = special_token("<extra_id_" + std::to_string(i) + ">", /*lstrip=*/true);
    sentinel.id = id;
    sentinel.rstrip = true;
    config.added_tokens.push_back(std::move(sentinel));
  }
}

// ---- AlbertTokenizer's text preparation -------------------------------------------------------

std::u32string to_u32(std::string_view text) {
  const std::vector<char32_t> code_points = decode_utf8(text, "text");
  return std::u32string(code_points.begin(), code_points.end());
}

// Python's str.replace().
std::u32string replace_all(std::u32string_view text, std::u32string_view from,
                           std::u32string_view to) {
  std::u32string out;
  std::size_t position = 0;
  for (std::size_t hit; (hit = text.find(from, position)) != std::u32string_view::npos;) {
    out.append(text.substr(position, hit - position)).append(to);
    position = hit + from.size();
  }
  out.append(text.substr(position));
  return out;
}

// AlbertTokenizer.preprocess_text.
std::string albert_preprocess(std::string_view text, const AlbertTokenize& albert) {
  std::u32string prepared;
  if (albert.remove_space) {
    // " ".join(text.strip().split())
    const std::u32string characters = to_u32(text);
    const std::u32string_view rest = python_strip(characters);
    for (std::size_t i = 0; i < rest.size();) {
      if (is_python_space(rest[i])) {
        prepared.push_back(U' ');
        while (i < rest.size() && is_python_space(rest[i])) ++i;
      } else {
        prepared.push_back(rest[i++]);
      }
    }
  } else {
    prepared = to_u32(text);
  }
  prepared = replace_all(replace_all(prepared, U"``", U"\""), U"''", U"\"");
  if (!albert.keep_accents) {
    prepared = normalize(prepared, NormalForm::kNfkd);
    std::erase_if(prepared, [](char32_t c) { return combining_class(c) != 0; });
  }
  if (albert.do_lower_case) prepared = python_lower(prepared);
  return encode_utf8(prepared);
}

// ---- The tokenizer ------------------------------------------------------------------------------

enum class PieceKind : std::uint8_t { kNormal, kControl, kUnknown, kByte };

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(SentencePieceModel model, SentencePieceSettings settings,
                         const SpecialTokenConfig& special_config, const std::string& model_file,
                         const std::string& config_file);

  Encoding encode(std::string_view text, std::optional<std::string_view> pair) const override;
  std::vector<int> encode_plain(std::string_view text) const override {
    return sequence_ids(text, "text");
  }
  std::string decode(std::span<const int> ids, bool skip_special_tokens) const override;
  std::string decode_continuation(std::span<const int> previous_ids, int id) const override;
  std::string token_string(int id) const override { return token_text(id); }
  int vocab_size() const override { return vocab_size_; }
  std::optional<int> eos_id() const override { return special_tokens_.id(NamedToken::kEos); }
  std::optional<int> mask_id() const override { return special_tokens_.id(NamedToken::kMask); }
  bool is_special(int id) const override { return special_tokens_.is_special(id); }

 private:
  // SentencePiece's Decode() of a run of pieces, fed one piece at a time (see
  // SentencePieceProcessor::Decode in sentencepiece 0.2): control pieces are invisible, the
  // first piece that starts with "▁" loses it (when the model adds a dummy prefix), the other
  // "▁" become spaces, and runs of byte pieces become the UTF-8 they spell, each invalid byte
  // U+FFFD. With raw_bytes, byte pieces are passed through as they are (for streaming, whose
  // reader holds back incomplete characters).
  class PieceRun {
   public:
    PieceRun(const SentencePieceTokenizer& tokenizer, bool raw_bytes)
        : tokenizer_(&tokenizer), raw_bytes_(raw_bytes) {}

    void add(std::string_view piece, std::string& out);
    // Turns the pending byte pieces into text.
    void flush(std::string& out);
    // Whether what later pieces add no longer depends on the pieces before them.
    bool settled() const { return bos_space_seen_ || !text_empty_ || !expect_bos_space_; }

   private:
    const SentencePieceTokenizer* tokenizer_;
    bool raw_bytes_;
    bool expect_bos_space_ = true;
    bool bos_space_seen_ = false;
    bool text_empty_ = true;
    std::string pending_bytes_;
  };

  // convert_tokens_to_string of kDecodePieces over the tokens between two non-special added
  // tokens, fed one token at a time.
  class TokenRun {
   public:
    TokenRun(const SentencePieceTokenizer& tokenizer, bool raw_bytes)
        : tokenizer_(tokenizer), raw_bytes_(raw_bytes), pieces_(tokenizer, raw_bytes) {}

    void add(std::string token);
    std::string finish();
    bool settled() const { return count_ > 0 && pieces_.settled(); }
    // The text so far, for streaming (raw bytes, and no special tokens, come straight out).
    const std::string& streamed() const { return pieces_text_; }

   private:
    const SentencePieceTokenizer& tokenizer_;
    bool raw_bytes_;
    PieceRun pieces_;
    std::string text_;         // up to the last special token
    std::string pieces_text_;  // the pieces since then
    int count_ = 0;
    bool previous_is_special_ = false;
  };

  const std::string& token_text(int id) const;
  void check_id(int id) const;
  std::vector<int> sequence_ids(std::string_view sequence, std::string_view what) const;
  std::vector<int> tokenize(std::string_view text) const;
  std::string lowercase_outside_added_tokens(std::string_view text) const;
  void encode_text(std::string_view text, std::vector<int>& ids) const;
  std::vector<std::string> encode_pieces(std::string_view text) const;
  std::vector<std::string> split_digit_comma_pieces(std::vector<std::string> pieces) const;
  int piece_token_id(const std::string& piece) const;
  std::string tokens_to_string(const std::vector<std::string>& tokens) const;
  const sentencepiece::SentencePieceProcessor& encoder() const {
    return settings_.legacy ? *model_.processor : *model_.without_dummy_prefix;
  }

  SentencePieceModel model_;
  SentencePieceSettings settings_;
  int piece_count_ = 0;
  int piece_id_offset_ = 0;  // token id of piece i: i + piece_id_offset_ (IdLayout)
  std::unordered_map<std::string, int> fixed_ids_;  // tokens the IdLayout gives ids of their own
  SpecialTokens special_tokens_;
  SequenceTemplate sequence_template_;
  int vocab_size_ = 0;
  int unk_id_ = 0;                         // what a piece the model does not know becomes
  std::vector<PieceKind> kinds_;           // by piece id
  std::vector<std::int16_t> byte_values_;  // by piece id; -1 unless a byte piece
  bool consume_bos_space_ = true;          // SentencePiece's decoding drops the first "▁"
  // convert_ids_to_tokens of the ids that are not simply a piece: added and fixed tokens.
  std::unordered_map<int, std::string> own_text_;
  std::unordered_set<std::string> plain_added_texts_;  // added tokens decoded on their own
  std::unordered_set<int> plain_added_ids_;            // their ids
  std::string unk_token_;                              // the unk token's text (legacy: false)
  int unk_token_length_ = 0;  // pieces of the unk token's text (legacy: false)
};

// The tokens with ids of their own in an IdLayout (XLMRobertaTokenizer.fairseq_tokens_to_ids).
std::unordered_map<std::string, int> fixed_token_ids(IdLayout layout, int piece_count) {
  if (layout == IdLayout::kPieces) return {};
  return {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}, {"<mask>", piece_count + 1}};
}

int piece_id_offset(IdLayout layout) { return layout == IdLayout::kFairseq ? 1 : 0; }

SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceModel model,
                                               SentencePieceSettings settings,
                                               const SpecialTokenConfig& special_config,
                                               const std::string& model_file,
                                               const std::string& config_file)
    : model_(std::move(model)),
      settings_(std::move(settings)),
      piece_count_(model_.processor->GetPieceSize()),
      piece_id_offset_(piece_id_offset(settings_.id_layout)),
      fixed_ids_(fixed_token_ids(settings_.id_layout, piece_count_)),
      // The vocabulary (get_vocab) a named token is looked up in: the fixed tokens, then the
      // pieces.
      special_tokens_(special_config,
                      [this](const std::string& text) -> std::optional<int> {
                        if (auto fixed = fixed_ids_.find(text); fixed != fixed_ids_.end()) {
                          return fixed->second;
                        }
                        const int piece = model_.processor->PieceToId(text);
                        if (model_.processor->IdToPiece(piece) != text) return std::nullopt;
                        return piece + piece_id_offset_;
                      }),
      sequence_template_(special_tokens_.resolve(settings_.sequence_template)),
      // legacy: false decodes with the processor whose dummy prefix is off. SentencePiece takes
      // the leading "▁" off when the model adds a dummy prefix or removes extra whitespace
      // (T5's nmt_nfkc models do, with the prefix off too).
      consume_bos_space_((settings_.legacy && model_.add_dummy_prefix) ||
                         model_.remove_extra_whitespaces) {
  kinds_.resize(piece_count_);
  byte_values_.assign(piece_count_, -1);
  for (int id = 0; id < piece_count_; ++id) {
    if (model_.processor->IsControl(id)) {
      kinds_[id] = PieceKind::kControl;
    } else if (model_.processor->IsUnknown(id)) {
      kinds_[id] = PieceKind::kUnknown;
    } else if (model_.processor->IsByte(id)) {
      // The library accepts only byte pieces spelled <0xNN>.
      const std::string& piece = model_.processor->IdToPiece(id);
      unsigned value = 0;
      const auto [end, status] =
          std::from_chars(piece.data() + std::min<std::size_t>(3, piece.size()),
                          piece.data() + piece.size(), value, 16);
      if (piece.size() != 6 || !piece.starts_with("<0x") || status != std::errc() ||
          end != piece.data() + 5 || value > 0xFF) {
        throw Error(model_file + ": not a SentencePiece model (byte piece '" + brief_text(piece) +
                    "' is not of the form <0xNN>)");
      }
      kinds_[id] = PieceKind::kByte;
      byte_values_[id] = static_cast<std::int16_t>(value);
    }
  }

  vocab_size_ = piece_count_ + piece_id_offset_;
  for (const auto& [text, id] : fixed_ids_) {
    own_text_[id] = text;
    vocab_size_ = std::max(vocab_size_, id + 1);
  }
  const int class_vocab_size = vocab_size_;  // the class's vocab_size, without added tokens
  const int id_limit = vocab_size_ + static_cast<int>(special_config.added_tokens.size());
  for (const AddedToken& token : special_config.added_tokens) {
    if (token.id >= id_limit) {
      throw Error(config_file + ": added token '" + brief_text(token.content) + "' has id " +
                  std::to_string(token.id) + ", past the " + std::to_string(piece_count_) +
                  " pieces of the model and the added tokens");
    }
  }
  for (const AddedToken& token : special_tokens_.split_tokens()) {
    own_text_[token.id] = token.content;
    vocab_size_ = std::max(vocab_size_, token.id + 1);
  }
  const auto fixed_unk = fixed_ids_.find("<unk>");
  unk_id_ = fixed_unk != fixed_ids_.end() ? fixed_unk->second
                                          : model_.processor->unk_id() + piece_id_offset_;
  // PreTrainedTokenizer._decode's "legacy added tokens": the added tokens that are not special,
  // and the additional special tokens past the class's vocab_size (T5's sentinels).
  for (const std::string& content : special_config.additional_special_tokens) {
    const std::optional<int> id = special_tokens_.added_token_id(content);
    if (id && *id >= class_vocab_size) {
      plain_added_texts_.insert(content);
      plain_added_ids_.insert(*id);
    }
  }
  for (const AddedToken& token : special_config.added_tokens) {
    if (special_tokens_.is_special_text(token.content)) continue;
    plain_added_texts_.insert(token.content);
    plain_added_ids_.insert(token.id);
    // decode() goes by the token's text, which a piece of the model may share.
    const int piece = model_.processor->PieceToId(token.content);
    if (model_.processor->IdToPiece(piece) == token.content) {
      plain_added_ids_.insert(piece + piece_id_offset_);
    }
  }
  if (!settings_.legacy) {
    const std::optional<AddedToken>& unk =
        special_config.named[static_cast<std::size_t>(NamedToken::kUnk)];
    unk_token_ = unk ? unk->content : "";
    std::vector<int> unk_ids;
    model_.without_dummy_prefix->Encode(unk_token_, &unk_ids).IgnoreError();
    unk_token_length_ = static_cast<int>(unk_ids.size());
  }
}

const std::string& SentencePieceTokenizer::token_text(int id) const {
  check_id(id);
  if (auto own = own_text_.find(id); own != own_text_.end()) return own->second;
  const int piece = id - piece_id_offset_;
  if (piece < 0 || piece >= piece_count_) {
    throw Error("SentencePiece tokenizer: token id " + std::to_string(id) +
                " is neither a piece of the model nor an added token");
  }
  return model_.processor->IdToPiece(piece);
}

void SentencePieceTokenizer::check_id(int id) const {
  if (id < 0 || id >= vocab_size_) {
    throw Error("SentencePiece tokenizer: token id " + std::to_string(id) +
                " is outside the vocabulary (" + std::to_string(vocab_size_) + " ids)");
  }
}

Encoding SentencePieceTokenizer::encode(std::string_view text,
                                        std::optional<std::string_view> pair) const {
  // suffix_once: a sequence that ends with its suffix has it taken off, to be put back once.
  auto without_suffix = [&](std::vector<int> ids, const std::vector<int>& suffix) {
    if (settings_.suffix_once && !suffix.empty() && ids.size() >= suffix.size() &&
        std::equal(suffix.rbegin(), suffix.rend(), ids.rbegin())) {
      ids.resize(ids.size() - suffix.size());
    }
    return ids;
  };
  const std::vector<int> first =
      without_suffix(sequence_ids(text, "text"), sequence_template_.first_suffix);
  if (!pair) return sequence_template_.apply(first, std::nullopt);
  const std::vector<int> second =
      without_suffix(sequence_ids(*pair, "pair"), sequence_template_.second_suffix);
  return sequence_template_.apply(first, second);
}

// The ids of one sequence, without the template's special tokens. LlamaTokenizer.tokenize with
// legacy: false writes "▁" in the text as a space and adds the prefix space itself, once, then
// drops it again before a special token; the others are PreTrainedTokenizer.tokenize.
std::vector<int> SentencePieceTokenizer::sequence_ids(std::string_view sequence,
                                                      std::string_view what) const {
  decode_utf8(sequence, what);  // refuses text that is not UTF-8
  if (settings_.legacy || sequence.empty()) return tokenize(sequence);
  std::string prepared = settings_.add_prefix_space ? std::string(kSentencePieceSpace) : "";
  append_with_spaces(prepared, sequence);
  std::vector<int> ids = tokenize(prepared);
  if (ids.size() > 1 && token_text(ids[0]) == kSentencePieceSpace &&
      special_tokens_.is_special_text(token_text(ids[1]))) {
    ids.erase(ids.begin());
  }
  return ids;
}

// PreTrainedTokenizer.tokenize + convert_tokens_to_ids: the text lowered (do_lower_case), the
// added tokens cut out (eating the whitespace beside them when lstrip / rstrip), and every
// non-empty piece of text between them encoded on its own.
std::vector<int> SentencePieceTokenizer::tokenize(std::string_view text) const {
  std::string lowered;
  if (settings_.lowercase_text) {
    lowered = lowercase_outside_added_tokens(text);
    text = lowered;
  }
  std::vector<int> ids;
  for (const TextSegment& segment : split_added_tokens(text, special_tokens_.split_tokens())) {
    if (segment.token) {
      ids.push_back(segment.token->id);
    } else if (!segment.text.empty()) {
      encode_text(segment.text, ids);
    }
  }
  return ids;
}

// do_lower_case in PreTrainedTokenizer.tokenize: str.lower() of one character at a time, except
// where an added or special token starts, so that "[MASK]" is still found ("[Mask]" becomes
// text). (transformers keeps only the special tokens and the non-special added tokens marked
// normalized; for the others, lowering would hide them from the split that follows.)
std::string SentencePieceTokenizer::lowercase_outside_added_tokens(std::string_view text) const {
  const std::vector<char32_t> characters = decode_utf8(text, "text");
  std::string lowered;
  std::u32string lower;
  std::size_t position = 0;  // byte offset of characters[i]
  for (std::size_t i = 0; i < characters.size();) {
    const std::string_view rest = text.substr(position);
    const auto& tokens = special_tokens_.split_tokens();
    const auto token = std::find_if(tokens.begin(), tokens.end(), [&](const AddedToken& added) {
      return rest.starts_with(added.content);
    });
    if (token != tokens.end()) {
      lowered += token->content;
      for (const std::size_t end = position + token->content.size(); position < end; ++i) {
        position += utf8_length(characters[i]);
      }
      continue;
    }
    lower.clear();
    append_python_lower(lower, characters[i]);
    for (char32_t c : lower) append_utf8(lowered, c);
    position += utf8_length(characters[i]);
    ++i;
  }
  return lowered;
}

// _tokenize + convert_tokens_to_ids of a piece of text between added tokens.
void SentencePieceTokenizer::encode_text(std::string_view text, std::vector<int>& ids) const {
  std::string preprocessed;
  if (settings_.albert_tokenize) {
    preprocessed = albert_preprocess(text, *settings_.albert_tokenize);
    text = preprocessed;
  }
  std::vector<std::string> pieces = encode_pieces(text);
  if (settings_.albert_tokenize) pieces = split_digit_comma_pieces(std::move(pieces));
  for (const std::string& piece : pieces) ids.push_back(piece_token_id(piece));
}

// sp_model.encode(text, out_type=str). LlamaTokenizer with legacy: false encodes with the model
// without its dummy prefix, and text that starts with a space after the unk token's text, whose
// pieces are then dropped, so that the space is not taken for a dummy prefix.
std::vector<std::string> SentencePieceTokenizer::encode_pieces(std::string_view text) const {
  std::vector<std::string> pieces;
  sentencepiece::util::Status status;
  std::size_t dropped = 0;
  if (settings_.legacy || !(text.starts_with(kSentencePieceSpace) || text.starts_with(' '))) {
    status = encoder().Encode(text, &pieces);
  } else {
    status = encoder().Encode(unk_token_ + std::string(text), &pieces);
    if (pieces.size() >= static_cast<std::size_t>(unk_token_length_)) dropped = unk_token_length_;
  }
  if (!status.ok()) {
    throw Error(std::string("SentencePiece tokenizer: cannot encode the text (") +
                brief_text(status.message(), 200) + ")");
  }
  pieces.erase(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(dropped));
  return pieces;
}

// The rest of AlbertTokenizer._tokenize: a piece that ends in a digit and "," is encoded again
// without the comma and its "▁", and the comma follows on its own ("▁9," -> "▁9" ","); the
// first piece loses its "▁" again when the original had none.
std::vector<std::string> SentencePieceTokenizer::split_digit_comma_pieces(
    std::vector<std::string> pieces) const {
  std::vector<std::string> split;
  for (std::string& piece : pieces) {
    const std::vector<char32_t> characters = decode_utf8(piece, "piece");
    const std::size_t count = characters.size();
    if (count < 2 || characters[count - 1] != U',' || !is_python_digit(characters[count - 2])) {
      split.push_back(std::move(piece));
      continue;
    }
    std::string digits;
    const std::string_view number = std::string_view(piece).substr(0, piece.size() - 1);
    for (std::size_t i = 0; i < number.size();) {
      if (number.substr(i).starts_with(kSentencePieceSpace)) {
        i += kSentencePieceSpace.size();
      } else {
        digits += number[i++];
      }
    }
    std::vector<std::string> again;
    const sentencepiece::util::Status status = model_.processor->Encode(digits, &again);
    if (!status.ok()) {
      throw Error(std::string("SentencePiece tokenizer: cannot encode the text (") +
                  brief_text(status.message(), 200) + ")");
    }
    if (!piece.starts_with(kSentencePieceSpace) && !again.empty() &&
        again.front().starts_with(kSentencePieceSpace)) {
      if (again.front() == kSentencePieceSpace) {
        again.erase(again.begin());
      } else {
        again.front().erase(0, kSentencePieceSpace.size());
      }
    }
    again.emplace_back(",");
    for (std::string& part : again) split.push_back(std::move(part));
  }
  return split;
}

// convert_tokens_to_ids of a piece: the added or fixed token with its text, else the model's
// piece; a piece the model does not know (an unknown character's text) is the unk token.
int SentencePieceTokenizer::piece_token_id(const std::string& piece) const {
  if (const std::optional<int> added = special_tokens_.added_token_id(piece)) return *added;
  if (auto fixed = fixed_ids_.find(piece); fixed != fixed_ids_.end()) return fixed->second;
  const int id = model_.processor->PieceToId(piece);
  if (model_.processor->IsUnknown(id)) return unk_id_;
  return id + piece_id_offset_;
}

void SentencePieceTokenizer::PieceRun::add(std::string_view piece, std::string& out) {
  const int id = tokenizer_->model_.processor->PieceToId(piece);
  const PieceKind kind = tokenizer_->kinds_[id];
  if (kind == PieceKind::kByte) {
    const char byte = static_cast<char>(tokenizer_->byte_values_[id]);
    if (raw_bytes_) {
      out += byte;
    } else {
      pending_bytes_ += byte;
    }
    text_empty_ = false;
    return;
  }
  flush(out);
  if (bos_space_seen_ || !text_empty_) expect_bos_space_ = false;
  std::string_view surface = piece;
  bool consumed = false;
  if (kind == PieceKind::kControl) {
    surface = {};
  } else if (kind == PieceKind::kUnknown) {
    if (tokenizer_->model_.processor->IdToPiece(id) == piece) {
      surface = tokenizer_->model_.unknown_surface;
    }
  } else if (expect_bos_space_ && tokenizer_->consume_bos_space_) {
    consumed = surface.starts_with(kSentencePieceSpace);
    if (consumed) surface.remove_prefix(kSentencePieceSpace.size());
    // A model that removes extra whitespace drops every leading space.
    if (tokenizer_->model_.remove_extra_whitespaces) consumed = false;
  }
  bos_space_seen_ = consumed;
  const std::size_t before = out.size();
  if (kind == PieceKind::kNormal) {
    append_with_spaces(out, surface);
  } else {
    out += surface;
  }
  if (out.size() > before) text_empty_ = false;
}

void SentencePieceTokenizer::PieceRun::flush(std::string& out) {
  const std::string_view bytes = pending_bytes_;
  for (std::size_t offset = 0; offset < bytes.size();) {
    const auto lead = static_cast<unsigned char>(bytes[offset]);
    const std::size_t length = lead < 0x80             ? 1
                               : (lead & 0xE0) == 0xC0 ? 2
                               : (lead & 0xF0) == 0xE0 ? 3
                               : (lead & 0xF8) == 0xF0 ? 4
                                                       : 0;
    if (length > 0 && offset + length <= bytes.size() &&
        is_valid_utf8(bytes.substr(offset, length))) {
      out += bytes.substr(offset, length);
      offset += length;
    } else {
      out += kReplacementCharacter;
      offset += 1;
    }
  }
  pending_bytes_.clear();
}

void SentencePieceTokenizer::TokenRun::add(std::string token) {
  const SentencePieceSettings& settings = tokenizer_.settings_;
  // The dummy prefix added when encoding is taken off again.
  if (count_ == 0 && settings.drop_first_prefix_space && token.starts_with(kSentencePieceSpace)) {
    token.erase(0, kSentencePieceSpace.size());
  }
  if (tokenizer_.special_tokens_.is_special_text(token)) {
    // Special tokens are not decoded by SentencePiece; the class's rule may put a space before.
    const bool space_before =
        settings.space_before_special == SpaceBeforeSpecial::kAlways ||
        (settings.space_before_special == SpaceBeforeSpecial::kUnlessFirst && count_ != 0);
    if (!previous_is_special_ && space_before) text_ += ' ';
    pieces_.flush(pieces_text_);
    text_ += pieces_text_;
    text_ += token;
    pieces_text_.clear();
    pieces_ = PieceRun(tokenizer_, raw_bytes_);
    previous_is_special_ = true;
  } else {
    if (previous_is_special_ && count_ == 1 && settings.space_after_leading_special &&
        !token.starts_with(kSentencePieceSpace)) {
      text_ += ' ';
    }
    pieces_.add(token, pieces_text_);
    previous_is_special_ = false;
  }
  ++count_;
}

std::string SentencePieceTokenizer::TokenRun::finish() {
  pieces_.flush(pieces_text_);
  return text_ + pieces_text_;
}

// convert_tokens_to_string of a run of tokens between non-special added tokens.
std::string SentencePieceTokenizer::tokens_to_string(const std::vector<std::string>& tokens) const {
  std::string text;
  if (settings_.tokens_to_string == TokensToString::kJoinPieces) {
    for (const std::string& token : tokens) {
      for (std::size_t i = 0; i < token.size();) {
        if (std::string_view(token).substr(i).starts_with(kSentencePieceSpace)) {
          text += ' ';
          i += kSentencePieceSpace.size();
        } else {
          text += token[i++];
        }
      }
    }
  } else {
    TokenRun run(*this, false);
    for (const std::string& token : tokens) run.add(token);
    text = run.finish();
  }
  if (!settings_.strip_text) return text;
  const std::vector<char32_t> characters = decode_utf8(text, "decoded text");
  return encode_utf8(python_strip(std::u32string_view(characters.data(), characters.size())));
}

// PreTrainedTokenizer._decode: tokens of non-special added tokens are written as they are, the
// runs of other tokens between them through convert_tokens_to_string.
std::string SentencePieceTokenizer::decode(std::span<const int> ids,
                                           bool skip_special_tokens) const {
  return decode_token_runs(
      *this, ids, skip_special_tokens, plain_added_texts_,
      [this](const std::vector<std::string>& run) { return tokens_to_string(run); },
      {settings_.spaces_between_special_tokens, settings_.clean_up_tokenization_spaces});
}

// What `id` adds to decode(previous_ids + id, true) after decode(previous_ids, true), with byte
// pieces as raw bytes. Only the tokens since the last non-special added token matter, and of
// those only the first few: once a run has produced text, a token's text no longer depends on
// what came before it. That does not hold for a class whose decoding strips its text (ALBERT,
// XLM-R: a space at the end comes and goes with what follows), which decodes twice instead.
std::string SentencePieceTokenizer::decode_continuation(std::span<const int> previous_ids,
                                                        int id) const {
  check_id(id);
  if (is_special(id)) return "";
  if (settings_.strip_text) return decode_difference(*this, previous_ids, id);
  std::size_t run_begin = plain_added_ids_.empty() ? 0 : previous_ids.size();
  while (run_begin > 0) {
    const int previous = previous_ids[run_begin - 1];
    if (!is_special(previous) && plain_added_ids_.contains(previous)) break;
    --run_begin;
  }
  // spaces_between_special_tokens joins the texts of the runs and added tokens with a space.
  const bool after_added_token = run_begin > 0;
  TokenRun run(*this, true);
  for (std::size_t i = run_begin; i < previous_ids.size() && !run.settled(); ++i) {
    if (!is_special(previous_ids[i])) run.add(token_text(previous_ids[i]));
  }
  const bool run_text_empty = run.streamed().empty();
  const std::string& token = token_text(id);
  if (plain_added_ids_.contains(id)) {
    const bool separated = after_added_token || !run_text_empty;
    return (settings_.spaces_between_special_tokens && separated ? " " : "") + token;
  }
  const std::size_t before = run.streamed().size();
  run.add(token);
  std::string added = run.streamed().substr(before);
  if (settings_.spaces_between_special_tokens && after_added_token && run_text_empty &&
      !added.empty()) {
    added.insert(0, 1, ' ');
  }
  return added;
}

}  // namespace

std::optional<fs::path> sentencepiece_model_file(const fs::path& model_dir) {
  const char* file = find_sentencepiece_file(model_dir);
  if (file == nullptr) return std::nullopt;
  return model_dir / file;
}

std::string sentencepiece_class(const fs::path& model_dir, const fs::path& model_file,
                                std::span<const std::string_view> classes, bool first_is_default) {
  const std::optional<std::string> declared = declared_tokenizer_class(model_dir);
  if (declared && std::find(classes.begin(), classes.end(), *declared) != classes.end()) {
    return *declared;
  }
  if (!declared && first_is_default && !classes.empty()) return std::string(classes.front());
  std::string readers;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (i > 0) readers += i + 1 == classes.size() ? " or " : ", ";
    readers += classes[i];
  }
  throw Error(model_file.string() + ": " +
              (declared ? "the folder's tokenizer class is " + brief_text(*declared)
                        : std::string("neither tokenizer_config.json (tokenizer_class) nor "
                                      "config.json (model_type) names the tokenizer class")) +
              "; attn reads " + model_file.filename().string() + " with " + readers + " only");
}

json read_sentencepiece_tokenizer_config(const fs::path& model_dir) {
  const fs::path config_path = model_dir / "tokenizer_config.json";
  json config = json::object();
  if (entry_exists(config_path)) {
    config = read_json_file(config_path, kMaxConfigBytes);
    if (!config.is_object()) throw Error(config_path.string() + ": expected a JSON object");
  }
  // Options for the library (sampling, say) would make the encoding differ from attn's.
  if (config.contains("sp_model_kwargs") && !config["sp_model_kwargs"].is_null() &&
      config["sp_model_kwargs"] != json::object()) {
    throw Error(config_path.string() + ": sp_model_kwargs " +
                brief_json(config["sp_model_kwargs"]) + " is not supported");
  }
  return config;
}

std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const fs::path& model_dir) {
  const char* file = find_sentencepiece_file(model_dir);
  if (file == nullptr) {
    throw Error(model_dir.string() +
                ": no SentencePiece model (looked for tokenizer.model, spiece.model and "
                "sentencepiece.bpe.model)");
  }
  const fs::path model_path = model_dir / file;
  SentencePieceModel model = read_sentencepiece_model(model_path);

  // The file's name tells the class, or the folder declares one of those that read the file.
  const SentencePieceClass& reader = find_sentencepiece_class(model_dir, file);
  const json config = read_sentencepiece_tokenizer_config(model_dir);
  const fs::path config_path = model_dir / "tokenizer_config.json";
  SentencePieceSettings settings = reader.settings(config, config_path.string());
  if (!settings.legacy) model.without_dummy_prefix = read_model_without_dummy_prefix(model_path);
  SpecialTokenConfig special_config =
      read_special_token_config(model_dir, config, settings.named_defaults, settings.class_name);
  if (settings.extra_ids) {
    add_extra_ids(special_config, *settings.extra_ids, model.processor->GetPieceSize(),
                  config_path.string());
  }
  return std::make_unique<SentencePieceTokenizer>(std::move(model), std::move(settings),
                                                  special_config, model_path.string(),
                                                  config_path.string());
}

void append_with_spaces(std::string& out, std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i).starts_with(kSentencePieceSpace)) {
      out += ' ';
      i += kSentencePieceSpace.size();
    } else {
      out += text[i++];
    }
  }
}

}  // namespace attn
