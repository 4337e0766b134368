#include "src/tokenizer/pipeline/post_processors.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/io/json_util.h"
#include "src/tokenizer/pipeline/alignment.h"

namespace attn::pipeline {
namespace {

// The library's post-processors work on a list of encodings (one per input sequence on entry)
// that each step may lengthen or split before everything is concatenated; a Sequence hands
// that list from one step to the next, so the list is kept here too.
using Encodings = std::vector<Encoding>;

// A post-processor's token ids must fit an int (read_token_id).
constexpr std::int64_t kLargestIntId = std::numeric_limits<int>::max();

Encoding concatenate(const Encodings& encodings) {
  Encoding merged;
  for (const Encoding& encoding : encodings) {
    merged.ids.insert(merged.ids.end(), encoding.ids.begin(), encoding.ids.end());
    merged.type_ids.insert(merged.type_ids.end(), encoding.type_ids.begin(),
                           encoding.type_ids.end());
    merged.offsets.insert(merged.offsets.end(), encoding.offsets.begin(), encoding.offsets.end());
  }
  return merged;
}

// Whether an encoding carries offsets. (An empty one carries them either way: the spans a step
// adds to it are not read when offsets were not asked for.)
bool has_offsets(const Encoding& encoding) {
  return encoding.offsets.size() == encoding.ids.size();
}

class Step : public PostProcessor {
 public:
  // PostProcessor::process: sequence i gets type id i before the step runs, and the step's
  // encodings are concatenated.
  Encoding process(Encoding first, std::optional<Encoding> second,
                   bool add_special_tokens) const final {
    Encodings encodings;
    first.type_ids.assign(first.ids.size(), 0);
    encodings.push_back(std::move(first));
    if (second) {
      second->type_ids.assign(second->ids.size(), 1);
      encodings.push_back(std::move(*second));
    }
    process_encodings(encodings, add_special_tokens);
    return concatenate(encodings);
  }

  // The library's process_encodings.
  virtual void process_encodings(Encodings& encodings, bool add_special_tokens) const = 0;

  std::optional<OffsetTrim> offset_trim() const override { return std::nullopt; }
};

// A token id of the file: a JSON integer in [0, INT_MAX].
int read_token_id(const ConfigNode& node) {
  const nlohmann::json& value = node.value();
  const bool in_range =
      value.is_number_unsigned()
          ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(kLargestIntId)
          : value.is_number_integer() && value.get<std::int64_t>() >= 0 &&
                value.get<std::int64_t>() <= kLargestIntId;
  if (!in_range) node.fail("expected a token id, found " + brief_json(value));
  return static_cast<int>(value.get<std::int64_t>());
}

// Bert's and Roberta's "sep" and "cls": ["token", id]; only the id matters to attn.
int read_token_pair_id(const ConfigNode& node, std::string_view key) {
  const ConfigNode pair = node.at(key);
  if (pair.size() != 2 || !pair.value()[0].is_string()) {
    pair.fail("expected [\"token\", id], found " + brief_json(pair.value()));
  }
  return read_token_id(pair.at(std::size_t{1}));
}

template <typename T>
std::vector<T> with_ends(std::optional<T> before, const std::vector<T>& middle, T after) {
  std::vector<T> result;
  result.reserve(middle.size() + 2);
  if (before) result.push_back(*before);
  result.insert(result.end(), middle.begin(), middle.end());
  result.push_back(after);
  return result;
}

// [CLS] A [SEP] (B [SEP]): type id 0 up to the first [SEP], the pair keeps its own (1).
class BertProcessing final : public Step {
 public:
  explicit BertProcessing(const ConfigNode& node)
      : sep_id_(read_token_pair_id(node, "sep")), cls_id_(read_token_pair_id(node, "cls")) {}

  void process_encodings(Encodings& encodings, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    for (std::size_t i = 0; i < encodings.size(); ++i) {
      Encoding& encoding = encodings[i];
      const bool offsets = has_offsets(encoding);
      if (i == 0) {
        encoding.ids = with_ends<int>(cls_id_, encoding.ids, sep_id_);
        encoding.type_ids = with_ends<int>(0, encoding.type_ids, 0);
        if (offsets) encoding.offsets = with_ends<CharSpan>(CharSpan{}, encoding.offsets, {});
      } else {
        encoding.ids = with_ends<int>(std::nullopt, encoding.ids, sep_id_);
        encoding.type_ids = with_ends<int>(std::nullopt, encoding.type_ids, 1);
        if (offsets) encoding.offsets = with_ends<CharSpan>(std::nullopt, encoding.offsets, {});
      }
    }
  }

