// tokenizer.json alone in a folder, loaded as attn loads it (load_tokenizer_json). The outcome
// must be a tokenizer or an attn::Error; a tokenizer that loads must satisfy check_tokenizer().
// Two seed corpora: byte-level BPE files (fuzz_tokenizer_json_bpe) and WordPiece files
// (fuzz_tokenizer_json_wordpiece).

#include <string_view>

#include "src/tokenizer/tokenizer_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir folder;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  folder.write("tokenizer.json", input);
  std::unique_ptr<attn::Tokenizer> tokenizer;
  try {
    tokenizer = attn::load_tokenizer_json(folder.path());
  } catch (const attn::Error&) {
    return 0;  // a clean refusal
  }
  attn::fuzz::check_tokenizer(*tokenizer, input.substr(0, 256));
  return 0;
}
