#pragma once

// Which heads track syntax (Clark, Khandelwal, Levy & Manning 2019, "What Does BERT Look At?",
// section 4.2): each sentence of a dependency treebank runs through the model, token attention
// becomes word attention, and every head is scored on how often the word a dependent attends to
// most is its syntactic head (dep->head), or the word that attends most to a dependent is its
// head (head->dep), per relation, against the best fixed-offset baseline. The exact definitions
// are ../shared/golden/README.md's ("interp/", "Dependency heads"):
//
//   alignment: a treebank word covers the bytes of its FORM in the sentence's text; a token
//   belongs to the word holding the first of its bytes that lies inside any word; a sentence
//   where a FORM is not found, or a word gets no token, is skipped;
//   W[i][j] = mean over tokens s of word i of (sum over tokens t of word j of A[s][t]);
//   argmax over the candidate words (an encoder's every other word; a decoder's only those a
//   causal head can see: earlier words for dep->head, later ones for head->dep, each pair scored
//   in the one direction its head allows), ties to the lowest word;
//   baseline: the word at a fixed offset -5..5, the best offset per relation and direction
//   (ties in the order -1, 1, -2, 2, ...).

#include <array>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/tasks/treebank.h"
#include "src/tokenizer/tokenizer.h"

namespace attn {

// [start, end) in UTF-8 bytes of a text.
struct ByteSpan {
  int start = 0;
  int end = 0;
};

// Where each of `ids` (encode(text) of `tokenizer`) comes from in `text`, or nothing for the
// special tokens encode() adds: from `offsets` when given (WordPiece), else from the bytes each
// token's piece stands for (byte-level BPE, SentencePiece with its byte pieces), which must spell
// the text up to spaces and the case of ASCII letters. Nothing when neither works for this text.
std::optional<std::vector<std::optional<ByteSpan>>> token_byte_spans(const Tokenizer& tokenizer,
                                                                     const TokenOffsets* offsets,
                                                                     std::string_view text,
                                                                     std::span<const int> ids);

// The word of each token (-1: none), or why the sentence cannot be aligned.
struct WordAlignment {
  std::vector<int> token_word;
  std::string problem;  // empty when aligned
};

WordAlignment align_words(std::string_view text, std::span<const TreebankWord> words,
                          std::span<const std::optional<ByteSpan>> token_spans);

// W (n_words, n_words) in float64 from one head's attention (n_tokens, n_tokens).
std::vector<double> word_attention(const float* attention, int n_tokens,
                                   std::span<const int> token_word, int n_words);

enum DependencyDirection { kDependentToHead = 0, kHeadToDependent = 1 };
constexpr std::array<const char*, 2> kDirectionNames = {"dep->head", "head->dep"};

// The fixed offsets, in the order that breaks ties between equally good ones.
constexpr std::array<int, 10> kBaselineOffsets = {-1, 1, -2, 2, -3, 3, -4, 4, -5, 5};

// The tallies of one relation in one direction.
struct DirectionTally {
  long count = 0;                           // pairs scored
  std::vector<long> correct;                // (n_layers, n_heads)
  std::array<long, 10> baseline_correct{};  // per kBaselineOffsets entry
};

struct RelationTally {
  long pairs = 0;
  std::array<DirectionTally, 2> directions;
};

// A decision whose best and second candidates are closer than kNearTie: another float32
// implementation may choose the other.
constexpr double kNearTie = 1e-5;
struct NearTie {
  int sentence = 0;
  int dependent = 0;  // 1-based word
  DependencyDirection direction = kDependentToHead;
  int layer = 0;
  int head = 0;
  double gap = 0;
  int predicted = 0;  // 1-based word
  int gold_head = 0;
};

// Scores every head over the aligned sentences, one at a time: begin_sentence, then add_head
// for every layer and head with its word attention.
class DependencyScorer {
 public:
  DependencyScorer(int n_layers, int n_heads, bool causal);

  void begin_sentence(int index, std::span<const TreebankWord> words);
  void add_head(int layer, int head, std::span<const double> word_attention);

  const RelationTally& all() const { return all_; }
  const std::map<std::string, RelationTally>& deprel() const { return deprel_; }
  const std::map<std::string, RelationTally>& universal() const { return universal_; }
  const std::vector<NearTie>& near_ties() const { return ties_; }
  long decisions() const { return decisions_; }
  long words() const { return words_; }
  long root_words() const { return root_words_; }
  bool causal() const { return causal_; }
  int n_layers() const { return n_layers_; }
  int n_heads() const { return n_heads_; }

 private:
  // Whether the pair of word d (0-based) and its head g is scored in `direction`.
  bool scored(int d, int g, DependencyDirection direction) const;
  RelationTally& tally(std::map<std::string, RelationTally>& relations, const std::string& name);

  int n_layers_, n_heads_;
  bool causal_;
  RelationTally all_;
  std::map<std::string, RelationTally> deprel_, universal_;
  std::vector<NearTie> ties_;
  long decisions_ = 0, words_ = 0, root_words_ = 0;
  // The sentence at hand: its index, words, and each word's relation tallies.
  int sentence_ = 0;
  std::vector<TreebankWord> words_now_;
  std::vector<std::array<RelationTally*, 3>> word_tallies_;  // all, deprel, universal
};

}  // namespace attn
