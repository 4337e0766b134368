#include "src/tokenizer/sentencepiece.h"

#include <sentencepiece_processor.h>
#include <utf8proc.h>

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
#include "src/io/json_util.h"
#include "src/tokenizer/unicode.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// U+2581 LOWER ONE EIGHTH BLOCK: SentencePiece's stand-in for a space inside pieces.
constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";
// What SentencePiece decodes an invalid byte of byte-fallback pieces to: U+FFFD.
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";
// TrainerSpec.unk_surface's default: " ⁇ ".
constexpr std::string_view kDefaultUnknownSurface = " \xE2\x81\x87 ";

// A second normalizer_spec (ModelProto field 3) holding only add_dummy_prefix (field 3) =
// false. Appended to a serialized model, protobuf merges it into the first one: this is how
// LlamaTokenizer(legacy=False) turns the dummy prefix off.
constexpr char kNoDummyPrefixBytes[] = {'\x1a', '\x02', '\x18', '\x00'};

// ---- Settings of tokenizer.model that the library does not expose ---------------------------

// The parts of the serialized ModelProto that decoding depends on (the installed headers
// declare ModelProto but do not define it). Defaults are those of sentencepiece_model.proto.
struct ModelFileSettings {
  bool has_trainer_spec = false;
  bool has_normalizer_spec = false;
  bool has_denormalizer_spec = false;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool treat_whitespace_as_suffix = false;
  std::string unknown_surface{kDefaultUnknownSurface};
};

struct ProtoField {
  std::uint64_t number = 0;
  std::uint64_t value = 0;  // wire type 0 (varint)
  std::string_view bytes;   // wire type 2 (length-delimited)
};

// Walks the fields of one protobuf message (wire format). The library has already parsed the
// file, so a malformed field means the two disagree: reported as a broken file all the same.
class ProtoFields {
 public:
  ProtoFields(std::string_view data, const std::string& file) : data_(data), file_(file) {}

  // Reads the next field into `field`; false at the end of the message.
  bool next(ProtoField& field) {
    if (data_.empty()) return false;
    const std::uint64_t key = varint();
    field = ProtoField{key >> 3, 0, {}};
    switch (key & 7) {
      case 0:
        field.value = varint();
        return true;
      case 1:
        skip(8);
        return true;
      case 2: {
        const std::uint64_t length = varint();
        if (length > data_.size()) malformed();
        field.bytes = data_.substr(0, length);
        data_.remove_prefix(length);
        return true;
      }
      case 5:
        skip(4);
        return true;
      default:
        malformed();
    }
  }

 private:
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (data_.empty()) malformed();
      const auto byte = static_cast<unsigned char>(data_.front());
      data_.remove_prefix(1);
      value |= std::uint64_t{byte & 0x7Fu} << shift;
      if (byte < 0x80) return value;
    }
    malformed();
  }

  void skip(std::size_t bytes) {
    if (bytes > data_.size()) malformed();
    data_.remove_prefix(bytes);
  }

  [[noreturn]] void malformed() const {
    throw Error(file_ + ": not a SentencePiece model (malformed protocol buffer)");
  }

  std::string_view data_;
  const std::string& file_;
};

