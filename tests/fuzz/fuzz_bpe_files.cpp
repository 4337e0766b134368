// GPT-2 byte-level BPE from vocab.json + merges.txt (+ tokenizer_config.json when the input has
// a third part), the files separated by kFileSeparator, converted into the tokenizer.json
// pipeline as GPT2TokenizerFast (RobertaTokenizerFast, Qwen2TokenizerFast when the config names
// the class) builds it. The outcome must be a tokenizer or an attn::Error; a tokenizer that loads
// must satisfy check_tokenizer().

#include "src/tokenizer/bpe.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir folder;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto files = attn::fuzz::split_files(input);
  folder.write("vocab.json", files[0]);
  attn::fuzz::write_optional(folder, "merges.txt", files, 1);
  attn::fuzz::write_optional(folder, "tokenizer_config.json", files, 2);
  std::unique_ptr<attn::Tokenizer> tokenizer;
  try {
    tokenizer = attn::load_bpe_tokenizer(folder.path());
  } catch (const attn::Error&) {
    return 0;  // a clean refusal
  }
  attn::fuzz::check_tokenizer(*tokenizer, files.back().substr(0, 256));
  return 0;
}
