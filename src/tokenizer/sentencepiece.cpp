// SentencePiece folders (tokenizer.model, spiece.model, sentencepiece.bpe.model) converted at load
// into the tokenizer.json pipeline, as transformers' LlamaConverter, GemmaConverter,
// AlbertConverter, T5Converter and XLMRobertaConverter (convert_slow_tokenizer.py, 4.40-4.45)
// build the fast classes from the model file's ModelProto.
#include "src/tokenizer/sentencepiece.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/sentencepiece_model.h"
#include "src/tokenizer/special_tokens.h"
#include "src/tokenizer/tokenizer_json.h"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

enum class SpmClass { kLlama, kGemma, kAlbert, kT5, kXlmRoberta };

// The SentencePiece files attn reads, each with the classes that read it.
struct SentencePieceClass {
  const char* file;
  const char* class_name;
  SpmClass kind;
  bool is_default;  // the class of the file when the folder does not declare one
};
constexpr SentencePieceClass kSentencePieceClasses[] = {
    {"tokenizer.model", "LlamaTokenizer", SpmClass::kLlama, true},
    {"tokenizer.model", "GemmaTokenizer", SpmClass::kGemma, false},
    {"spiece.model", "AlbertTokenizer", SpmClass::kAlbert, false},
    {"spiece.model", "T5Tokenizer", SpmClass::kT5, false},
    {"sentencepiece.bpe.model", "XLMRobertaTokenizer", SpmClass::kXlmRoberta, false}};

// The file of the first of kSentencePieceClasses the folder has, or null.
const char* find_sentencepiece_file(const fs::path& model_dir) {
  for (const SentencePieceClass& entry : kSentencePieceClasses) {
    if (entry_exists(model_dir / entry.file)) return entry.file;
  }
  return nullptr;
}

// The entry of kSentencePieceClasses for `file` and the class the folder declares.
const SentencePieceClass& find_sentencepiece_class(const TokenizerFiles& files, const char* file) {
  std::vector<std::string_view> classes;
  bool has_default = false;
  for (const SentencePieceClass& entry : kSentencePieceClasses) {
    if (std::string_view(entry.file) != file) continue;
    // The default class, if any, goes first.
    classes.insert(entry.is_default ? classes.begin() : classes.end(), entry.class_name);
    has_default = has_default || entry.is_default;
  }
  const std::string class_name = sentencepiece_class(files, files.dir / file, classes, has_default);
  for (const SentencePieceClass& entry : kSentencePieceClasses) {
    if (std::string_view(entry.file) == file && entry.class_name == class_name) return entry;
  }
  throw Error(files.dir.string() + ": no SentencePiece class " + class_name);  // not reached
}

std::string spm_base64(std::string_view bytes) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t group = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<unsigned char>(bytes[i + 2]);
    out += kDigits[(group >> 18) & 63];
    out += kDigits[(group >> 12) & 63];
    out += i + 1 < bytes.size() ? kDigits[(group >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kDigits[group & 63] : '=';
  }
  return out;
}

json spm_replace(const json& pattern, std::string_view content) {
  return {{"type", "Replace"}, {"pattern", pattern}, {"content", content}};
}
json spm_string(std::string_view text) { return {{"String", text}}; }
json spm_regex(std::string_view text) { return {{"Regex", text}}; }
json spm_sequence(json items) { return {{"type", "Sequence"}, {"normalizers", std::move(items)}}; }
// More spaces than any text has: a Strip decoder with this count takes them all.
constexpr int kAllSpaces = 1 << 30;

json spm_strip_decoder(int start, int stop) {
  return {{"type", "Strip"}, {"content", " "}, {"start", start}, {"stop", stop}};
}

