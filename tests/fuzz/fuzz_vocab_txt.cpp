// BERT WordPiece from vocab.txt (+ tokenizer_config.json when the input has a second part,
// after kFileSeparator). The outcome must be a tokenizer or an attn::Error; a tokenizer that
// loads must satisfy check_tokenizer().

#include "src/tokenizer/wordpiece.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir folder;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto files = attn::fuzz::split_files(input);
  folder.write("vocab.txt", files[0]);
  attn::fuzz::write_optional(folder, "tokenizer_config.json", files, 1);
  std::unique_ptr<attn::Tokenizer> tokenizer;
  try {
    tokenizer = attn::load_wordpiece_tokenizer(folder.path());
  } catch (const attn::Error&) {
    return 0;  // a clean refusal
  }
  attn::fuzz::check_tokenizer(*tokenizer, files.back().substr(0, 256));
  return 0;
}
