// Arbitrary bytes through the shipped GPT-2 tokenizer (models/tiny-gpt2-brown):
// - valid UTF-8 text always encodes, to ids in [0, vocab_size), and decodes back to itself;
// - any other bytes encode or are refused with attn::Error;
// - the input read as a list of ids (two bytes each, modulo vocab_size) decodes to UTF-8, which
//   is the concatenation of the tokens' texts when no token is only part of a character.

#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"

namespace {

const attn::Tokenizer& gpt2() {
  static const auto tokenizer = attn::load_tokenizer(attn::fuzz::shipped_model("tiny-gpt2-brown"));
  return *tokenizer;
}

void check_round_trip(const attn::Tokenizer& tokenizer, std::string_view text) {
  const bool valid = attn::is_valid_utf8(text);
  attn::Encoding encoding;
  try {
    encoding = tokenizer.encode(text);
  } catch (const attn::Error& e) {
    FUZZ_CHECK(!valid, std::string("valid UTF-8 refused: ") + e.what());
    return;
  }
  for (int id : encoding.ids) {
    FUZZ_CHECK(id >= 0 && id < tokenizer.vocab_size(), "encode gave id " + std::to_string(id));
  }
  if (valid) {
    FUZZ_CHECK(tokenizer.decode(encoding.ids, false) == text, "decode(encode(text)) != text");
  }
}

void check_decode(const attn::Tokenizer& tokenizer, std::string_view bytes) {
  std::vector<int> ids;
  std::string concatenated;
  bool every_token_is_text = true;  // no token alone is part of a character
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const int id = (uint8_t(bytes[i]) << 8 | uint8_t(bytes[i + 1])) % tokenizer.vocab_size();
    ids.push_back(id);
    const std::string text = tokenizer.decode(std::vector<int>{id}, false);
    every_token_is_text = every_token_is_text && text.find("\xEF\xBF\xBD") == std::string::npos;
    concatenated += text;
  }
  const std::string decoded = tokenizer.decode(ids, false);
  // As Hugging Face's: the tokens' bytes joined, then read as UTF-8 with U+FFFD for what is not.
  FUZZ_CHECK(attn::is_valid_utf8(decoded), "decode(ids) is not UTF-8");
  if (every_token_is_text) {
    FUZZ_CHECK(decoded == concatenated, "decode(ids) is not the concatenation of its tokens");
  }
  (void)tokenizer.decode(ids, true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_round_trip(gpt2(), bytes);
  check_decode(gpt2(), bytes);
  return 0;
}
