#include "src/tasks/treebank.h"

#include <charconv>

#include "src/base/error.h"
#include "src/base/unicode.h"

namespace attn {
namespace {

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> columns;
  for (std::size_t start = 0;;) {
    const std::size_t tab = line.find('\t', start);
    columns.push_back(line.substr(start, tab == std::string_view::npos ? line.npos : tab - start));
    if (tab == std::string_view::npos) return columns;
    start = tab + 1;
  }
}

std::optional<int> whole_number(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// Each word's HEAD must lead to the root (0) without a cycle, and some word must be the root.
// `lines` gives each word's line for the error.
void check_tree(const TreebankSentence& sentence, const std::vector<int>& lines,
                const std::string& file) {
  const int n = int(sentence.words.size());
  bool has_root = false;
  for (int w = 0; w < n; ++w) {
    if (sentence.words[w].head > n) {
      throw Error(file + ": line " + std::to_string(lines[w]) + ": HEAD " +
                  std::to_string(sentence.words[w].head) + " is past the sentence's " +
                  std::to_string(n) + " words");
    }
    has_root = has_root || sentence.words[w].head == 0;
  }
  if (n > 0 && !has_root) {
    throw Error(file + ": line " + std::to_string(sentence.line) +
                ": the sentence has no root (no word with HEAD 0)");
  }
  for (int w = 0; w < n; ++w) {
    int at = w + 1;
    for (int steps = 0; at != 0; ++steps) {
      if (steps > n) {
        throw Error(file + ": line " + std::to_string(lines[w]) + ": the heads of word " +
                    std::to_string(w + 1) + " form a cycle that never reaches the root");
      }
      at = sentence.words[at - 1].head;
    }
  }
}

}  // namespace

std::string universal_relation(const std::string& deprel) {
  return deprel.substr(0, deprel.find(':'));
}

Treebank read_conllu(std::string_view contents, const std::string& file) {
  Treebank treebank;
  TreebankSentence sentence;
  std::vector<int> word_lines;  // the line of each word of `sentence`
  bool in_sentence = false;
  const auto finish = [&] {
    if (!in_sentence) return;
    check_tree(sentence, word_lines, file);
    treebank.sentences.push_back(std::move(sentence));
    sentence = TreebankSentence{};
    word_lines.clear();
    in_sentence = false;
  };
  int number = 0;
  for (std::size_t start = 0; start < contents.size();) {
    std::size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = file + ": line " + std::to_string(number);
    if (!is_valid_utf8(line)) throw Error(where + ": not valid UTF-8");
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      finish();
      continue;
    }
    if (!in_sentence) {
      in_sentence = true;
      sentence.line = number;
    }
    if (line.front() == '#') {
      constexpr std::string_view kText = "# text = ", kSentId = "# sent_id = ";
      if (line.starts_with(kText)) sentence.text = std::string(line.substr(kText.size()));
      if (line.starts_with(kSentId)) sentence.sent_id = std::string(line.substr(kSentId.size()));
      continue;
    }
    const std::vector<std::string_view> columns = split_tabs(line);
    if (columns.size() != 10) {
      throw Error(where + ": " + std::to_string(columns.size()) +
                  " tab-separated columns, CoNLL-U has 10 (ID FORM LEMMA UPOS XPOS FEATS HEAD "
                  "DEPREL DEPS MISC)");
    }
    const std::string_view id = columns[0];
    if (id.find('-') != std::string_view::npos) {
      ++treebank.multiword_lines;
      continue;
    }
    if (id.find('.') != std::string_view::npos) {
      ++treebank.empty_nodes;
      continue;
    }
    const std::optional<int> word_id = whole_number(id);
    if (!word_id) throw Error(where + ": ID '" + std::string(id) + "' is not a word number");
    if (*word_id != int(sentence.words.size()) + 1) {
      throw Error(where + ": ID " + std::to_string(*word_id) + " out of order (expected " +
                  std::to_string(sentence.words.size() + 1) + ")");
    }
    const std::optional<int> head = whole_number(columns[6]);
    if (!head) throw Error(where + ": HEAD '" + std::string(columns[6]) + "' is not a number");
    if (columns[1].empty()) throw Error(where + ": empty FORM");
    sentence.words.push_back(
        {.form = std::string(columns[1]), .head = *head, .deprel = std::string(columns[7])});
    word_lines.push_back(number);
  }
  finish();
  return treebank;
}

}  // namespace attn
