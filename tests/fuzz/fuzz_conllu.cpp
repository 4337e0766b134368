// The CoNLL-U reader and the word alignment of attn heads --deps on arbitrary text. A treebank it
// accepts has, in every sentence, heads that lead to a root within the sentence; aligning a
// sentence's text (one token per byte) gives every token a word in range or none.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/tasks/dependency_heads.h"
#include "src/tasks/treebank.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  attn::Treebank treebank;
  try {
    treebank = attn::read_conllu(text, "treebank.conllu");
  } catch (const attn::Error&) {
    return 0;
  }
  for (const attn::TreebankSentence& sentence : treebank.sentences) {
    const int n = int(sentence.words.size());
    for (const attn::TreebankWord& word : sentence.words) {
      FUZZ_CHECK(word.head >= 0 && word.head <= n, "accepted a HEAD outside the sentence");
    }
    if (!sentence.text) continue;
    std::vector<std::optional<attn::ByteSpan>> spans;
    for (int b = 0; b < int(sentence.text->size()); ++b) spans.push_back(attn::ByteSpan{b, b + 1});
    const attn::WordAlignment alignment = attn::align_words(*sentence.text, sentence.words, spans);
    if (!alignment.problem.empty()) continue;
    FUZZ_CHECK(alignment.token_word.size() == spans.size(), "a token without an entry");
    for (int word : alignment.token_word) {
      FUZZ_CHECK(word >= -1 && word < n, "a token given a word out of range");
    }
  }
  return 0;
}
