// Arbitrary bytes as tokenizer.model (checked as libsentencepiece checks it, then converted into
// the tokenizer.json pipeline as LlamaConverter converts it), then as text, then (when the input
// has a third part, after kFileSeparator) as tokenizer_config.json. The outcome must be a tokenizer
// or an attn::Error; a tokenizer that loads must satisfy check_tokenizer(), and with the default
// settings the text it encodes must stream, token by token through decode_continuation, to exactly
// what decoding all its ids gives. The seed model is a 300-piece BPE model with byte fallback,
// trained with libsentencepiece on one English sentence.

#include <string>
#include <vector>

#include "src/tokenizer/sentencepiece.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir folder;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto files = attn::fuzz::split_files(input);
  folder.write("tokenizer.model", files[0]);
  attn::fuzz::write_optional(folder, "tokenizer_config.json", files, 2);
  std::unique_ptr<attn::Tokenizer> tokenizer;
  try {
    tokenizer = attn::load_sentencepiece_tokenizer(folder.path());
  } catch (const attn::Error&) {
    return 0;  // a clean refusal
  }
  const std::string_view text = files.size() > 1 ? files[1].substr(0, 256) : std::string_view();
  attn::fuzz::check_tokenizer(*tokenizer, text);
  if (files.size() > 2 || !attn::is_valid_utf8(text)) return 0;
  std::vector<int> ids;
  try {
    ids = tokenizer->encode(text).ids;
  } catch (const attn::Error&) {
    return 0;  // a model the library loads but cannot encode this text with: a clean refusal
  }
  std::string streamed;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    streamed += tokenizer->decode_continuation(std::span(ids).first(i), ids[i]);
  }
  FUZZ_CHECK(attn::replace_invalid_utf8(streamed) == tokenizer->decode(ids, true),
             "streamed text differs from decode(ids, true)");
  return 0;
}
