#include "src/tasks/token_classify.h"

#include <algorithm>
#include <stdexcept>

#include "src/tasks/classify.h"

namespace attn {
namespace {

// A token the pipeline considers (gather_pre_entities), or a word made of such tokens.
struct PreEntity {
  std::string word;
  std::vector<float> scores;  // per label
  CharSpan span;
  int index = 0;
  bool is_subword = false;  // continues the word of the token before it
};

// numpy's argmax: the first of equal maxima.
int best_label(std::span<const float> scores) {
  return int(std::max_element(scores.begin(), scores.end()) - scores.begin());
}

// np.mean of float32 values: summed in float32 in order, divided in double (what numpy does
// for fewer than 8 values; more are summed pairwise, within float32 rounding of this).
float mean(std::span<const float> values) {
  float sum = 0;
  for (float value : values) sum += value;
  return float(double(sum) / double(values.size()));
}

std::size_t code_points(std::string_view text) {
  return std::size_t(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::vector<PreEntity> gather_pre_entities(const TokenLogits& input, const Tokenizer& tokenizer,
                                           const TokenOffsets& offsets, std::size_t n_labels) {
  std::vector<PreEntity> entities;
  for (std::size_t i = 0; i < input.ids.size(); ++i) {
    const int id = input.ids[i];
    if (tokenizer.is_special(id)) continue;
    PreEntity entity{.word = tokenizer.token_string(id),
                     .scores = class_scores(input.logits.subspan(i * n_labels, n_labels),
                                            ScoreFunction::kSoftmax),
                     .span = input.offsets[i],
                     .index = int(i),
                     .is_subword = false};
    const std::string_view covered = text_slice(input.text, entity.span);
    if (offsets.word_aware()) {
      // A token is a subword when it is not spelled as the text it covers ("##an" for "an").
      entity.is_subword = code_points(entity.word) != code_points(covered);
    } else {
      // The pipeline's fallback heuristic: a subword neither starts the text nor has a space
      // just before it or as its first character (" " not in sentence[start - 1:start + 1]).
      const int start = entity.span.start;
      entity.is_subword = start > 0 && text_slice(input.text, {start - 1, start + 1}).find(' ') ==
                                           std::string_view::npos;
    }
    if (id == offsets.unk_id()) {
      entity.word = std::string(covered);
      entity.is_subword = false;
    }
    entities.push_back(std::move(entity));
  }
  return entities;
}

Entity best_label_entity(const PreEntity& token, const std::vector<std::string>& labels) {
  const int best = best_label(token.scores);
  return {.label = labels[std::size_t(best)],
          .score = token.scores[std::size_t(best)],
          .index = token.index,
          .word = token.word,
          .span = token.span};
}

// aggregate_word: one word's tokens as one entity, labelled as `aggregation` says.
Entity aggregate_word(std::span<const PreEntity> tokens, Aggregation aggregation,
                      const TokenOffsets& offsets, const std::vector<std::string>& labels) {
  std::vector<std::string> words;
  for (const PreEntity& token : tokens) words.push_back(token.word);
  std::vector<float> scores;
  switch (aggregation) {
    case Aggregation::kFirst:
      scores = tokens.front().scores;
      break;
    case Aggregation::kMax:
      scores = std::max_element(tokens.begin(), tokens.end(),
                                [](const PreEntity& a, const PreEntity& b) {
                                  return *std::max_element(a.scores.begin(), a.scores.end()) <
                                         *std::max_element(b.scores.begin(), b.scores.end());
                                })
                   ->scores;
      break;
    case Aggregation::kAverage: {
      std::vector<float> column(tokens.size());
      for (std::size_t label = 0; label < labels.size(); ++label) {
        for (std::size_t t = 0; t < tokens.size(); ++t) column[t] = tokens[t].scores[label];
        scores.push_back(mean(column));
      }
      break;
    }
    case Aggregation::kNone:
    case Aggregation::kSimple:
      throw std::logic_error("aggregate_word: not a word-level strategy");
  }
  const int best = best_label(scores);
  return {.label = labels[std::size_t(best)],
          .score = scores[std::size_t(best)],
          .index = tokens.front().index,
          .word = offsets.tokens_to_string(words),
          .span = {tokens.front().span.start, tokens.back().span.end}};
}

std::vector<Entity> aggregate_words(const std::vector<PreEntity>& tokens, Aggregation aggregation,
                                    const TokenOffsets& offsets,
                                    const std::vector<std::string>& labels) {
  std::vector<Entity> words;
  std::size_t begin = 0;
  for (std::size_t i = 1; i <= tokens.size(); ++i) {
    if (i < tokens.size() && tokens[i].is_subword) continue;
    words.push_back(
        aggregate_word(std::span(tokens).subspan(begin, i - begin), aggregation, offsets, labels));
    begin = i;
  }
  return words;
}

// get_tag: "B-PER" -> (B, PER), "I-PER" -> (I, PER), anything else continues: "PER" -> (I, PER).
struct Tag {
  bool begins = false;
  std::string_view type;
};

Tag tag_of(std::string_view label) {
  if (label.starts_with("B-")) return {true, label.substr(2)};
  if (label.starts_with("I-")) return {false, label.substr(2)};
  return {false, label};
}

// group_sub_entities: the group is named after its first entity's label from its last "-" on.
Entity group_of(std::span<const Entity> entities, const TokenOffsets& offsets) {
  const std::string& first = entities.front().label;
  std::vector<float> scores;
  std::vector<std::string> words;
  for (const Entity& entity : entities) {
    scores.push_back(entity.score);
    words.push_back(entity.word);
  }
  return {.label = first.substr(first.rfind('-') == std::string::npos ? 0 : first.rfind('-') + 1),
          .score = mean(scores),
          .index = entities.front().index,
          .word = offsets.tokens_to_string(words),
          .span = {entities.front().span.start, entities.back().span.end}};
}

// group_entities: an entity joins the group before it when it has the same type and does not
// begin a new entity ("B-").
std::vector<Entity> group_entities(const std::vector<Entity>& entities,
                                   const TokenOffsets& offsets) {
  std::vector<Entity> groups;
  std::size_t begin = 0;
  for (std::size_t i = 1; i <= entities.size(); ++i) {
    if (i < entities.size()) {
      const Tag tag = tag_of(entities[i].label);
      if (tag.type == tag_of(entities[i - 1].label).type && !tag.begins) continue;
    }
    groups.push_back(group_of(std::span(entities).subspan(begin, i - begin), offsets));
    begin = i;
  }
  return groups;
}

}  // namespace

std::vector<Entity> find_entities(const TokenLogits& input, const Tokenizer& tokenizer,
                                  const TokenOffsets& offsets,
                                  const std::vector<std::string>& labels, Aggregation aggregation,
                                  const std::vector<std::string>& ignore_labels) {
  const std::vector<PreEntity> tokens =
      gather_pre_entities(input, tokenizer, offsets, labels.size());
  std::vector<Entity> entities;
  if (aggregation == Aggregation::kNone || aggregation == Aggregation::kSimple) {
    for (const PreEntity& token : tokens) entities.push_back(best_label_entity(token, labels));
  } else {
    entities = aggregate_words(tokens, aggregation, offsets, labels);
  }
  if (aggregation != Aggregation::kNone && !entities.empty()) {
    entities = group_entities(entities, offsets);
  }
  std::erase_if(entities, [&](const Entity& entity) {
    return std::find(ignore_labels.begin(), ignore_labels.end(), entity.label) !=
           ignore_labels.end();
  });
  return entities;
}

std::string_view text_slice(std::string_view text, CharSpan span) {
  std::size_t begin = text.size(), end = text.size();
  int index = 0;
  for (std::size_t byte = 0; byte < text.size(); ++byte) {
    if ((static_cast<unsigned char>(text[byte]) & 0xC0) == 0x80) continue;
    if (index == span.start) begin = byte;
    if (index == span.end) end = byte;
    ++index;
  }
  return begin >= end ? std::string_view() : text.substr(begin, end - begin);
}

}  // namespace attn
