// The tokenizer.json normalizers. Every expected output below was checked against the tokenizers
// library itself (tokenizers 0.23.2 for Node, the same Rust code): a normalizer built from the
// same JSON and run through normalizeString.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/pipeline/normalizers.h"
#include "src/tokenizer/pipeline/precompiled.h"

namespace attn::pipeline {
namespace {

using nlohmann::json;
using namespace std::string_literals;

std::unique_ptr<Normalizer> make(const json& config) {
  return make_normalizer(ConfigNode(config, "t.json", "normalizer"));
}

std::string run(const json& config, std::string text) {
  make(config)->normalize(text);
  return text;
}

// The message of the Error that `action` throws ("" when it throws none).
std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string make_error(const json& config) {
  return error_of([&] { make(config); });
}

TEST(Normalizers, UnicodeForms) {
  const json nfc = {{"type", "NFC"}};
  EXPECT_EQ(run(nfc, "e\u0301"), "\u00e9");
  EXPECT_EQ(run(nfc, "\u1100\u1161\u11a8"), "\uac01");
  EXPECT_EQ(run(nfc, "a\u0316\u0301"), "\u00e1\u0316");
  EXPECT_EQ(run(nfc, "plain ascii"), "plain ascii");

  const json nfd = {{"type", "NFD"}};
  EXPECT_EQ(run(nfd, "\u00e9"), "e\u0301");
  EXPECT_EQ(run(nfd, "\uac01"), "\u1100\u1161\u11a8");
  EXPECT_EQ(run(nfd, "a\u0301\u0316"), "a\u0316\u0301");

  const json nfkc = {{"type", "NFKC"}};
  EXPECT_EQ(run(nfkc, "\ufb01"), "fi");
  EXPECT_EQ(run(nfkc, "\u2460"), "1");
  EXPECT_EQ(run(nfkc, "\u1e9b\u0323"), "\u1e69");
  EXPECT_EQ(run(nfkc, "\u3392"), "MHz");

  const json nfkd = {{"type", "NFKD"}};
  EXPECT_EQ(run(nfkd, "\ufb01"), "fi");
  EXPECT_EQ(run(nfkd, "\u00e9"), "e\u0301");
  EXPECT_EQ(run(nfkd, "\u2126"), "\u03a9");
}

// The library's normalization tables are Unicode 9.0: newer characters are neither decomposed,
// composed nor reordered.
TEST(Normalizers, UnicodeFormsKeepCharactersNewerThanUnicode9) {
  EXPECT_EQ(run({{"type", "NFC"}}, "\U00011935\U00011930"), "\U00011935\U00011930");
  EXPECT_EQ(run({{"type", "NFD"}}, "\U00011938"), "\U00011938");
  EXPECT_EQ(run({{"type", "NFD"}}, "a\u1df6\u0316"), "a\u1df6\u0316");
  EXPECT_EQ(run({{"type", "NFKC"}}, "\U0001F16C"), "\U0001F16C");
  EXPECT_EQ(run({{"type", "NFKD"}}, "\ua7f2"), "\ua7f2");
}

TEST(Normalizers, LowercaseIsPerCharacter) {
  const json lowercase = {{"type", "Lowercase"}};
  EXPECT_EQ(run(lowercase, "HeLLo"), "hello");
  // No final sigma: the library lowercases character by character.
  EXPECT_EQ(run(lowercase, "\u039f\u0394\u039f\u03a3 \u0391\u03a3."),
            "\u03bf\u03b4\u03bf\u03c3 \u03b1\u03c3.");
  EXPECT_EQ(run(lowercase, "\u0130"), "i\u0307");
  EXPECT_EQ(run(lowercase, "\u1e9e\u00c9"), "\u00df\u00e9");
  // Case pairs of Unicode 16, which Rust knows.
  EXPECT_EQ(run(lowercase, "\ua7cb\U00010D50"), "\u0264\U00010D70");
}

TEST(Normalizers, Strip) {
  const json left = {{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}};
  EXPECT_EQ(run(left, "  a b  "), "a b  ");
  EXPECT_EQ(run(left, "\u3000\u0085x\u00a0"), "x\u00a0");
  EXPECT_EQ(run(left, "\u200bx "), "\u200bx ");

  const json right = {{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}};
  EXPECT_EQ(run(right, "  a b  "), "  a b");
  EXPECT_EQ(run(right, "x\u2028\u2029\t\n"), "x");
  EXPECT_EQ(run(right, " x\u200b"), " x\u200b");

  const json both = {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}};
  EXPECT_EQ(run(both, "  a b  "), "a b");
  EXPECT_EQ(run(both, "   "), "");
  EXPECT_EQ(run(both, "\u180ex\u180e"), "\u180ex\u180e");
}

TEST(Normalizers, StripAccentsRemovesUnicode9Marks) {
  const json strip_accents = {{"type", "StripAccents"}};
  // Nonspacing, spacing and enclosing marks all go.
  EXPECT_EQ(run(strip_accents, "e\u0301\u0316x\u0903y\u20dd"), "exy");
  // It does not decompose.
  EXPECT_EQ(run(strip_accents, "\u00e9"), "\u00e9");
  // U+0B55 is a mark of Unicode 13; U+1CF2 was a mark in Unicode 9.
  EXPECT_EQ(run(strip_accents, "a\u0b55b\u1cf2c"), "a\u0b55bc");
}

TEST(Normalizers, ReplaceString) {
  const json pairs = {{"type", "Replace"}, {"pattern", {{"String", "aa"}}}, {"content", "b"}};
  EXPECT_EQ(run(pairs, "aaaab"), "bbb");
  EXPECT_EQ(run(pairs, "xyz"), "xyz");
  EXPECT_EQ(run(pairs, ""), "");

  const json empty = {{"type", "Replace"}, {"pattern", {{"String", ""}}}, {"content", "_"}};
  EXPECT_EQ(run(empty, "ab"), "_a_b_");
  EXPECT_EQ(run(empty, "\u00e9"), "_\u00e9_");
  EXPECT_EQ(run(empty, ""), "");

  const json space = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  EXPECT_EQ(run(space, " a  b "), "\u2581a\u2581\u2581b\u2581");
}

TEST(Normalizers, ReplaceRegex) {
  const json spaces = {
      {"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", "\u2581"}};
  EXPECT_EQ(run(spaces, "a  b   c d"), "a\u2581b\u2581c d");
  EXPECT_EQ(run(spaces, ""), "");
  const json empty_matches = {
      {"type", "Replace"}, {"pattern", {{"Regex", "x*"}}}, {"content", "-"}};
  EXPECT_EQ(run(empty_matches, "abxxc"), "-a-b-c-");
}

TEST(Normalizers, PrependOnlyToNonEmptyText) {
  const json prepend = {{"type", "Prepend"}, {"prepend", "\u2581"}};
  EXPECT_EQ(run(prepend, "Hi"), "\u2581Hi");
  EXPECT_EQ(run(prepend, ""), "");
  EXPECT_EQ(run(prepend, " "), "\u2581 ");
}

json bert(bool clean_text, bool handle_chinese_chars, json strip_accents, bool lowercase) {
  return {{"type", "BertNormalizer"},
          {"clean_text", clean_text},
          {"handle_chinese_chars", handle_chinese_chars},
          {"strip_accents", strip_accents},
          {"lowercase", lowercase}};
}

TEST(Normalizers, BertNormalizerDefaults) {
  const json defaults = bert(true, true, nullptr, true);
  EXPECT_EQ(run(defaults, "H\u00e9llo \u4e2d\u6587\tX\0Y \u0391\u03a3"s),
            "hello  \u4e2d  \u6587  xy \u03b1\u03c3");
  // Controls and format characters go (U+0890 is newer than the library's tables), other
  // whitespace becomes a space.
  EXPECT_EQ(run(defaults,
                "a\u200b\u00ad\u0085"
                "b\u00a0"
                "c\u0890"
                "d\ufffd"
                "e\x0b"
                "f\x1f"
                "g\x7f"
                "h"),
            "ab c\u0890defgh");
  // Chinese characters are spaced out; strip_accents' NFD maps U+F900 to U+8C48.
  EXPECT_EQ(run(defaults, "\U00020000\uf900"), " \U00020000  \u8c48 ");
}

TEST(Normalizers, BertNormalizerOptions) {
  // strip_accents null follows lowercase (false here): nothing changes.
  EXPECT_EQ(run(bert(false, false, nullptr, false), "H\u00e9llo \u4e2d\t\0"s),
            "H\u00e9llo \u4e2d\t\0"s);

  const json strip_only = bert(false, false, true, false);
  EXPECT_EQ(run(strip_only, "H\u00e9llo"), "Hello");
  // Only nonspacing marks of Unicode 8.0 go: U+08D4 is newer, U+0903 is a spacing mark, and
  // U+1734 was nonspacing then.
  EXPECT_EQ(run(strip_only, "x\u08d4y\u0301z\u0903"), "x\u08d4yz\u0903");
  EXPECT_EQ(run(strip_only, "x\u1734"), "x");

  EXPECT_EQ(run(bert(true, false, false, true), "H\u00e9LLO \u4e2d\r\n"), "h\u00e9llo \u4e2d  ");
}

TEST(Normalizers, NmtAndByteLevel) {
  EXPECT_EQ(run({{"type", "Nmt"}},
                "a\x01"
                "b\tc\u200b"
                "d\ufeff"
                "e\u2581"
                "f\u0085"),
            "ab c d e f\u0085");
  const json byte_level = {{"type", "ByteLevel"}};
  EXPECT_EQ(run(byte_level, "Hello \u6211"), "Hello\u0120\u00e6\u012a\u0133");
  EXPECT_EQ(run(byte_level, "a\tb\u00ad"), "a\u0109b\u00c2\u0143");
}

TEST(Normalizers, Sequence) {
  const json mistral = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", "\u2581"}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  EXPECT_EQ(run(mistral, "Hello world"), "\u2581Hello\u2581world");
  EXPECT_EQ(run(mistral, ""), "");

  const json accents = {
      {"type", "Sequence"},
      {"normalizers", {{{"type", "NFKD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}}};
  EXPECT_EQ(run(accents, "C\u1ee5 TH\u1ec2\u2026"), "cu the...");

  EXPECT_EQ(run({{"type", "Sequence"}, {"normalizers", json::array()}}, "Unchanged"), "Unchanged");
}

TEST(Normalizers, RefusesUnknownTypesByName) {
  const std::string message =
      make_error({{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Foo"}}}}});
  EXPECT_NE(message.find("t.json"), std::string::npos) << message;
  EXPECT_NE(message.find("normalizers[1]"), std::string::npos) << message;
  EXPECT_NE(message.find("normalizer type \"Foo\""), std::string::npos) << message;
}

TEST(Normalizers, BadOptionsNameTheirField) {
  std::string message = make_error({{"type", "Strip"}, {"strip_left", true}});
  EXPECT_NE(message.find("strip_right"), std::string::npos) << message;
  message = make_error({{"type", "Replace"}, {"pattern", {{"Glob", "*"}}}, {"content", ""}});
  EXPECT_NE(message.find("pattern"), std::string::npos) << message;
  message = make_error({{"type", "Replace"}, {"pattern", {{"Regex", "("}}}, {"content", ""}});
  EXPECT_NE(message.find("pattern.Regex"), std::string::npos) << message;
  message = make_error(bert(true, true, "yes", true));
  EXPECT_NE(message.find("strip_accents"), std::string::npos) << message;
}

TEST(Normalizers, DeepSequencesAreAnErrorNotAStackOverflow) {
  json config = {{"type", "NFC"}};
  for (int depth = 0; depth < 10000; ++depth) {
    json outer = {{"type", "Sequence"}, {"normalizers", json::array()}};
    outer["normalizers"].push_back(std::move(config));
    config = std::move(outer);
  }
  const std::string message = make_error(config);
  EXPECT_NE(message.find("nested more than 64 deep"), std::string::npos) << message;
}

// ---- Precompiled --------------------------------------------------------------------------------

// A Darts double-array unit: a child reached by `label`, its children at `offset` (XOR), and
// whether a key ends here (its value in the unit at the children's label 0).
std::uint32_t trie_unit(std::uint32_t label, std::uint32_t offset, bool key_ends) {
  return offset << 10 | (key_ends ? 1u << 8 : 0) | label;
}
std::uint32_t trie_value(std::uint32_t value) { return 1u << 31 | value; }

// A charsmap with the keys "A" -> "a", "\ufb01" -> "fi" and "e\u0301" -> "\u00e9" (a hand-built
// trie: the root's children are at offset 0, every other node's at offset 1).
std::vector<std::uint32_t> small_trie() {
  std::vector<std::uint32_t> units(256, 0);
  units[0x41] = trie_unit(0x41, 1, true);  // "A"
  units[0x40] = trie_value(0);
  units[0xEF] = trie_unit(0xEF, 1, false);  // "\ufb01" = EF AC 81
  units[0x42] = trie_unit(0xAC, 1, false);
  units[0xC2] = trie_unit(0x81, 1, true);
  units[0xC3] = trie_value(2);
  units[0x65] = trie_unit(0x65, 1, false);  // "e\u0301" = 65 CC 81
  units[0xA8] = trie_unit(0xCC, 1, false);
  units[0x28] = trie_unit(0x81, 1, true);
  units[0x29] = trie_value(5);
  return units;
}

void append_le_u32(std::string& out, std::uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>(value >> shift));
}

std::string charsmap_blob(const std::vector<std::uint32_t>& units, const std::string& strings) {
  std::string blob;
  append_le_u32(blob, static_cast<std::uint32_t>(units.size() * 4));
  for (std::uint32_t unit : units) append_le_u32(blob, unit);
  return blob + strings;
}

const std::string kSmallStrings = "a\0fi\0\u00e9\0"s;

std::string base64(const std::string& bytes) {
  static const char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string text;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t group = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<unsigned char>(bytes[i + 2]);
    for (std::size_t digit = 0; digit < 4; ++digit) {
      text += i + digit <= bytes.size() ? kDigits[group >> (18 - 6 * digit) & 63] : '=';
    }
  }
  return text;
}

json precompiled(const std::string& blob) {
  return {{"type", "Precompiled"}, {"precompiled_charsmap", base64(blob)}};
}

TEST(Precompiled, LooksUpGraphemeClustersThenCharacters) {
  const json config = precompiled(charsmap_blob(small_trie(), kSmallStrings));
  EXPECT_EQ(run(config, "A"), "a");
  EXPECT_EQ(run(config, "AB"), "aB");
  EXPECT_EQ(run(config, "\ufb01x"), "fix");
  EXPECT_EQ(run(config, "xe\u0301y"), "x\u00e9y");
  EXPECT_EQ(run(config, "e"), "e");
  EXPECT_EQ(run(config, "\r\n"), "\r\n");
  EXPECT_EQ(run(config, ""), "");
  // A cluster shorter than 6 bytes is replaced by its shortest key prefix's replacement, the
  // rest of the cluster dropped (spm_precompiled's behaviour)...
  EXPECT_EQ(run(config, "A\u0301"), "a");
  EXPECT_EQ(run(config, "e\u0301\u0301"), "\u00e9");
  // ... while a longer one goes character by character.
  EXPECT_EQ(run(config, "A\u0301\u0301\u0301"), "a\u0301\u0301\u0301");
}

TEST(Precompiled, Base64AsTheCrateDecodesIt) {
  std::string bytes;
  EXPECT_TRUE(decode_base64("YWJj", bytes));
  EXPECT_EQ(bytes, "abc");
  EXPECT_TRUE(decode_base64("YQ==", bytes));
  EXPECT_EQ(bytes, "a");
  EXPECT_TRUE(decode_base64("YWI=", bytes));
  EXPECT_EQ(bytes, "ab");
  // Padding may be missing or short...
  EXPECT_TRUE(decode_base64("YQ", bytes));
  EXPECT_EQ(bytes, "a");
  EXPECT_TRUE(decode_base64("YQ=", bytes));
  EXPECT_EQ(bytes, "a");
  EXPECT_TRUE(decode_base64("YWI", bytes));
  EXPECT_EQ(bytes, "ab");
  // ... but not too long, nor inside the text.
  EXPECT_FALSE(decode_base64("YQ===", bytes));
  EXPECT_FALSE(decode_base64("YWJj=", bytes));
  EXPECT_FALSE(decode_base64("YQ==YWJj", bytes));
  EXPECT_FALSE(decode_base64("Y", bytes));     // a lone symbol
  EXPECT_FALSE(decode_base64("YR==", bytes));  // non-zero unused bits
  EXPECT_FALSE(decode_base64("Y Q=", bytes));
}

// A malformed charsmap is an Error naming the file and the field, when the normalizer is made or
// (for a trie pointing outside itself) when it runs, never a crash.
TEST(Precompiled, MalformedCharsmapsNameTheField) {
  auto expect_field_error = [](const std::string& message, const std::string& what) {
    EXPECT_NE(message.find("t.json: normalizer.precompiled_charsmap"), std::string::npos)
        << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  };
  expect_field_error(make_error({{"type", "Precompiled"}, {"precompiled_charsmap", "not base64!"}}),
                     "base64");
  const std::string good = charsmap_blob(small_trie(), kSmallStrings);
  expect_field_error(make_error(precompiled(good.substr(0, 2))), "header");
  expect_field_error(make_error(precompiled(good.substr(0, 100))), "only");
  expect_field_error(make_error(precompiled(charsmap_blob({}, kSmallStrings))), "empty");
  expect_field_error(make_error(precompiled(charsmap_blob(small_trie(), "a\0\xff"s))), "UTF-8");

  auto run_error = [](const std::vector<std::uint32_t>& units, const std::string& text) {
    return error_of([&] { run(precompiled(charsmap_blob(units, kSmallStrings)), text); });
  };
  std::vector<std::uint32_t> units = small_trie();
  units[0x40] = trie_value(1000);
  expect_field_error(run_error(units, "A"), "past the end");
  units = small_trie();
  units[0x40] = trie_value(6);  // inside "\u00e9"
  expect_field_error(run_error(units, "A"), "inside a UTF-8 character");
  units = small_trie();
  units[0x41] = trie_unit(0x41, 1 << 20, true);
  expect_field_error(run_error(units, "A"), "past the trie's end");
}

}  // namespace
}  // namespace attn::pipeline