// ModelProto: 2 trainer_spec, 3 normalizer_spec, 5 denormalizer_spec. TrainerSpec: 24
// treat_whitespace_as_suffix, 44 unk_surface. NormalizerSpec: 3 add_dummy_prefix, 4
// remove_extra_whitespaces. A message given twice is merged, a scalar given twice keeps the last.
ModelFileSettings read_model_file_settings(std::string_view serialized, const std::string& file) {
  ModelFileSettings settings;
  ProtoFields model(serialized, file);
  for (ProtoField field; model.next(field);) {
    if (field.number == 2) {
      settings.has_trainer_spec = true;
      ProtoFields trainer(field.bytes, file);
      for (ProtoField inner; trainer.next(inner);) {
        if (inner.number == 24) settings.treat_whitespace_as_suffix = inner.value != 0;
        if (inner.number == 44) settings.unknown_surface = std::string(inner.bytes);
      }
    } else if (field.number == 3) {
      settings.has_normalizer_spec = true;
      ProtoFields normalizer(field.bytes, file);
      for (ProtoField inner; normalizer.next(inner);) {
        if (inner.number == 3) settings.add_dummy_prefix = inner.value != 0;
        if (inner.number == 4) settings.remove_extra_whitespaces = inner.value != 0;
      }
    } else if (field.number == 5) {
      settings.has_denormalizer_spec = true;
    }
  }
  return settings;
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_processor(std::string_view serialized,
                                                                      const std::string& file) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = processor->LoadFromSerializedProto(serialized);
  } catch (const std::exception& error) {
    // Most problems come back as a status, but the trie builder inside the library throws (a
    // piece starting with a NUL byte is an empty key to it).
    throw Error(file + ": not a SentencePiece model (libsentencepiece: " +
                brief_text(error.what(), 200) + ")");
  }
  if (!status.ok()) {
    // The library reports a protobuf that does not parse by the failed check's source line.
    const std::string message = status.message();
    const std::string reason = message.find("ParseFromArray") != std::string::npos
                                   ? "the file is not a valid protocol buffer"
                                   : "libsentencepiece: " + brief_text(message, 200);
    throw Error(file + ": not a SentencePiece model (" + reason + ")");
  }
  return processor;
}

// ---- Settings from tokenizer_config.json and special_tokens_map.json --------------------------

struct AddedToken {
  std::string content;
  int id = 0;
  bool special = false;
  bool lstrip = false;  // eats the whitespace before it in the text
  bool rstrip = false;  // eats the whitespace after it
};

// LlamaTokenizer's constructor defaults, overridden by the folder's files.
struct LlamaSettings {
  bool add_bos_token = true;
  bool add_eos_token = false;
  bool legacy = true;
  bool add_prefix_space = true;
  bool spaces_between_special_tokens = false;
  bool clean_up_tokenization_spaces = false;
  // bos_token, eos_token, unk_token, pad_token; nullopt for none.
  std::optional<std::string> bos_token = "<s>";
  std::optional<std::string> eos_token = "</s>";
  std::optional<std::string> unk_token = "<unk>";
  std::optional<std::string> pad_token;
  std::vector<std::string> additional_special_tokens;
  std::vector<AddedToken> added_tokens;  // added_tokens_decoder
};

bool optional_bool(const json& config, const char* key, bool fallback, const std::string& file) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_boolean()) throw Error(file + ": '" + key + "' must be true or false");
  return config[key].get<bool>();
}

// bos/eos/unk/pad and additional_special_tokens, as both files spell them.
void read_named_tokens(const json& config, LlamaSettings& settings, const std::string& file) {
  const std::pair<const char*, std::optional<std::string>*> named[] = {
      {"bos_token", &settings.bos_token},
      {"eos_token", &settings.eos_token},
      {"unk_token", &settings.unk_token},
      {"pad_token", &settings.pad_token}};
  for (const auto& [key, content] : named) {
    if (config.contains(key)) *content = named_token_content(config[key], file + ": " + key);
  }
  if (config.contains("additional_special_tokens")) {
    const json& tokens = config["additional_special_tokens"];
    if (!tokens.is_array()) throw Error(file + ": 'additional_special_tokens' must be a list");
    settings.additional_special_tokens.clear();
    for (const json& token : tokens) {
      std::optional<std::string> content =
          named_token_content(token, file + ": additional_special_tokens");
      if (content) settings.additional_special_tokens.push_back(std::move(*content));
    }
  }
}

bool token_flag(const json& token, const char* key, const std::string& where) {
  if (!token.contains(key)) return false;
  if (!token[key].is_boolean()) throw Error(where + ": '" + key + "' must be true or false");
  return token[key].get<bool>();
}

