#pragma once

// A dependency treebank in Universal Dependencies' CoNLL-U format
// (universaldependencies.org/format.html): blocks of lines, one per sentence, separated by empty
// lines; comments start with '#' ("# text = ..." holds the raw text); every other line has 10
// tab-separated columns: ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct TreebankWord {
  std::string form;
  int head = 0;  // 1-based word number; 0 for the root
  std::string deprel;
};

struct TreebankSentence {
  int line = 0;  // the 1-based line of the file the block starts on
  std::string sent_id;
  std::optional<std::string> text;  // the "# text = " comment, when there is one
  // The words: lines whose ID is an integer. Multiword-token ranges (3-4) and empty nodes (8.1)
  // are left out; the words inside a range are ordinary lines and are kept.
  std::vector<TreebankWord> words;
};

struct Treebank {
  std::vector<TreebankSentence> sentences;
  int multiword_lines = 0;  // range lines skipped
  int empty_nodes = 0;      // empty-node lines skipped
};

// Reads CoNLL-U text. Errors (attn::Error) name `file` and the line: a line without 10
// tab-separated columns, an ID or HEAD that is not a number, IDs out of order, a HEAD past the
// sentence's words, heads that form a cycle (or a sentence with no root), text that is not UTF-8.
Treebank read_conllu(std::string_view contents, const std::string& file);

// A relation's universal part: the text before the first ':' ("nmod:poss" -> "nmod").
std::string universal_relation(const std::string& deprel);

}  // namespace attn