// Replace("▁", " "), ByteFallback, Fuse, then `strip_first_spaces` spaces taken off the start:
// the decoder of the converters of byte-fallback models.
json spm_byte_fallback_decoder(int strip_first_spaces) {
  json decoders = {
      {{"type", "Replace"}, {"pattern", {{"String", kSentencePieceSpace}}}, {"content", " "}},
      {{"type", "ByteFallback"}},
      {{"type", "Fuse"}}};
  if (strip_first_spaces > 0) decoders.push_back(spm_strip_decoder(strip_first_spaces, 0));
  return {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
}

// _get_prepend_scheme: "always" with add_prefix_space, "first" when the class is not legacy,
// else "never".
std::string spm_prepend_scheme(bool add_prefix_space, bool legacy) {
  if (!add_prefix_space) return "never";
  return legacy ? "always" : "first";
}

// SentencePieceExtractor.extract(vocab_scores) of transformers 4.40-4.45: for every piece in
// vocab_scores' order, each split into two pieces of the model (in the order of their ids),
// with the piece's score; then all of them by score, highest first (a stable sort).
json spm_bpe_merges(const std::vector<std::pair<std::string, double>>& vocab_scores,
                    const std::unordered_map<std::string, int>& piece_ids) {
  struct Merge {
    std::string left, right;
    double score;
    int left_id, right_id;
  };
  std::vector<Merge> merges;
  std::map<std::string, double> scores;  // dict(vocab_scores): a later entry wins
  std::vector<std::string> order;        // its keys in first-insertion order
  for (const auto& [piece, score] : vocab_scores) {
    if (!scores.contains(piece)) order.push_back(piece);
    scores[piece] = score;
  }
  for (const std::string& merged : order) {
    const std::vector<char32_t> characters = decode_utf8(merged, "piece");
    std::vector<Merge> local;
    std::size_t offset = 0;
    for (std::size_t index = 1; index < characters.size(); ++index) {
      offset += utf8_length(characters[index - 1]);
      const std::string left = merged.substr(0, offset);
      const std::string right = merged.substr(offset);
      const auto left_id = piece_ids.find(left);
      const auto right_id = piece_ids.find(right);
      if (left_id == piece_ids.end() || right_id == piece_ids.end()) continue;
      local.push_back({left, right, scores[merged], left_id->second, right_id->second});
    }
    std::stable_sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return std::tie(a.left_id, a.right_id) < std::tie(b.left_id, b.right_id);
    });
    for (Merge& merge : local) merges.push_back(std::move(merge));
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  json out = json::array();
  for (const Merge& merge : merges) out.push_back({merge.left, merge.right});
  return out;
}

}  // namespace

json sentencepiece_model_json(const SentencePieceProto& proto,
                              const std::vector<std::pair<std::string, double>>& vocab_scores,
                              int unk_id, bool byte_fallback) {
  if (proto.model_type == 1) {
    json pieces = json::array();
    for (const auto& [piece, score] : vocab_scores) pieces.push_back({piece, score});
    return {{"type", "Unigram"},
            {"unk_id", unk_id},
            {"vocab", std::move(pieces)},
            {"byte_fallback", byte_fallback}};
  }
  std::unordered_map<std::string, int> piece_ids;  // the extractor's: the model's own pieces
  for (std::size_t i = 0; i < proto.pieces.size(); ++i) {
    piece_ids[proto.pieces[i].piece] = static_cast<int>(i);
  }
  json vocab = json::object();
  for (std::size_t i = 0; i < vocab_scores.size(); ++i) vocab[vocab_scores[i].first] = i;
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", proto.unk_piece},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", true},
          {"byte_fallback", byte_fallback},
          {"vocab", std::move(vocab)},
          {"merges", spm_bpe_merges(vocab_scores, piece_ids)}};
}

json sentencepiece_normalizer(const SentencePieceProto& proto) {
  json normalizers = json::array();
  if (!proto.precompiled_charsmap.empty()) {
    normalizers.push_back({{"type", "Precompiled"},
                           {"precompiled_charsmap", spm_base64(proto.precompiled_charsmap)}});
  }
  normalizers.push_back({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}});
  normalizers.push_back(spm_replace(spm_regex(" {2,}"), kSentencePieceSpace));
  return spm_sequence(std::move(normalizers));
}

