// tokenizer.json alone in a folder, loaded as FUZZ_FAMILY ("gpt2": byte-level BPE, "bert":
// WordPiece). The outcome must be a tokenizer or an attn::Error; a tokenizer that loads must
// satisfy check_tokenizer().

#include <string_view>

#include "src/tokenizer/bpe.h"
#include "src/tokenizer/wordpiece.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir folder;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  folder.write("tokenizer.json", input);
  std::unique_ptr<attn::Tokenizer> tokenizer;
  try {
    tokenizer = std::string_view(FUZZ_FAMILY) == "gpt2"
                    ? attn::load_bpe_tokenizer(folder.path())
                    : attn::load_wordpiece_tokenizer(folder.path());
  } catch (const attn::Error&) {
    return 0;  // a clean refusal
  }
  attn::fuzz::check_tokenizer(*tokenizer, input.substr(0, 256));
  return 0;
}
