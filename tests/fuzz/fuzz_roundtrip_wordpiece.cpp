// Arbitrary bytes through the shipped BERT tokenizer (models/tiny-bert-brown). The input is a
// text, or a text and its pair when it contains a NUL byte:
// - valid UTF-8 always encodes: [CLS] first, [SEP] last, ids in [0, vocab_size), one type id
//   per token, type ids 0 then 1 (never back to 0);
// - any other bytes encode or are refused with attn::Error;
// - decoding the encoding, or the input read as ids (two bytes each, modulo vocab_size), gives
//   valid UTF-8;
// - a single valid text through the tokenizer converted from the folder's vocab.txt gives one
//   character span per id: (0, 0) for [CLS] and [SEP], every other inside the text's code
//   points, its start at or after the start before it.

#include <string>
#include <vector>

#include "src/tokenizer/wordpiece.h"
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

const attn::Tokenizer& bert_vocab_txt() {
  static const auto tokenizer =
      attn::load_wordpiece_tokenizer(attn::fuzz::shipped_model("tiny-bert-brown"));
  return *tokenizer;
}

void check_offsets(std::string_view text) {
  const attn::Tokenizer& tokenizer = bert_vocab_txt();
  const std::vector<int> ids = tokenizer.encode(text).ids;
  const std::vector<attn::CharSpan> spans = tokenizer.offsets()->token_offsets(text);
  FUZZ_CHECK(spans.size() == ids.size(), "not one span per id");
  FUZZ_CHECK(spans.front() == attn::CharSpan{} && spans.back() == attn::CharSpan{},
             "[CLS] or [SEP] has a span");
  int code_points = 0;
  for (char c : text) code_points += (uint8_t(c) & 0xC0) != 0x80;
  for (std::size_t i = 1; i + 1 < spans.size(); ++i) {
    FUZZ_CHECK(0 <= spans[i].start && spans[i].start <= spans[i].end && spans[i].end <= code_points,
               "span " + std::to_string(i) + " is outside the text");
    FUZZ_CHECK(i == 1 || spans[i].start >= spans[i - 1].start, "spans go backwards");
  }
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
  if (!pair && attn::is_valid_utf8(text)) check_offsets(text);
  check_decode(bert(), bytes);
  return 0;
}