json sentencepiece_metaspace(std::string_view prepend_scheme, bool split) {
  return {{"type", "Metaspace"},
          {"replacement", kSentencePieceSpace},
          {"prepend_scheme", prepend_scheme},
          {"split", split}};
}

json sentencepiece_stripping_decoder(std::string_view prepend_scheme) {
  return {{"type", "Sequence"},
          {"decoders",
           {sentencepiece_metaspace(prepend_scheme, true),
            {{"type", "Fuse"}},
            spm_strip_decoder(kAllSpaces, kAllSpaces)}}};
}

namespace {

// The converter of one folder: its class, model and tokenizer_config.json.
class SpmConversion {
 public:
  SpmConversion(const SentencePieceClass& reader, SentencePieceProto proto,
                const TokenizerFiles& files)
      : reader_(reader),
        proto_(std::move(proto)),
        files_(files),
        config_(files.config),
        config_file_(files.config_file) {}

  json convert(const NamedTokenTexts& named);

 private:
  bool flag(const char* key, bool fallback) const {
    return config_flag(config_, key, fallback, config_file_);
  }
  const std::optional<std::string>& named(const NamedTokenTexts& texts, NamedToken token) const {
    return texts[static_cast<std::size_t>(token)];
  }
  std::vector<std::pair<std::string, double>> vocab() const;
  int extra_ids() const;
  json model(const std::vector<std::pair<std::string, double>>& vocab_scores) const;
  json added_tokens(const std::vector<std::pair<std::string, double>>& vocab_scores,
                    const NamedTokenTexts& named) const;
  json normalizer() const;
  json pre_tokenizer() const;
  json decoder() const;
  json post_processor(const std::vector<std::pair<std::string, double>>& vocab_scores) const;
  int token_id(const std::vector<std::pair<std::string, double>>& vocab_scores,
               const std::string& token) const;
  bool normalizes() const {
    return !proto_.precompiled_charsmap.empty() || proto_.add_dummy_prefix ||
           proto_.remove_extra_whitespaces;
  }