// added_tokens_decoder: {"32000": {"content": ..., "special": ..., "lstrip": ..., ...}}.
void read_added_tokens_decoder(const json& config, LlamaSettings& settings,
                               const std::string& file) {
  if (!config.contains("added_tokens_decoder")) return;
  const json& decoder = config["added_tokens_decoder"];
  if (!decoder.is_object()) throw Error(file + ": added_tokens_decoder is not an object");
  for (const auto& [id_text, token] : decoder.items()) {
    const std::string where = file + ": added_tokens_decoder[\"" + brief_text(id_text) + "\"]";
    if (!token.is_object() || !token.contains("content") || !token["content"].is_string()) {
      throw Error(where + ": expected an object with a string \"content\"");
    }
    int id = -1;
    const auto [end, status] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (status != std::errc() || end != id_text.data() + id_text.size() || id < 0) {
      throw Error(where + ": the key is not a token id");
    }
    AddedToken added{token["content"].get<std::string>(), id, token_flag(token, "special", where),
                     token_flag(token, "lstrip", where), token_flag(token, "rstrip", where)};
    if (added.content.empty()) throw Error(where + ": the token is empty");
    settings.added_tokens.push_back(std::move(added));
  }
}

LlamaSettings read_llama_settings(const fs::path& model_dir) {
  LlamaSettings settings;
  const fs::path config_path = model_dir / "tokenizer_config.json";
  if (entry_exists(config_path)) {
    const std::string file = config_path.string();
    const json config = read_json_file(config_path, kMaxConfigBytes);
    if (!config.is_object()) throw Error(file + ": expected a JSON object");
    if (config.contains("tokenizer_class")) {
      const json& name = config["tokenizer_class"];
      if (!name.is_string() || (name != "LlamaTokenizer" && name != "LlamaTokenizerFast")) {
        throw Error(file + ": tokenizer_class is " + brief_json(name) +
                    "; attn reads tokenizer.model as LlamaTokenizer only");
      }
    }
    settings.add_bos_token = optional_bool(config, "add_bos_token", true, file);
    settings.add_eos_token = optional_bool(config, "add_eos_token", false, file);
    settings.legacy = optional_bool(config, "legacy", true, file);
    settings.add_prefix_space = optional_bool(config, "add_prefix_space", true, file);
    settings.spaces_between_special_tokens =
        optional_bool(config, "spaces_between_special_tokens", false, file);
    settings.clean_up_tokenization_spaces =
        optional_bool(config, "clean_up_tokenization_spaces", false, file);
    read_named_tokens(config, settings, file);
    read_added_tokens_decoder(config, settings, file);
  }
  // Hugging Face applies special_tokens_map.json over tokenizer_config.json.
  const fs::path map_path = model_dir / "special_tokens_map.json";
  if (entry_exists(map_path)) {
    const json map = read_json_file(map_path, kMaxConfigBytes);
    if (!map.is_object()) throw Error(map_path.string() + ": expected a JSON object");
    read_named_tokens(map, settings, map_path.string());
  }
  return settings;
}

// Python's str.isspace(), which str.strip() uses: the Unicode White_Space characters and the
// separators U+001C..U+001F.
bool is_python_space(char32_t c) {
  if (c >= 0x1C && c <= 0x1F) return true;
  switch (utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->bidi_class) {
    case UTF8PROC_BIDI_CLASS_WS:
    case UTF8PROC_BIDI_CLASS_B:
    case UTF8PROC_BIDI_CLASS_S:
      return true;
    default:
      return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_ZS;
  }
}

// ---- The tokenizer ------------------------------------------------------------------------------

