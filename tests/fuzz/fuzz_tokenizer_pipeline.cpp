// Random tokenizer.json pipelines: the fuzz input chooses a normalizer, a pre-tokenizer, a
// model, a post-processor, a decoder and added tokens (each from every type attn implements,
// with random options and patterns, nested in Sequences), then a text to encode. Loading must
// give a tokenizer or an attn::Error, and a tokenizer must satisfy check_tokenizer(): ids in
// range, decoding never fails, no crash, no hang.

#include <fuzzer/FuzzedDataProvider.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/tokenizer/tokenizer_json.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using nlohmann::json;

// Patterns of real files, and small ones that stress empty matches and lookarounds.
constexpr const char* kPatterns[] = {
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    R"(\p{N}{1,3})",
    R"([一-龥぀-ゟ゠-ヿ]+)",
    R"( ?\p{L}+|\s+(?!\S))",
    " ",
    "▁",
    "a*",
    "",
    R"(\b)",
    R"((?=a))",
    R"([^\s]+)",
    "x|xy"};
constexpr const char* kBehaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                      "Contiguous"};

std::string short_string(FuzzedDataProvider& input) { return input.ConsumeRandomLengthString(6); }

json pattern(FuzzedDataProvider& input) {
  const bool regex = input.ConsumeBool();
  std::string text =
      input.ConsumeBool() ? std::string(input.PickValueInArray(kPatterns)) : short_string(input);
  return regex ? json{{"Regex", text}} : json{{"String", text}};
}

json normalizer(FuzzedDataProvider& input, int depth) {
  switch (input.ConsumeIntegralInRange(0, depth < 2 ? 11 : 10)) {
    case 0:
      return {{"type", "NFC"}};
    case 1:
      return {{"type", "NFD"}};
    case 2:
      return {{"type", "NFKC"}};
    case 3:
      return {{"type", "NFKD"}};
    case 4:
      return {{"type", "Lowercase"}};
    case 5:
      return {{"type", "Strip"}, {"left", input.ConsumeBool()}, {"right", input.ConsumeBool()}};
    case 6:
      return {{"type", "StripAccents"}};
    case 7:
      return {{"type", "Replace"}, {"pattern", pattern(input)}, {"content", short_string(input)}};
    case 8:
      return {{"type", "Prepend"}, {"prepend", short_string(input)}};
    case 9:
      return {{"type", "BertNormalizer"},
              {"clean_text", input.ConsumeBool()},
              {"handle_chinese_chars", input.ConsumeBool()},
              {"strip_accents", input.ConsumeBool()},
              {"lowercase", input.ConsumeBool()}};
    case 10:
      return {{"type", "Nmt"}};
    default: {
      json list = json::array();
      for (int n = input.ConsumeIntegralInRange(0, 3); n > 0; --n) {
        list.push_back(normalizer(input, depth + 1));
      }
      return {{"type", "Sequence"}, {"normalizers", list}};
    }
  }
}

json pre_tokenizer(FuzzedDataProvider& input, int depth) {
  switch (input.ConsumeIntegralInRange(0, depth < 2 ? 8 : 7)) {
    case 0:
      return {{"type", "Split"},
              {"pattern", pattern(input)},
              {"behavior", input.PickValueInArray(kBehaviors)},
              {"invert", input.ConsumeBool()}};
    case 1:
      return {{"type", "ByteLevel"},
              {"add_prefix_space", input.ConsumeBool()},
              {"trim_offsets", true},
              {"use_regex", input.ConsumeBool()}};
    case 2: {
      const char* schemes[] = {"first", "always", "never"};
      return {{"type", "Metaspace"},
              {"replacement", input.ConsumeBool() ? "▁" : "_"},
              {"prepend_scheme", input.PickValueInArray(schemes)},
              {"split", input.ConsumeBool()}};
    }
    case 3:
      return {{"type", "Whitespace"}};
    case 4:
      return {{"type", "WhitespaceSplit"}};
    case 5:
      return {{"type", "BertPreTokenizer"}};
    case 6:
      return {{"type", "Punctuation"}, {"behavior", input.PickValueInArray(kBehaviors)}};
    case 7:
      return {{"type", "Digits"}, {"individual_digits", input.ConsumeBool()}};
    default: {
      json list = json::array();
      for (int n = input.ConsumeIntegralInRange(0, 3); n > 0; --n) {
        list.push_back(pre_tokenizer(input, depth + 1));
      }
      return {{"type", "Sequence"}, {"pretokenizers", list}};
    }
  }
}

// Tokens of the vocabulary: single characters of every kind the normalizers and pre-tokenizers
// write (ASCII, byte-level characters, "▁", <0xNN> bytes), then pairs merged from them.
std::vector<std::string> vocabulary(FuzzedDataProvider& input) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "▁", "Ġ", "##a", "a",
                                     "b",     "c",   " ",    "1", "2", "ab",  "é"};
  for (int byte : {0x0A, 0x41, 0xC3, 0xA9, 0xE2}) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    tokens.push_back(name);
  }
  for (int n = input.ConsumeIntegralInRange(0, 8); n > 0; --n) {
    const std::string token = short_string(input);
    if (!token.empty() && attn::is_valid_utf8(token)) tokens.push_back(token);
  }
  return tokens;
}