 private:
  int sep_id_;
  int cls_id_;
};

// The trim_offsets and add_prefix_space of ByteLevel and RobertaProcessing (both default true
// in the library's deserializer).
std::optional<PostProcessor::OffsetTrim> read_offset_trim(const ConfigNode& node) {
  if (!node.boolean_or("trim_offsets", true)) return std::nullopt;
  return PostProcessor::OffsetTrim{node.boolean_or("add_prefix_space", true)};
}

// <s> A </s> (</s> B </s>), every type id 0 (also without special tokens).
class RobertaProcessing final : public Step {
 public:
  explicit RobertaProcessing(const ConfigNode& node)
      : sep_id_(read_token_pair_id(node, "sep")),
        cls_id_(read_token_pair_id(node, "cls")),
        trim_(read_offset_trim(node)) {}

  void process_encodings(Encodings& encodings, bool add_special_tokens) const override {
    for (std::size_t i = 0; i < encodings.size(); ++i) {
      Encoding& encoding = encodings[i];
      if (add_special_tokens) {
        const bool offsets = has_offsets(encoding);
        encoding.ids = with_ends<int>(i == 0 ? cls_id_ : sep_id_, encoding.ids, sep_id_);
        if (offsets) encoding.offsets = with_ends<CharSpan>(CharSpan{}, encoding.offsets, {});
      }
      encoding.type_ids.assign(encoding.ids.size(), 0);
    }
  }

  std::optional<OffsetTrim> offset_trim() const override { return trim_; }

 private:
  int sep_id_;
  int cls_id_;
  std::optional<OffsetTrim> trim_;
};

// As a post-processor ByteLevel only trims offsets (offset_trim).
class ByteLevelProcessing final : public Step {
 public:
  explicit ByteLevelProcessing(const ConfigNode& node) : trim_(read_offset_trim(node)) {}
  void process_encodings(Encodings&, bool) const override {}
  std::optional<OffsetTrim> offset_trim() const override { return trim_; }

 private:
  std::optional<OffsetTrim> trim_;
};

class TemplateProcessing final : public Step {
 public:
  explicit TemplateProcessing(const ConfigNode& node) : where_(node.where()) {
    const ConfigNode special_tokens = node.at("special_tokens");
    if (!special_tokens.value().is_object()) {
      special_tokens.fail("expected a JSON object, found " + brief_json(special_tokens.value()));
    }
    for (const auto& [name, unused] : special_tokens.value().items()) {
      const ConfigNode ids = special_tokens.at(name).at("ids");
      std::vector<int>& id_list = special_token_ids_[name];
      for (std::size_t i = 0; i < ids.size(); ++i) id_list.push_back(read_token_id(ids.at(i)));
    }
    single_ = read_template(node.at("single"), /*pair=*/false);
    pair_ = read_template(node.at("pair"), /*pair=*/true);
  }

  void process_encodings(Encodings& encodings, bool add_special_tokens) const override {
    if (encodings.size() != 1 && encodings.size() != 2) {
      // The library stops here (todo!()): only a Sequence that runs a template after another
      // step that split the encodings can get here.
      throw Error(where_ + ": a template applies to one or two sequences, not " +
                  std::to_string(encodings.size()));
    }
    const std::vector<Piece>& pieces = encodings.size() == 2 ? pair_ : single_;
    Encodings applied;
    for (const Piece& piece : pieces) {
      if (piece.special_token_ids != nullptr) {
        // Without special tokens the template's tokens are left out, while its sequences
        // still take the template's type ids.
        if (!add_special_tokens) continue;
        const std::size_t count = piece.special_token_ids->size();
        applied.push_back({*piece.special_token_ids, std::vector<int>(count, piece.type_id),
                           std::vector<CharSpan>(count)});
      } else {
        Encoding& sequence = encodings[piece.sequence_index];
        sequence.type_ids.assign(sequence.ids.size(), piece.type_id);
        applied.push_back(sequence);
      }
    }
    encodings = std::move(applied);
  }

 private:
  struct Piece {
    // The ids of a SpecialToken piece, or nullptr for a Sequence piece.
    const std::vector<int>* special_token_ids = nullptr;
    // 0 for sequence A, 1 for B.
    std::size_t sequence_index = 0;
    int type_id = 0;
  };