  const SentencePieceClass& reader_;
  SentencePieceProto proto_;
  const TokenizerFiles& files_;
  const json& config_;
  std::string config_file_;
};

// T5Tokenizer's extra_ids (100 by default).
int SpmConversion::extra_ids() const {
  if (!config_.contains("extra_ids") || config_["extra_ids"].is_null()) return 100;
  const json& extra_ids = config_["extra_ids"];
  if (!extra_ids.is_number_integer() || extra_ids.get<std::int64_t>() < 0 ||
      extra_ids.get<std::int64_t>() > 100'000) {
    throw Error(config_file_ + ": 'extra_ids' must be an integer from 0 to 100000, got " +
                brief_json(extra_ids));
  }
  return extra_ids.get<int>();
}

// The converter's vocab(proto): the pieces with their scores, rearranged by the class.
std::vector<std::pair<std::string, double>> SpmConversion::vocab() const {
  std::vector<std::pair<std::string, double>> vocab;
  const auto& pieces = proto_.pieces;
  switch (reader_.kind) {
    case SpmClass::kXlmRoberta:
      vocab = {{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}};
      for (std::size_t i = 3; i < pieces.size(); ++i) {
        vocab.emplace_back(pieces[i].piece, pieces[i].score);
      }
      vocab.emplace_back("<mask>", 0.0);
      return vocab;
    case SpmClass::kAlbert:
      // check_number_comma: a piece that ends in a digit and "," scores 100 less, so that "9,"
      // is split as AlbertTokenizer._tokenize splits it.
      for (const SentencePieceEntry& entry : pieces) {
        const std::vector<char32_t> characters = decode_utf8(entry.piece, "piece");
        const std::size_t n = characters.size();
        const bool number_comma =
            n >= 2 && characters[n - 1] == U',' && is_python_digit(characters[n - 2]);
        vocab.emplace_back(entry.piece, number_comma ? entry.score - 100.0 : entry.score);
      }
      return vocab;
    case SpmClass::kT5:
      for (const SentencePieceEntry& entry : pieces) vocab.emplace_back(entry.piece, entry.score);
      for (int i = extra_ids() - 1; i >= 0; --i) {
        vocab.emplace_back("<extra_id_" + std::to_string(i) + ">", 0.0);
      }
      return vocab;
    case SpmClass::kGemma: {
      // GemmaConverter puts the class's pad, eos and bos texts in place of the first three
      // pieces, which real Gemma models hold already; attn keeps the model's pieces, as the slow
      // class reads them (tiny-gemma's T5 model has <pad> </s> <unk> there, and its goldens give
      // <bos> and <eos> the ids after the pieces).
      for (const SentencePieceEntry& entry : pieces) vocab.emplace_back(entry.piece, entry.score);
      // Older Gemma models have no tab piece: <0x09> becomes "\t".
      const auto has_tab = std::any_of(vocab.begin(), vocab.end(),
                                       [](const auto& entry) { return entry.first == "\t"; });
      if (!has_tab) {
        const auto byte = std::find_if(vocab.begin(), vocab.end(),
                                       [](const auto& entry) { return entry.first == "<0x09>"; });
        if (byte != vocab.end()) *byte = {"\t", 0.0};
      }
      return vocab;
    }
    case SpmClass::kLlama:
      // LlamaConverter's first three are convert_ids_to_tokens(0..2): the model's pieces.
      for (const SentencePieceEntry& entry : pieces) vocab.emplace_back(entry.piece, entry.score);
      return vocab;
  }
  return vocab;
}

json SpmConversion::model(const std::vector<std::pair<std::string, double>>& vocab_scores) const {
  const bool byte_fallback = reader_.kind == SpmClass::kLlama || reader_.kind == SpmClass::kGemma;
  // unk_id: XLMRobertaConverter 3, LlamaConverter 0, the others the trainer's.
  int unk_id = proto_.unk_id;
  if (reader_.kind == SpmClass::kXlmRoberta) unk_id = 3;
  if (reader_.kind == SpmClass::kLlama) unk_id = 0;
  return sentencepiece_model_json(proto_, vocab_scores, unk_id, byte_fallback);
}

// The id convert_tokens_to_ids gives `token`: tokenizer_config.json's added token of that text,
// else the converted vocabulary's, else the unknown id.
int SpmConversion::token_id(const std::vector<std::pair<std::string, double>>& vocab_scores,
                            const std::string& token) const {
  for (const AddedToken& added : read_added_tokens_decoder(config_, config_file_)) {
    if (added.content == token) return added.id;
  }
  for (std::size_t i = 0; i < vocab_scores.size(); ++i) {
    if (vocab_scores[i].first == token) return static_cast<int>(i);
  }
  return reader_.kind == SpmClass::kXlmRoberta ? 3 : proto_.unk_id;
}

// SpmConverter.tokenizer's added tokens: the control pieces (special) and the user-defined ones
// (special only for Gemma's <start_of_turn> and <end_of_turn>, and here the named tokens), not
// normalized. Then what from_pretrained and the fast classes' __init__ add that
// tokenizer_config.json may not list: added_tokens.json's, T5's <extra_id_N> sentinels, and the
// mask token of ALBERT and XLM-R, which eats the space before it.
json SpmConversion::added_tokens(const std::vector<std::pair<std::string, double>>& vocab_scores,
                                 const NamedTokenTexts& named_texts) const {
  std::unordered_map<std::string, int> ids;
  for (std::size_t i = 0; i < vocab_scores.size(); ++i) {
    ids.emplace(vocab_scores[i].first, static_cast<int>(i));
  }
  json added = json::array();
  std::set<std::string> contents;
  const auto add = [&](const std::string& content, bool special, bool lstrip,
                       bool normalized = false) {
    if (!contents.insert(content).second) return;
    const auto id = ids.find(content);
    added.push_back({{"id", id != ids.end() ? id->second : static_cast<int>(ids.size())},
                     {"content", content},
                     {"single_word", false},
                     {"lstrip", lstrip},
                     {"rstrip", false},
                     {"normalized", normalized},
                     {"special", special}});
    if (id == ids.end()) ids.emplace(content, static_cast<int>(ids.size()));
  };
  for (const SentencePieceEntry& entry : proto_.pieces) {
    if (entry.type != SentencePieceType::kControl &&
        entry.type != SentencePieceType::kUserDefined) {
      continue;
    }
    // A user-defined piece that is one of the class's named tokens (ALBERT's [MASK]) is special
    // too, as the slow class skips it on decode; the converter leaves it plain.
    const bool named_token =
        std::any_of(named_texts.begin(), named_texts.end(),
                    [&](const std::optional<std::string>& text) { return text == entry.piece; });
    const bool special = entry.type == SentencePieceType::kControl || named_token ||
                         (reader_.kind == SpmClass::kGemma &&
                          (entry.piece == "<start_of_turn>" || entry.piece == "<end_of_turn>"));
    add(entry.piece, special, false);
  }
  std::set<std::string> declared;
  for (const AddedToken& token : read_added_tokens_decoder(config_, config_file_)) {
    declared.insert(token.content);
  }
  // T5TokenizerFast.__init__: additional_special_tokens, else the extra_ids sentinels; the two
  // must agree.
  std::vector<std::string> additional;
  if (reader_.kind == SpmClass::kT5) {
    if (config_.contains("additional_special_tokens") &&
        !config_["additional_special_tokens"].is_null()) {
      const json& list = config_["additional_special_tokens"];
      const std::string where = config_file_ + ": additional_special_tokens";
      if (!list.is_array()) throw Error(where + ": expected a list");
      for (const json& token : list) {
        if (const auto content = named_token_content(token, where)) additional.push_back(*content);
      }
    }
    const auto count = static_cast<int>(std::count_if(
        additional.begin(), additional.end(),
        [](const std::string& token) { return token.find("<extra_id_") != std::string::npos; }));
    const int extra = extra_ids();
    if (count == 0) {
      for (int i = 0; i < extra; ++i) additional.push_back("<extra_id_" + std::to_string(i) + ">");
    } else if (extra > 0 && count != extra) {
      throw Error(config_file_ + ": extra_ids is " + std::to_string(extra) +
                  " but additional_special_tokens has " + std::to_string(count) +
                  " <extra_id_N> tokens; T5Tokenizer needs the two to agree");
    }
  }
  // A folder saved before tokenizer_config.json had added_tokens_decoder lists its added tokens
  // in added_tokens.json, which from_pretrained reads into added_tokens_decoder (by id), neither
  // lstrip nor rstrip, normalized unless named, special when named or a sentinel.
  if (!config_.contains("added_tokens_decoder") && entry_exists(files_.dir / "added_tokens.json")) {
    std::vector<AddedToken> legacy =
        read_special_token_config(files_, class_named_token_defaults(reader_.class_name),
                                  reader_.class_name)
            .added_tokens;
    std::stable_sort(legacy.begin(), legacy.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
    for (const AddedToken& token : legacy) {
      const bool special = token.special || std::find(additional.begin(), additional.end(),
                                                      token.content) != additional.end();
      add(token.content, special, false, !token.special);
      declared.insert(token.content);
    }
  }
  for (const std::string& token : additional) {
    if (!declared.contains(token)) add(token, true, false);
  }
  if (reader_.kind == SpmClass::kAlbert || reader_.kind == SpmClass::kXlmRoberta) {
    const std::optional<std::string>& mask = named(named_texts, NamedToken::kMask);
    if (mask && !declared.contains(*mask)) add(*mask, true, true);
  }
  return added;
}

json SpmConversion::normalizer() const {
  switch (reader_.kind) {
    case SpmClass::kLlama: {
      // legacy: the prefix space and every space as "▁"; otherwise none (Metaspace does it).
      if (!flag("legacy", true)) return nullptr;
      json sequence = json::array();
      if (flag("add_prefix_space", true)) {
        sequence.push_back({{"type", "Prepend"}, {"prepend", kSentencePieceSpace}});
      }
      sequence.push_back(spm_replace(spm_string(" "), kSentencePieceSpace));
      return spm_sequence(std::move(sequence));
    }
    case SpmClass::kGemma:
      // GemmaConverter: spaces as "▁", nothing else, for Gemma's own models, which neither
      // normalize nor add a dummy prefix. A model that does (tiny-gemma's is T5's) is normalized
      // as the slow class's SentencePiece normalizes it, SpmConverter's way.
      if (normalizes()) return sentencepiece_normalizer(proto_);
      return spm_replace(spm_string(" "), kSentencePieceSpace);
    case SpmClass::kAlbert: {
      json sequence = {spm_replace(spm_string("``"), "\""), spm_replace(spm_string("''"), "\"")};
      if (!flag("keep_accents", false)) {
        sequence.push_back({{"type", "NFKD"}});
        sequence.push_back({{"type", "StripAccents"}});
      }
      if (flag("do_lower_case", true)) sequence.push_back({{"type", "Lowercase"}});
      if (!proto_.precompiled_charsmap.empty()) {
        sequence.push_back({{"type", "Precompiled"},
                            {"precompiled_charsmap", spm_base64(proto_.precompiled_charsmap)}});
      }
      sequence.push_back(spm_replace(spm_regex(" {2,}"), " "));
      // AlbertTokenizer.preprocess_text strips the text (remove_space), which AlbertConverter
      // leaves out; the goldens have no "▁" for a space at the end.
      if (flag("remove_space", true)) {
        sequence.push_back({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}});
      }
      return spm_sequence(std::move(sequence));
    }
    case SpmClass::kT5:
    case SpmClass::kXlmRoberta:
      return sentencepiece_normalizer(proto_);
  }
  return nullptr;
}

// The prepend scheme of the Metaspace pre-tokenizer and decoder: the class's add_prefix_space
// (LlamaTokenizer and T5Tokenizer have one, default true) and legacy.
json SpmConversion::pre_tokenizer() const {
  switch (reader_.kind) {
    case SpmClass::kLlama:
      if (flag("legacy", true)) return nullptr;
      return sentencepiece_metaspace(spm_prepend_scheme(flag("add_prefix_space", true), false),
                                     false);
    case SpmClass::kGemma:
      if (normalizes()) return sentencepiece_metaspace("always", true);
      return nullptr;
    case SpmClass::kT5:
      return sentencepiece_metaspace(
          spm_prepend_scheme(flag("add_prefix_space", true), flag("legacy", true)), true);
    case SpmClass::kAlbert:
    case SpmClass::kXlmRoberta:
      return sentencepiece_metaspace("always", true);
  }
  return nullptr;
}

// The converters' decoders, with what the slow classes' decode does differently and the goldens
// record (transformers' own fast classes differ there):
//  - Llama and Gemma: SentencePiece's decode takes the first piece's "▁" off when the model adds
//    a dummy prefix, and every leading one when it removes extra whitespace; LlamaTokenizer has
//    taken the first token's "▁" off before (add_prefix_space). LlamaConverter strips one space,
//    GemmaConverter none: the same for texts that do not start with spaces.
//  - T5, ALBERT and XLM-R: convert_tokens_to_string ends with str.strip(), which the Metaspace
//    decoder does not do.
json SpmConversion::decoder() const {
  const bool legacy = flag("legacy", true);
  const auto sentencepiece_strip = [&](bool dummy_prefix) {
    if (proto_.remove_extra_whitespaces) return kAllSpaces;
    return dummy_prefix && proto_.add_dummy_prefix ? 1 : 0;
  };
  switch (reader_.kind) {
    case SpmClass::kLlama: {
      const int strip = sentencepiece_strip(legacy);
      const int prefix = flag("add_prefix_space", true) ? 1 : 0;
      return spm_byte_fallback_decoder(strip == kAllSpaces ? kAllSpaces : strip + prefix);
    }
    case SpmClass::kGemma:
      return spm_byte_fallback_decoder(sentencepiece_strip(true));
    case SpmClass::kT5:
    case SpmClass::kAlbert:
    case SpmClass::kXlmRoberta: {
      const std::string scheme = reader_.kind == SpmClass::kT5
                                     ? spm_prepend_scheme(flag("add_prefix_space", true), legacy)
                                     : std::string("always");
      return sentencepiece_stripping_decoder(scheme);
    }
  }
  return nullptr;
}

json SpmConversion::post_processor(
    const std::vector<std::pair<std::string, double>>& vocab_scores) const {
  const auto special = [&](const std::string& token, int type_id) {
    return json{{"SpecialToken", {{"id", token}, {"type_id", type_id}}}};
  };
  const auto sequence = [](const char* id, int type_id) {
    return json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  json single;
  json pair;
  std::vector<std::string> tokens;
  switch (reader_.kind) {
    case SpmClass::kLlama:
    case SpmClass::kGemma:
      return nullptr;  // the class's __init__ sets it (add_bos_token, add_eos_token)
    case SpmClass::kAlbert:
      single = {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)};
      pair = single;
      pair.push_back(sequence("B", 1));
      pair.push_back(special("[SEP]", 1));
      tokens = {"[CLS]", "[SEP]"};
      break;
    case SpmClass::kT5:
      single = {sequence("A", 0), special("</s>", 0)};
      pair = {sequence("A", 0), special("</s>", 0), sequence("B", 0), special("</s>", 0)};
      tokens = {"</s>"};
      break;
    case SpmClass::kXlmRoberta:
      single = {special("<s>", 0), sequence("A", 0), special("</s>", 0)};
      pair = {special("<s>", 0),  sequence("A", 0), special("</s>", 0),
              special("</s>", 0), sequence("B", 0), special("</s>", 0)};
      tokens = {"<s>", "</s>"};
      break;
  }
  json special_tokens = json::object();
  for (const std::string& token : tokens) {
    special_tokens[token] = {
        {"id", token}, {"ids", {token_id(vocab_scores, token)}}, {"tokens", {token}}};
  }
  return {{"type", "TemplateProcessing"},
          {"single", std::move(single)},
          {"pair", std::move(pair)},
          {"special_tokens", std::move(special_tokens)}};
}

json SpmConversion::convert(const NamedTokenTexts& named) {
  const std::vector<std::pair<std::string, double>> vocab_scores = vocab();
  json converted = {{"added_tokens", added_tokens(vocab_scores, named)},
                    {"normalizer", normalizer()},
                    {"pre_tokenizer", pre_tokenizer()},
                    {"model", model(vocab_scores)},
                    {"post_processor", post_processor(vocab_scores)},
                    {"decoder", decoder()}};
  return converted;
}

}  // namespace