enum class PieceKind : std::uint8_t { kNormal, kControl, kUnknown, kByte };

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor,
                         std::unique_ptr<sentencepiece::SentencePieceProcessor> no_prefix,
                         const ModelFileSettings& file_settings, LlamaSettings settings,
                         const std::string& model_file, const std::string& config_file);

  Encoding encode(std::string_view text, std::optional<std::string_view> pair) const override;
  std::string decode(std::span<const int> ids, bool skip_special_tokens) const override;
  std::string decode_continuation(std::span<const int> previous_ids, int id) const override;
  std::string token_string(int id) const override { return token_text(id); }
  int vocab_size() const override { return vocab_size_; }
  std::optional<int> eos_id() const override { return eos_id_; }
  std::optional<int> mask_id() const override { return std::nullopt; }
  bool is_special(int id) const override { return special_ids_.contains(id); }

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

  // LlamaTokenizer.convert_tokens_to_string over the tokens between two non-special added
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
  std::vector<int> tokenize(std::string_view text) const;
  void encode_text(std::string_view text, std::vector<int>& ids) const;
  const sentencepiece::SentencePieceProcessor& encoder() const {
    return settings_.legacy ? *processor_ : *no_prefix_;
  }

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  // The model with its dummy prefix turned off, for legacy: false (null otherwise).
  std::unique_ptr<sentencepiece::SentencePieceProcessor> no_prefix_;
  LlamaSettings settings_;
  int piece_count_ = 0;
  int vocab_size_ = 0;
  std::vector<PieceKind> kinds_;           // by piece id
  std::vector<std::int16_t> byte_values_;  // by piece id; -1 unless a byte piece
  bool consume_bos_space_ = true;          // the model's add_dummy_prefix, effectively
  bool remove_extra_whitespaces_ = true;
  std::string unknown_surface_;
  std::unordered_map<int, std::string> added_text_;    // id -> content (convert_ids_to_tokens)
  std::vector<AddedToken> split_tokens_;               // cut out of the text first, longest first
  std::unordered_set<int> special_ids_;                // all_special_ids
  std::unordered_set<std::string> special_texts_;      // all_special_tokens
  std::unordered_set<std::string> plain_added_texts_;  // added tokens decoded on their own
  std::unordered_set<int> plain_added_ids_;            // their ids
  std::optional<int> bos_id_;
  std::optional<int> eos_id_;
  int unk_token_length_ = 0;  // pieces of the unk token's text (legacy: false)
};

