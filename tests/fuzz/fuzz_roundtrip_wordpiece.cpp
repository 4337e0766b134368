// Arbitrary bytes through the shipped BERT tokenizer (models/tiny-bert-brown). The input is a
// text, or a text and its pair when it contains a NUL byte:
// - valid UTF-8 always encodes: [CLS] first, [SEP] last, ids in [0, vocab_size), one type id
//   per token, type ids 0 then 1 (never back to 0);
// - any other bytes encode or are refused with attn::Error;
// - decoding the encoding, or the input read as ids (two bytes each, modulo vocab_size), gives
//   valid UTF-8;
// - a single valid text through the tokenizer converted from the folder's vocab.txt passes
//   fuzz_util.h's check_offsets (one span per id, inside the text, (0, 0) for [CLS] and [SEP],
//   the others in order), and the spans cover the text as the library's do for BERT: every
//   other token spans at least one character, and every character outside all spans is one
//   that BERT drops (whitespace, a control character, an accent stripped): alone it encodes to
//   no token.

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
  const std::vector<attn::CharSpan> spans =
      attn::fuzz::check_offsets(tokenizer.offsets(), tokenizer, text, tokenizer.encode(text))
          .offsets;
  const std::vector<char32_t> characters = attn::decode_utf8(text, "text");
  std::vector<bool> covered(characters.size(), false);
  // [CLS] first and [SEP] last (check_encoding): the others are the text's.
  for (std::size_t i = 1; i + 1 < spans.size(); ++i) {
    FUZZ_CHECK(spans[i].start < spans[i].end, "token " + std::to_string(i) + " spans nothing");
    std::fill(covered.begin() + spans[i].start, covered.begin() + spans[i].end, true);
  }
  for (std::size_t at = 0; at < characters.size(); ++at) {
    if (covered[at]) continue;
    const std::string character = attn::encode_utf8(std::u32string(1, characters[at]));
    FUZZ_CHECK(tokenizer.encode_plain(character).empty(),
               "character " + std::to_string(at) + " is in no span, yet BERT keeps it");
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