json model(FuzzedDataProvider& input) {
  const std::vector<std::string> tokens = vocabulary(input);
  json vocab = json::object();
  for (const std::string& token : tokens) {
    if (!vocab.contains(token)) vocab[token] = static_cast<int>(vocab.size());
  }
  switch (input.ConsumeIntegralInRange(0, 3)) {
    case 0: {
      json merges = json::array();
      if (input.ConsumeBool()) merges.push_back("a b");
      for (int n = input.ConsumeIntegralInRange(0, 4); n > 0; --n) {
        merges.push_back(short_string(input) + " " + short_string(input));
      }
      return {{"type", "BPE"},
              {"vocab", vocab},
              {"merges", merges},
              {"unk_token", input.ConsumeBool() ? json("<unk>") : json(nullptr)},
              {"fuse_unk", input.ConsumeBool()},
              {"byte_fallback", input.ConsumeBool()},
              {"ignore_merges", input.ConsumeBool()}};
    }
    case 1:
      return {{"type", "WordPiece"},
              {"vocab", vocab},
              {"unk_token", "<unk>"},
              {"continuing_subword_prefix", "##"},
              {"max_input_chars_per_word", input.ConsumeIntegralInRange(1, 100)}};
    case 2:
      return {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}};
    default: {
      json pieces = json::array();
      for (const auto& [token, id] : vocab.items()) {
        pieces.push_back({token, -input.ConsumeFloatingPointInRange(0.0, 20.0)});
      }
      return {{"type", "Unigram"},
              {"vocab", pieces},
              {"unk_id", 0},
              {"byte_fallback", input.ConsumeBool()}};
    }
  }
}

json post_processor(FuzzedDataProvider& input) {
  switch (input.ConsumeIntegralInRange(0, 4)) {
    case 0:
      return nullptr;
    case 1:
      return {
          {"type", "TemplateProcessing"},
          {"single",
           {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"pair",
           {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
            {{"SpecialToken", {{"id", "</s>"}, {"type_id", 1}}}},
            {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
          {"special_tokens",
           {{"<s>",
             {{"id", "<s>"}, {"ids", {input.ConsumeIntegralInRange(0, 40)}}, {"tokens", {"<s>"}}}},
            {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}};
    case 2:
      return {{"type", "BertProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 1}}};
    case 3:
      return {{"type", "RobertaProcessing"},
              {"sep", {"</s>", 2}},
              {"cls", {"<s>", 1}},
              {"trim_offsets", true},
              {"add_prefix_space", true}};
    default:
      return {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}};
  }
}

json decoder(FuzzedDataProvider& input, int depth) {
  switch (input.ConsumeIntegralInRange(0, depth < 2 ? 8 : 7)) {
    case 0:
      return {{"type", "ByteLevel"}};
    case 1:
      return {{"type", "Metaspace"},
              {"replacement", "▁"},
              {"prepend_scheme", "always"},
              {"split", true}};
    case 2:
      return {{"type", "ByteFallback"}};
    case 3:
      return {{"type", "Fuse"}};
    case 4:
      return {{"type", "Strip"},
              {"content", " "},
              {"start", input.ConsumeIntegralInRange(0, 3)},
              {"stop", input.ConsumeIntegralInRange(0, 3)}};
    case 5:
      return {{"type", "Replace"}, {"pattern", pattern(input)}, {"content", short_string(input)}};
    case 6:
      return {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", input.ConsumeBool()}};
    case 7:
      return {{"type", "BPEDecoder"}, {"suffix", short_string(input)}};
    default: {
      json list = json::array();
      for (int n = input.ConsumeIntegralInRange(0, 3); n > 0; --n) {
        list.push_back(decoder(input, depth + 1));
      }
      return {{"type", "Sequence"}, {"decoders", list}};
    }
  }
}

json added_tokens(FuzzedDataProvider& input) {
  json tokens = json::array();
  for (int n = input.ConsumeIntegralInRange(0, 4); n > 0; --n) {
    const std::string content = n == 1 ? "<s>" : short_string(input);
    if (!attn::is_valid_utf8(content)) continue;
    tokens.push_back({{"id", 100 + n},
                      {"content", content},
                      {"special", input.ConsumeBool()},
                      {"normalized", input.ConsumeBool()},
                      {"lstrip", input.ConsumeBool()},
                      {"rstrip", input.ConsumeBool()},
                      {"single_word", input.ConsumeBool()}});
  }
  return tokens;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attn::fuzz::ScratchDir folder;
  FuzzedDataProvider input(data, size);
  json file = {{"version", "1.0"}};
  file["normalizer"] = input.ConsumeBool() ? normalizer(input, 0) : json(nullptr);
  file["pre_tokenizer"] = input.ConsumeBool() ? pre_tokenizer(input, 0) : json(nullptr);
  file["model"] = model(input);
  file["post_processor"] = post_processor(input);
  file["decoder"] = input.ConsumeBool() ? decoder(input, 0) : json(nullptr);
  file["added_tokens"] = added_tokens(input);
  folder.write("tokenizer.json", file.dump(-1, ' ', false, json::error_handler_t::replace));
  std::unique_ptr<attn::Tokenizer> tokenizer;
  try {
    tokenizer = attn::load_tokenizer_json(folder.path());
  } catch (const attn::Error&) {
    return 0;  // a clean refusal
  }
  attn::fuzz::check_tokenizer(*tokenizer, input.ConsumeRemainingBytesAsString());
  return 0;
}
