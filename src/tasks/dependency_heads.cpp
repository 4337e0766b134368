#include "src/tasks/dependency_heads.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "src/base/unicode.h"
#include "src/tokenizer/pipeline/pre_tokenizers.h"
#include "src/tokenizer/sentencepiece.h"

namespace attn {
namespace {

// The bytes of the UTF-8 character that starts with `lead`.
int utf8_char_bytes(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  return 4;
}

// A word as Python's repr() quotes it, as the references' reasons do: 'word', or "it's".
std::string quoted(const std::string& word) {
  const bool double_quotes =
      word.find('\'') != std::string::npos && word.find('"') == std::string::npos;
  return double_quotes ? '"' + word + '"' : "'" + word + "'";
}

// The byte offset of every code point of `text`, and of its end: (code points + 1).
std::vector<int> code_point_bytes(std::string_view text) {
  std::vector<int> bytes;
  for (std::size_t at = 0; at < text.size(); at += utf8_char_bytes(text[at])) {
    bytes.push_back(int(at));
  }
  bytes.push_back(int(text.size()));
  return bytes;
}

// The bytes of a space of Python's str.isspace() at `at` of `text`, or 0.
int space_length(std::string_view text, std::size_t at) {
  if ((static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) return 0;  // inside a character
  const int length = utf8_char_bytes(text[at]);
  if (at + length > text.size()) return 0;
  const std::vector<char32_t> c = decode_utf8(text.substr(at, length), "text");
  return c.size() == 1 && is_python_space(c[0]) ? length : 0;
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// The bytes of a byte-level BPE piece, each of its characters one byte of GPT-2's table, or
// nothing when a character is not in the table.
std::optional<std::string> byte_level_bytes(std::string_view piece) {
  static const std::map<std::string, char, std::less<>> byte_of = [] {
    std::map<std::string, char, std::less<>> table;
    for (int b = 0; b < 256; ++b)
      table[pipeline::byte_level_char(static_cast<unsigned char>(b))] = char(b);
    return table;
  }();
  std::string bytes;
  for (std::size_t i = 0; i < piece.size();) {
    const int length = utf8_char_bytes(piece[i]);
    const auto found = byte_of.find(piece.substr(i, length));
    if (found == byte_of.end()) return std::nullopt;
    bytes += found->second;
    i += length;
  }
  return bytes;
}

// The bytes of a SentencePiece piece: "<0xNN>" is the byte NN, any other piece itself with
// each "\u2581" a space.
std::string sentencepiece_bytes(std::string_view piece) {
  unsigned byte = 0;
  if (piece.size() == 6 && piece.starts_with("<0x") && piece.ends_with(">") &&
      std::from_chars(piece.data() + 3, piece.data() + 5, byte, 16).ptr == piece.data() + 5) {
    return std::string(1, char(byte));
  }
  std::string bytes;
  append_with_spaces(bytes, piece);
  return bytes;
}

}  // namespace

std::optional<std::vector<std::optional<ByteSpan>>> token_byte_spans(const Tokenizer& tokenizer,
                                                                     const TokenOffsets* offsets,
                                                                     std::string_view text,
                                                                     std::span<const int> ids) {
  std::vector<std::optional<ByteSpan>> spans;
  if (offsets) {
    const std::vector<int> bytes = code_point_bytes(text);
    for (const CharSpan& span : offsets->token_offsets(text)) {
      if (span.start == span.end) {
        spans.push_back(std::nullopt);
      } else {
        spans.push_back(ByteSpan{bytes[span.start], bytes[span.end]});
      }
    }
    if (spans.size() != ids.size()) return std::nullopt;
    return spans;
  }
  // Otherwise the tokens' pieces must spell the text, up to spaces (SentencePiece writes one
  // before the text and one for a run of them) and the case of ASCII letters (uncased
  // tokenizers lower the text).
  std::size_t at = 0;
  const auto skip_spaces = [&] {
    while (const int length = at < text.size() ? space_length(text, at) : 0) at += length;
  };
  const auto spells = [&](char byte) {
    return at < text.size() && ascii_lower(text[at]) == ascii_lower(byte);
  };
  // SentencePiece's pieces when any has its space symbol, else byte-level BPE's, whose table
  // also holds characters such as "é" for the byte of their code point.
  std::vector<std::string> pieces;
  for (int id : ids) pieces.push_back(tokenizer.is_special(id) ? "" : tokenizer.token_string(id));
  const bool sentencepiece =
      std::any_of(pieces.begin(), pieces.end(), [](const std::string& piece) {
        return piece.find(kSentencePieceSpace) != std::string::npos;
      });
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (tokenizer.is_special(ids[i])) {
      spans.push_back(std::nullopt);
      continue;
    }
    std::optional<std::string> bytes =
        sentencepiece ? sentencepiece_bytes(pieces[i]) : byte_level_bytes(pieces[i]);
    if (!bytes) return std::nullopt;
    const int start = int(at);
    for (const char byte : *bytes) {
      if (!spells(byte)) {
        skip_spaces();
        if (byte == ' ') continue;
        if (!spells(byte)) return std::nullopt;
      }
      ++at;
    }
    spans.push_back(ByteSpan{start, int(at)});
  }
  skip_spaces();
  if (at != text.size()) return std::nullopt;
  return spans;
}

WordAlignment align_words(std::string_view text, std::span<const TreebankWord> words,
                          std::span<const std::optional<ByteSpan>> token_spans) {
  WordAlignment alignment;
  // Each word's bytes: skip what Python's str.isspace() calls space, then the FORM, exactly.
  std::vector<ByteSpan> word_spans;
  std::size_t cursor = 0;
  for (std::size_t w = 0; w < words.size(); ++w) {
    while (const int length = cursor < text.size() ? space_length(text, cursor) : 0) {
      cursor += length;
    }
    const std::string& form = words[w].form;
    if (text.compare(cursor, form.size(), form) != 0) {
      alignment.problem =
          "word " + std::to_string(w + 1) + " " + quoted(form) + " is not in the text";
      return alignment;
    }
    word_spans.push_back({int(cursor), int(cursor + form.size())});
    cursor += form.size();
  }
  // A token belongs to the word holding the first of its bytes that lies inside any word.
  std::vector<int> tokens_of_word(words.size(), 0);
  for (const std::optional<ByteSpan>& span : token_spans) {
    int word = -1;
    for (int byte = span ? span->start : 0; span && byte < span->end && word < 0; ++byte) {
      for (std::size_t w = 0; w < word_spans.size(); ++w) {
        if (byte >= word_spans[w].start && byte < word_spans[w].end) {
          word = int(w);
          break;
        }
      }
    }
    alignment.token_word.push_back(word);
    if (word >= 0) ++tokens_of_word[word];
  }
  const long missing = std::count(tokens_of_word.begin(), tokens_of_word.end(), 0);
  if (missing > 0) {
    const std::size_t w =
        std::find(tokens_of_word.begin(), tokens_of_word.end(), 0) - tokens_of_word.begin();
    alignment.problem = "word " + std::to_string(w + 1) + " " + quoted(words[w].form) +
                        " has no token of its own (" + std::to_string(missing) + " such word" +
                        (missing > 1 ? "s" : "") + ")";
  }
  return alignment;
}

std::vector<double> word_attention(const float* attention, int n_tokens,
                                   std::span<const int> token_word, int n_words) {
  std::vector<double> w(std::size_t(n_words) * n_words, 0.0);
  std::vector<int> tokens_of_word(n_words, 0);
  for (int s = 0; s < n_tokens; ++s) {
    const int from = token_word[s];
    if (from < 0) continue;
    ++tokens_of_word[from];
    for (int t = 0; t < n_tokens; ++t) {
      const int to = token_word[t];
      if (to >= 0) w[std::size_t(from) * n_words + to] += attention[std::size_t(s) * n_tokens + t];
    }
  }
  for (int i = 0; i < n_words; ++i) {
    for (int j = 0; j < n_words; ++j) w[std::size_t(i) * n_words + j] /= tokens_of_word[i];
  }
  return w;
}

DependencyScorer::DependencyScorer(int n_layers, int n_heads, bool causal)
    : n_layers_(n_layers), n_heads_(n_heads), causal_(causal) {
  for (DirectionTally& direction : all_.directions) {
    direction.correct.assign(std::size_t(n_layers) * n_heads, 0);
  }
}

RelationTally& DependencyScorer::tally(std::map<std::string, RelationTally>& relations,
                                       const std::string& name) {
  auto [entry, added] = relations.try_emplace(name);
  if (added) {
    for (DirectionTally& direction : entry->second.directions) {
      direction.correct.assign(std::size_t(n_layers_) * n_heads_, 0);
    }
  }
  return entry->second;
}

bool DependencyScorer::scored(int d, int g, DependencyDirection direction) const {
  if (!causal_) return true;
  return direction == kDependentToHead ? g < d : g > d;
}

void DependencyScorer::begin_sentence(int index, std::span<const TreebankWord> words) {
  sentence_ = index;
  words_now_.assign(words.begin(), words.end());
  word_tallies_.clear();
  const int n = int(words.size());
  words_ += n;
  for (int d = 0; d < n; ++d) {
    const TreebankWord& word = words[d];
    if (word.head == 0) {
      ++root_words_;
      word_tallies_.push_back({nullptr, nullptr, nullptr});
      continue;
    }
    const std::array<RelationTally*, 3> tallies = {
        &all_, &tally(deprel_, word.deprel), &tally(universal_, universal_relation(word.deprel))};
    word_tallies_.push_back(tallies);
    const int g = word.head - 1;
    for (RelationTally* relation : tallies) {
      ++relation->pairs;
      for (int direction = 0; direction < 2; ++direction) {
        if (!scored(d, g, DependencyDirection(direction))) continue;
        DirectionTally& t = relation->directions[direction];
        ++t.count;
        for (std::size_t k = 0; k < kBaselineOffsets.size(); ++k) {
          t.baseline_correct[k] += d + kBaselineOffsets[k] == g;
        }
      }
    }
  }
}

void DependencyScorer::add_head(int layer, int head, std::span<const double> w) {
  const int n = int(words_now_.size());
  const std::size_t cell = std::size_t(layer) * n_heads_ + head;
  for (int d = 0; d < n; ++d) {
    if (words_now_[d].head == 0) continue;
    const int g = words_now_[d].head - 1;
    for (int direction = 0; direction < 2; ++direction) {
      if (!scored(d, g, DependencyDirection(direction))) continue;
      // The candidates j in [first, end) but d, and the weight each gets: W[d][j] or W[j][d].
      // A causal head sees only earlier words from d, and only later words see d.
      int first = 0, end = n;
      if (causal_ && direction == kDependentToHead) end = d;
      if (causal_ && direction == kHeadToDependent) first = d + 1;
      int best = -1, second = -1;
      const auto weight = [&](int j) {
        return direction == kDependentToHead ? w[std::size_t(d) * n + j]
                                             : w[std::size_t(j) * n + d];
      };
      for (int j = first; j < end; ++j) {
        if (j == d) continue;
        if (best < 0 || weight(j) > weight(best)) {
          second = best;
          best = j;
        } else if (second < 0 || weight(j) > weight(second)) {
          second = j;
        }
      }
      ++decisions_;
      if (best < 0) continue;
      if (second >= 0 && weight(best) - weight(second) < kNearTie) {
        ties_.push_back({.sentence = sentence_,
                         .dependent = d + 1,
                         .direction = DependencyDirection(direction),
                         .layer = layer,
                         .head = head,
                         .gap = weight(best) - weight(second),
                         .predicted = best + 1,
                         .gold_head = g + 1});
      }
      if (best == g) {
        for (RelationTally* relation : word_tallies_[d])
          relation->directions[direction].correct[cell]++;
      }
    }
  }
}

}  // namespace attn