SentencePieceTokenizer::SentencePieceTokenizer(
    std::unique_ptr<sentencepiece::SentencePieceProcessor> processor,
    std::unique_ptr<sentencepiece::SentencePieceProcessor> no_prefix,
    const ModelFileSettings& file_settings, LlamaSettings settings, const std::string& model_file,
    const std::string& config_file)
    : processor_(std::move(processor)),
      no_prefix_(std::move(no_prefix)),
      settings_(std::move(settings)),
      piece_count_(processor_->GetPieceSize()),
      // legacy: false decodes with the processor whose dummy prefix is off.
      consume_bos_space_(settings_.legacy && file_settings.add_dummy_prefix),
      remove_extra_whitespaces_(file_settings.remove_extra_whitespaces),
      unknown_surface_(file_settings.unknown_surface) {
  kinds_.resize(piece_count_);
  byte_values_.assign(piece_count_, -1);
  for (int id = 0; id < piece_count_; ++id) {
    if (processor_->IsControl(id)) {
      kinds_[id] = PieceKind::kControl;
    } else if (processor_->IsUnknown(id)) {
      kinds_[id] = PieceKind::kUnknown;
    } else if (processor_->IsByte(id)) {
      // The library accepts only byte pieces spelled <0xNN>.
      const std::string& piece = processor_->IdToPiece(id);
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

  vocab_size_ = piece_count_;
  for (const AddedToken& token : settings_.added_tokens) {
    if (token.id >= piece_count_ + static_cast<int>(settings_.added_tokens.size())) {
      throw Error(config_file + ": added token '" + brief_text(token.content) + "' has id " +
                  std::to_string(token.id) + ", past the " + std::to_string(piece_count_) +
                  " pieces of the model and the added tokens");
    }
    vocab_size_ = std::max(vocab_size_, token.id + 1);
    added_text_[token.id] = token.content;
    split_tokens_.push_back(token);
  }
  // convert_tokens_to_ids: added tokens first, then the model's pieces; a name found in
  // neither is not a token of this tokenizer.
  auto find_id = [&](const std::string& text) -> std::optional<int> {
    for (const AddedToken& token : settings_.added_tokens) {
      if (token.content == text) return token.id;
    }
    const int id = processor_->PieceToId(text);
    if (processor_->IdToPiece(id) == text) return id;
    return std::nullopt;
  };
  std::vector<std::string> special_texts = settings_.additional_special_tokens;
  for (const auto* named :
       {&settings_.bos_token, &settings_.eos_token, &settings_.unk_token, &settings_.pad_token}) {
    if (*named) special_texts.push_back(**named);
  }
  for (const AddedToken& token : settings_.added_tokens) {
    if (token.special) special_texts.push_back(token.content);
  }
  for (const std::string& text : special_texts) {
    const std::optional<int> id = find_id(text);
    if (!id) continue;
    special_ids_.insert(*id);
    special_texts_.insert(text);
    if (!added_text_.contains(*id)) split_tokens_.push_back({text, *id, true, false, false});
  }
  for (const AddedToken& token : settings_.added_tokens) {
    if (special_texts_.contains(token.content)) continue;
    plain_added_texts_.insert(token.content);
    plain_added_ids_.insert(token.id);
    // decode() goes by the token's text, which a piece of the model may share.
    const int piece = processor_->PieceToId(token.content);
    if (processor_->IdToPiece(piece) == token.content) plain_added_ids_.insert(piece);
  }
  if (settings_.bos_token) bos_id_ = find_id(*settings_.bos_token);
  if (settings_.eos_token) eos_id_ = find_id(*settings_.eos_token);
  if (settings_.add_bos_token && !bos_id_) {
    throw Error(config_file +
                ": add_bos_token is true but there is no bos_token in the vocabulary");
  }
  if (settings_.add_eos_token && !eos_id_) {
    throw Error(config_file +
                ": add_eos_token is true but there is no eos_token in the vocabulary");
  }
  // Longest first, so that of two added tokens found at the same place the longer wins.
  std::stable_sort(
      split_tokens_.begin(), split_tokens_.end(),
      [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  if (!settings_.legacy) {
    std::vector<int> unk_ids;
    no_prefix_->Encode(settings_.unk_token.value_or(""), &unk_ids).IgnoreError();
    unk_token_length_ = static_cast<int>(unk_ids.size());
  }
}

const std::string& SentencePieceTokenizer::token_text(int id) const {
  check_id(id);
  if (auto added = added_text_.find(id); added != added_text_.end()) return added->second;
  if (id >= piece_count_) {
    throw Error("SentencePiece tokenizer: token id " + std::to_string(id) +
                " is neither a piece of the model nor an added token");
  }
  return processor_->IdToPiece(id);
}

void SentencePieceTokenizer::check_id(int id) const {
  if (id < 0 || id >= vocab_size_) {
    throw Error("SentencePiece tokenizer: token id " + std::to_string(id) +
                " is outside the vocabulary (" + std::to_string(vocab_size_) + " ids)");
  }
}

// PreTrainedTokenizer.tokenize + convert_tokens_to_ids: cut the added tokens out of the text (the
// earliest occurrence of any, the longest on ties), let them eat the whitespace beside them
// when they are lstrip / rstrip, and encode each non-empty piece of text between them.
std::vector<int> SentencePieceTokenizer::tokenize(std::string_view text) const {
  struct Segment {
    std::string_view text;
    const AddedToken* token;  // null for text
  };
  std::vector<Segment> segments;
  std::size_t position = 0;
  while (position <= text.size()) {
    std::size_t match_begin = std::string_view::npos;
    const AddedToken* match = nullptr;
    for (const AddedToken& token : split_tokens_) {
      const std::size_t found = text.find(token.content, position);
      if (found < match_begin) {
        match_begin = found;
        match = &token;
      }
    }
    segments.push_back({text.substr(position, match_begin - position), nullptr});
    if (!match) break;
    segments.push_back({text.substr(match_begin, match->content.size()), match});
    position = match_begin + match->content.size();
  }
  // Python's str.lstrip() / rstrip() on UTF-8 (the text is valid UTF-8).
  auto strip = [](std::string_view segment, bool left) {
    const std::vector<char32_t> chars = decode_utf8(segment, "text");
    auto utf8_size = [](char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; };
    if (left) {
      std::size_t begin = 0;
      for (std::size_t i = 0; i < chars.size() && is_python_space(chars[i]); ++i) {
        begin += utf8_size(chars[i]);
      }
      return segment.substr(begin);
    }
    std::size_t end = segment.size();
    for (std::size_t i = chars.size(); i > 0 && is_python_space(chars[i - 1]); --i) {
      end -= utf8_size(chars[i - 1]);
    }
    return segment.substr(0, end);
  };
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const AddedToken* token = segments[i].token;
    if (!token) continue;
    if (token->rstrip && i + 1 < segments.size()) {
      segments[i + 1].text = strip(segments[i + 1].text, true);
    }
    if (token->lstrip && i > 0) segments[i - 1].text = strip(segments[i - 1].text, false);
  }
  std::vector<int> ids;
  for (const Segment& segment : segments) {
    if (segment.token) {
      ids.push_back(segment.token->id);
    } else if (!segment.text.empty()) {
      encode_text(segment.text, ids);
    }
  }
  return ids;
}

// LlamaTokenizer._tokenize. legacy: the model as it is, dummy prefix and all. Otherwise the model
// without its dummy prefix, and text that starts with a space is encoded after the unk token's
// text, whose pieces are then dropped, so that the space is not taken for a dummy prefix.
void SentencePieceTokenizer::encode_text(std::string_view text, std::vector<int>& ids) const {
  std::vector<int> piece_ids;
  sentencepiece::util::Status status;
  std::size_t dropped = 0;
  if (settings_.legacy || !(text.starts_with(kSpaceSymbol) || text.starts_with(' '))) {
    status = encoder().Encode(text, &piece_ids);
  } else {
    status = encoder().Encode(settings_.unk_token.value_or("") + std::string(text), &piece_ids);
    if (piece_ids.size() >= static_cast<std::size_t>(unk_token_length_))
      dropped = unk_token_length_;
  }
  if (!status.ok()) {
    throw Error(std::string("SentencePiece tokenizer: cannot encode the text (") +
                brief_text(status.message(), 200) + ")");
  }
  ids.insert(ids.end(), piece_ids.begin() + static_cast<std::ptrdiff_t>(dropped), piece_ids.end());
}

Encoding SentencePieceTokenizer::encode(std::string_view text,
                                        std::optional<std::string_view> pair) const {
  // LlamaTokenizer.tokenize: legacy: false writes "▁" in the text as a space and adds the prefix
  // space itself, once, then drops it again before a special token.
  auto sequence_ids = [&](std::string_view sequence) {
    decode_utf8(sequence, "text");  // refuses text that is not UTF-8
    if (settings_.legacy || sequence.empty()) return tokenize(sequence);
    std::string prepared = settings_.add_prefix_space ? std::string(kSpaceSymbol) : "";
    for (std::size_t i = 0; i < sequence.size();) {
      if (sequence.substr(i).starts_with(kSpaceSymbol)) {
        prepared += ' ';
        i += kSpaceSymbol.size();
      } else {
        prepared += sequence[i++];
      }
    }
    std::vector<int> ids = tokenize(prepared);
    if (ids.size() > 1 && token_text(ids[0]) == kSpaceSymbol &&
        special_texts_.contains(token_text(ids[1]))) {
      ids.erase(ids.begin());
    }
    return ids;
  };
  // build_inputs_with_special_tokens: [BOS] a [EOS] ([BOS] b [EOS]), each when enabled.
  Encoding encoding;
  auto append = [&](std::string_view sequence, int type_id) {
    if (settings_.add_bos_token) encoding.ids.push_back(*bos_id_);
    const std::vector<int> ids = sequence_ids(sequence);
    encoding.ids.insert(encoding.ids.end(), ids.begin(), ids.end());
    if (settings_.add_eos_token) encoding.ids.push_back(*eos_id_);
    encoding.type_ids.resize(encoding.ids.size(), type_id);
  };
  append(text, 0);
  if (pair) append(*pair, 1);
  return encoding;
}

void SentencePieceTokenizer::PieceRun::add(std::string_view piece, std::string& out) {
  const int id = tokenizer_->processor_->PieceToId(piece);
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
    if (tokenizer_->processor_->IdToPiece(id) == piece) surface = tokenizer_->unknown_surface_;
  } else if (expect_bos_space_ && tokenizer_->consume_bos_space_) {
    consumed = surface.starts_with(kSpaceSymbol);
    if (consumed) surface.remove_prefix(kSpaceSymbol.size());
    // A model that removes extra whitespace drops every leading space.
    if (tokenizer_->remove_extra_whitespaces_) consumed = false;
  }
  bos_space_seen_ = consumed;
  const std::size_t before = out.size();
  if (kind == PieceKind::kNormal) {
    for (std::size_t i = 0; i < surface.size();) {
      if (surface.substr(i).starts_with(kSpaceSymbol)) {
        out += ' ';
        i += kSpaceSymbol.size();
      } else {
        out += surface[i++];
      }
    }
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
  // The dummy prefix added when encoding is taken off again.
  if (count_ == 0 && tokenizer_.settings_.add_prefix_space && token.starts_with(kSpaceSymbol)) {
    token.erase(0, kSpaceSymbol.size());
  }
  if (tokenizer_.special_texts_.contains(token)) {
    // Special tokens are not decoded by SentencePiece; legacy puts a space before them.
    if (!previous_is_special_ && count_ != 0 && tokenizer_.settings_.legacy) text_ += ' ';
    pieces_.flush(pieces_text_);
    text_ += pieces_text_;
    text_ += token;
    pieces_text_.clear();
    pieces_ = PieceRun(tokenizer_, raw_bytes_);
    previous_is_special_ = true;
  } else {
    if (previous_is_special_ && count_ == 1 && tokenizer_.settings_.add_prefix_space &&
        !token.starts_with(kSpaceSymbol)) {
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

// PreTrainedTokenizer._decode: tokens of non-special added tokens are written as they are, the
// runs of other tokens between them through convert_tokens_to_string.
std::string SentencePieceTokenizer::decode(std::span<const int> ids,
                                           bool skip_special_tokens) const {
  std::vector<std::string> sub_texts;
  std::optional<TokenRun> run;
  for (int id : ids) {
    check_id(id);
    if (skip_special_tokens && is_special(id)) continue;
    const std::string& token = token_text(id);
    if (plain_added_texts_.contains(token)) {
      if (run) {
        std::string text = run->finish();
        if (!text.empty()) sub_texts.push_back(std::move(text));
        run.reset();
      }
      sub_texts.push_back(token);
    } else {
      if (!run) run.emplace(*this, false);
      run->add(token);
    }
  }
  if (run) sub_texts.push_back(run->finish());
  std::string text;
  for (std::size_t i = 0; i < sub_texts.size(); ++i) {
    if (i > 0 && settings_.spaces_between_special_tokens) text += ' ';
    text += sub_texts[i];
  }
  return settings_.clean_up_tokenization_spaces ? clean_up_tokenization(std::move(text)) : text;
}

// What `id` adds to decode(previous_ids + id, true) after decode(previous_ids, true), with byte
// pieces as raw bytes. Only the tokens since the last non-special added token matter, and of
// those only the first few: once a run has produced text, a token's text no longer depends on
// what came before it.
std::string SentencePieceTokenizer::decode_continuation(std::span<const int> previous_ids,
                                                        int id) const {
  check_id(id);
  if (is_special(id)) return "";
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

std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const fs::path& model_dir) {
  const fs::path model_path = model_dir / "tokenizer.model";
  const std::string model_file = model_path.string();
  const std::string serialized = read_model_file(model_path, kMaxTokenizerBytes);
  if (serialized.empty()) throw Error(model_file + ": not a SentencePiece model (empty file)");
  auto processor = load_processor(serialized, model_file);
  const ModelFileSettings file_settings = read_model_file_settings(serialized, model_file);
  // Real models always carry both; a file cut short after its pieces parses without them and
  // would silently run with default settings.
  if (!file_settings.has_trainer_spec || !file_settings.has_normalizer_spec) {
    throw Error(model_file + ": not a SentencePiece model (no " +
                (file_settings.has_trainer_spec ? "normalizer" : "trainer") +
                " settings: is the file cut short?)");
  }
  if (file_settings.treat_whitespace_as_suffix) {
    throw Error(model_file + ": treat_whitespace_as_suffix models are not supported");
  }
  if (file_settings.has_denormalizer_spec) {
    throw Error(model_file + ": models with a denormalizer are not supported");
  }
  LlamaSettings settings = read_llama_settings(model_dir);
  std::unique_ptr<sentencepiece::SentencePieceProcessor> no_prefix;
  if (!settings.legacy) {
    no_prefix = load_processor(
        serialized + std::string(kNoDummyPrefixBytes, sizeof kNoDummyPrefixBytes), model_file);
  }
  return std::make_unique<SentencePieceTokenizer>(std::move(processor), std::move(no_prefix),
                                                  file_settings, std::move(settings), model_file,
                                                  (model_dir / "tokenizer_config.json").string());
}

}  // namespace attn
