// Arbitrary bytes through the shipped GPT-2 tokenizer (models/tiny-gpt2-brown):
// - valid UTF-8 text always encodes, to ids in [0, vocab_size), and decodes back to itself;
// - any other bytes encode or are refused with attn::Error;
// - the input read as a list of ids (two bytes each, modulo vocab_size) decodes to UTF-8, which
//   is the concatenation of the tokens' texts when no token is only part of a character;
// - valid UTF-8 text passes fuzz_util.h's check_offsets, and its spans cover the text exactly as
//   the library's do for GPT-2 (check_spans_cover_the_text).

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

// GPT-2's tokenizer.json has no normalizer, pre-tokenizes into byte-level characters (one per
// byte) without a prefix space, and its ByteLevel post-processor does not trim offsets. So, as
// the library gives them, token k stands for bytes [b(k), b(k + 1)) of the text, one per
// character of its token string (<|endoftext|>, written in the text, is ASCII: one byte per
// character too), b(0) = 0 and the last ends the text; and it spans the characters those bytes
// belong to: the spans follow one another over the whole text, sharing only a character whose
// bytes two tokens split.
void check_spans_cover_the_text(const attn::Tokenizer& tokenizer, std::string_view text) {
  const attn::Encoding encoding =
      attn::fuzz::check_offsets(tokenizer.offsets(), tokenizer, text, tokenizer.encode(text));
  std::vector<int> character_of_byte;
  int character = 0;
  for (std::size_t pos = 0; pos < text.size(); ++character) {
    const std::size_t length = attn::utf8_sequence_length(static_cast<unsigned char>(text[pos]));
    character_of_byte.insert(character_of_byte.end(), length, character);
    pos += length;
  }
  std::size_t byte = 0;
  for (std::size_t k = 0; k < encoding.ids.size(); ++k) {
    const std::size_t length =
        attn::decode_utf8(tokenizer.token_string(encoding.ids[k]), "token").size();
    FUZZ_CHECK(length > 0 && byte + length <= text.size(),
               "token " + std::to_string(k) + " runs past the text");
    const attn::CharSpan expected{character_of_byte[byte],
                                  character_of_byte[byte + length - 1] + 1};
    FUZZ_CHECK(encoding.offsets[k] == expected, "token " + std::to_string(k) + " spans [" +
                                                    std::to_string(encoding.offsets[k].start) +
                                                    ", " + std::to_string(encoding.offsets[k].end) +
                                                    "), not [" + std::to_string(expected.start) +
                                                    ", " + std::to_string(expected.end) + ")");
    byte += length;
  }
  FUZZ_CHECK(byte == text.size(), "the tokens stand for " + std::to_string(byte) + " of the " +
                                      std::to_string(text.size()) + " bytes of the text");
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
  if (attn::is_valid_utf8(bytes)) check_spans_cover_the_text(gpt2(), bytes);
  check_decode(gpt2(), bytes);
  return 0;
}
