// Arbitrary bytes through the shipped BERT tokenizer (models/tiny-bert-brown). The input is a
// text, or a text and its pair when it contains a NUL byte:
// - valid UTF-8 always encodes: [CLS] first, [SEP] last, ids in [0, vocab_size), one type id
//   per token, type ids 0 then 1 (never back to 0);
// - any other bytes encode or are refused with attn::Error;
// - decoding the encoding, or the input read as ids (two bytes each, modulo vocab_size), gives
//   valid UTF-8.

#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"

namespace {

const attn::Tokenizer& bert() {
  static const auto tokenizer = attn::load_tokenizer(attn::fuzz::shipped_model("tiny-bert-brown"));
  return *tokenizer;
}

void check_encoding(const attn::Tokenizer& tokenizer, const attn::Encoding& encoding) {
  const auto& ids = encoding.ids;
  FUZZ_CHECK(ids.size() >= 2, "fewer than [CLS] and [SEP]");
  FUZZ_CHECK(encoding.type_ids.size() == ids.size(), "one type id per token");
  for (int id : ids) {
    FUZZ_CHECK(id >= 0 && id < tokenizer.vocab_size(), "encode gave id " + std::to_string(id));
  }
  FUZZ_CHECK(tokenizer.token_string(ids.front()) == "[CLS]", "first token is not [CLS]");
  FUZZ_CHECK(tokenizer.token_string(ids.back()) == "[SEP]", "last token is not [SEP]");
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int type = encoding.type_ids[i];
    FUZZ_CHECK(type == 0 || type == 1, "type id " + std::to_string(type));
    FUZZ_CHECK(i == 0 || type >= encoding.type_ids[i - 1], "type ids go from 1 back to 0");
  }
  FUZZ_CHECK(attn::is_valid_utf8(tokenizer.decode(ids, false)), "decode gave invalid UTF-8");
  FUZZ_CHECK(attn::is_valid_utf8(tokenizer.decode(ids, true)), "decode gave invalid UTF-8");
}

void check_decode(const attn::Tokenizer& tokenizer, std::string_view bytes) {
  std::vector<int> ids;
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    ids.push_back((uint8_t(bytes[i]) << 8 | uint8_t(bytes[i + 1])) % tokenizer.vocab_size());
  }
  FUZZ_CHECK(attn::is_valid_utf8(tokenizer.decode(ids, false)), "decode gave invalid UTF-8");
  FUZZ_CHECK(attn::is_valid_utf8(tokenizer.decode(ids, true)), "decode gave invalid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = bytes.find('\0');
  const std::string_view text = bytes.substr(0, nul);
  std::optional<std::string_view> pair;
  if (nul != std::string_view::npos) pair = bytes.substr(nul + 1);
  const bool valid = attn::is_valid_utf8(text) && (!pair || attn::is_valid_utf8(*pair));
  try {
    check_encoding(bert(), bert().encode(text, pair));
  } catch (const attn::Error& e) {
    FUZZ_CHECK(!valid, std::string("valid UTF-8 refused: ") + e.what());
  }
  check_decode(bert(), bytes);
  return 0;
}