std::optional<fs::path> sentencepiece_model_file(const fs::path& model_dir) {
  const char* file = find_sentencepiece_file(model_dir);
  if (file == nullptr) return std::nullopt;
  return model_dir / file;
}

std::string sentencepiece_class(const TokenizerFiles& files, const fs::path& model_file,
                                std::span<const std::string_view> classes, bool first_is_default) {
  const std::optional<std::string>& declared = files.class_name;
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

const json& sentencepiece_tokenizer_config(const TokenizerFiles& files) {
  const json& config = files.config;
  // Options for the library (sampling, say) would make the encoding differ from attn's.
  if (config.contains("sp_model_kwargs") && !config["sp_model_kwargs"].is_null() &&
      config["sp_model_kwargs"] != json::object()) {
    throw Error(files.config_file + ": sp_model_kwargs " + brief_json(config["sp_model_kwargs"]) +
                " is not supported");
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
  SentencePieceProto proto = read_sentencepiece_proto(model_path);
  // The file's name tells the class, or the folder declares one of those that read the file.
  const TokenizerFiles files = read_tokenizer_files(model_dir);
  const SentencePieceClass& reader = find_sentencepiece_class(files, file);
  sentencepiece_tokenizer_config(files);  // refuses sp_model_kwargs
  SpmConversion conversion(reader, std::move(proto), files);
  return load_converted_tokenizer(
      files, model_path, reader.class_name,
      [&](const NamedTokenTexts& named) { return conversion.convert(named); });
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