  std::vector<Piece> read_template(const ConfigNode& pieces, bool pair) const {
    std::vector<Piece> result;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const ConfigNode piece = pieces.at(i);
      Piece read;
      if (piece.has("Sequence")) {
        const ConfigNode sequence = piece.at("Sequence");
        const std::string id = sequence.string("id");
        if (id != "A" && id != "B") sequence.at("id").fail("expected \"A\" or \"B\"");
        // The library would fail on every single-sequence encode (index out of bounds).
        if (id == "B" && !pair) sequence.at("id").fail("the single template cannot use sequence B");
        read.sequence_index = id == "A" ? 0 : 1;
        read.type_id = static_cast<int>(
            sequence.integer("type_id", 0, std::numeric_limits<std::uint32_t>::max()));
      } else if (piece.has("SpecialToken")) {
        const ConfigNode special_token = piece.at("SpecialToken");
        const std::string id = special_token.string("id");
        const auto found = special_token_ids_.find(id);
        if (found == special_token_ids_.end()) {
          special_token.at("id").fail("special token \"" + id + "\" is not in special_tokens");
        }
        read.special_token_ids = &found->second;
        read.type_id = static_cast<int>(
            special_token.integer("type_id", 0, std::numeric_limits<std::uint32_t>::max()));
      } else {
        piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, found " +
                   brief_json(piece.value()));
      }
      result.push_back(read);
    }
    return result;
  }

  std::string where_;
  // std::map: the pieces point into it, so its nodes must not move.
  std::map<std::string, std::vector<int>> special_token_ids_;
  std::vector<Piece> single_;
  std::vector<Piece> pair_;
};

std::unique_ptr<Step> make_step(const ConfigNode& node, int depth);

class SequenceProcessing final : public Step {
 public:
  SequenceProcessing(const ConfigNode& node, int depth) {
    const ConfigNode processors = node.at("processors");
    for (std::size_t i = 0; i < processors.size(); ++i) {
      steps_.push_back(make_step(processors.at(i), depth + 1));
    }
  }

  void process_encodings(Encodings& encodings, bool add_special_tokens) const override {
    for (const auto& step : steps_) step->process_encodings(encodings, add_special_tokens);
  }

  std::optional<OffsetTrim> offset_trim() const override {
    for (const auto& step : steps_) {
      if (const auto trim = step->offset_trim()) return trim;
    }
    return std::nullopt;
  }

 private:
  std::vector<std::unique_ptr<Step>> steps_;
};

std::unique_ptr<Step> make_step(const ConfigNode& node, int depth) {
  if (depth > kMaxSequenceNesting) {
    node.fail("post-processors nested more than " + std::to_string(kMaxSequenceNesting) + " deep");
  }
  const std::string type = node.type();
  if (type == "TemplateProcessing") return std::make_unique<TemplateProcessing>(node);
  if (type == "BertProcessing") return std::make_unique<BertProcessing>(node);
  if (type == "RobertaProcessing") return std::make_unique<RobertaProcessing>(node);
  if (type == "ByteLevel") return std::make_unique<ByteLevelProcessing>(node);
  if (type == "Sequence") return std::make_unique<SequenceProcessing>(node, depth);
  node.refuse("post-processor type \"" + type + "\"");
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const ConfigNode& node) {
  return make_step(node, 0);
}

void trim_byte_level_offsets(std::span<const std::string_view> tokens,
                             std::vector<CharSpan>& offsets, bool add_prefix_space) {
  const auto is_space = [](char32_t c) { return c == 0x120 || is_rust_whitespace(c); };
  std::string replaced;
  for (std::size_t i = 0; i < tokens.size() && i < offsets.size(); ++i) {
    // The token's leading and trailing runs of (byte-level) spaces, in characters; an invalid
    // byte counts as U+FFFD, as the library's lossy conversion reads it.
    std::string_view token = tokens[i];
    if (!is_valid_utf8(token)) token = replaced = replace_invalid_utf8(token);
    std::size_t leading = 0;
    std::size_t trailing = 0;
    bool other_seen = false;
    for (std::size_t pos = 0; pos < token.size();) {
      if (is_space(next_code_point(token, pos))) {
        if (!other_seen) ++leading;
        ++trailing;
      } else {
        other_seen = true;
        trailing = 0;
      }
    }
    CharSpan& span = offsets[i];
    if (leading > 0) {
      const bool is_first = i == 0 || span.start == 0;
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      span.start = std::min(span.start + static_cast<int>(leading), span.end);
    }
    if (trailing > 0 && span.end >= static_cast<int>(trailing)) {
      span.end = std::max(span.end - static_cast<int>(trailing), span.start);
    }
  }
}

Encoding default_post_process(Encoding first, std::optional<Encoding> second) {
  first.type_ids.assign(first.ids.size(), 0);
  if (second) {
    first.ids.insert(first.ids.end(), second->ids.begin(), second->ids.end());
    first.type_ids.resize(first.ids.size(), 1);
  }
  return first;
}

}  // namespace attn::pipeline
