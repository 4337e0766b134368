#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/tokenizer/pipeline/post_processors.h"

// Every expected encoding here is what the tokenizers library (0.23.2, through its Node binding)
// gives for the same post_processor JSON, with a WordLevel model whose "w1".."w3" are ids 1..3:
// "w1 w2" alone or with "w3" as the pair.

namespace attn::pipeline {
namespace {

struct Expected {
  std::vector<int> ids;
  std::vector<int> type_ids;
};

// The four encodings of one processor: single and pair, with and without special tokens.
struct Cases {
  Expected single;
  Expected single_without_special_tokens;
  Expected pair;
  Expected pair_without_special_tokens;
};

Encoding sequence(std::vector<int> ids) {
  std::vector<int> type_ids(ids.size(), 0);
  return {std::move(ids), std::move(type_ids)};
}

void expect_encodings(std::string_view processor_json, const Cases& cases) {
  const nlohmann::json config = nlohmann::json::parse(processor_json);
  const auto processor =
      make_post_processor(ConfigNode(config, "tokenizer.json", "post_processor"));
  const auto check = [&](std::optional<Encoding> pair, bool add_special_tokens,
                         const Expected& expected) {
    SCOPED_TRACE(std::string(pair ? "pair" : "single") +
                 (add_special_tokens ? "" : " without special tokens"));
    const Encoding encoding = processor->process(sequence({1, 2}), pair, add_special_tokens);
    EXPECT_EQ(encoding.ids, expected.ids);
    EXPECT_EQ(encoding.type_ids, expected.type_ids);
  };
  check(std::nullopt, true, cases.single);
  check(std::nullopt, false, cases.single_without_special_tokens);
  check(sequence({3}), true, cases.pair);
  check(sequence({3}), false, cases.pair_without_special_tokens);
}

std::string processor_load_error(std::string_view processor_json) {
  const nlohmann::json config = nlohmann::json::parse(processor_json);
  try {
    make_post_processor(ConfigNode(config, "tokenizer.json", "post_processor"));
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

constexpr std::string_view kBertTemplate = R"({"type": "TemplateProcessing",
  "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
             {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
  "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
           {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
           {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
  "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [6], "tokens": ["[CLS]"]},
                     "[SEP]": {"id": "[SEP]", "ids": [7], "tokens": ["[SEP]"]}}})";

// A special token of two ids, unusual type ids, sequence A twice and B before A.
constexpr std::string_view kOddTemplate = R"({"type": "TemplateProcessing",
  "single": [{"SpecialToken": {"id": "X", "type_id": 2}}, {"Sequence": {"id": "A", "type_id": 3}},
             {"Sequence": {"id": "A", "type_id": 4}}],
  "pair": [{"Sequence": {"id": "B", "type_id": 5}}, {"SpecialToken": {"id": "X", "type_id": 1}},
           {"Sequence": {"id": "A", "type_id": 0}}],
  "special_tokens": {"X": {"id": "X", "ids": [8, 9], "tokens": ["x", "y"]}}})";

constexpr std::string_view kBert =
    R"({"type": "BertProcessing", "sep": ["[SEP]", 7], "cls": ["[CLS]", 6]})";

constexpr std::string_view kRoberta = R"({"type": "RobertaProcessing", "sep": ["</s>", 7],
  "cls": ["<s>", 6], "trim_offsets": true, "add_prefix_space": true})";

constexpr std::string_view kByteLevel =
    R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true})";

std::string sequence_of(std::string_view first, std::string_view second) {
  return R"({"type": "Sequence", "processors": [)" + std::string(first) + ", " +
         std::string(second) + "]}";
}

TEST(TemplateProcessing, AddsTheTemplatesSpecialTokens) {
  expect_encodings(kBertTemplate, {.single = {{6, 1, 2, 7}, {0, 0, 0, 0}},
                                   .single_without_special_tokens = {{1, 2}, {0, 0}},
                                   .pair = {{6, 1, 2, 7, 3, 7}, {0, 0, 0, 0, 1, 1}},
                                   .pair_without_special_tokens = {{1, 2, 3}, {0, 0, 1}}});
}

TEST(TemplateProcessing, GivesSequencesTheTemplatesTypeIdsEvenWithoutSpecialTokens) {
  expect_encodings(kOddTemplate, {.single = {{8, 9, 1, 2, 1, 2}, {2, 2, 3, 3, 4, 4}},
                                  .single_without_special_tokens = {{1, 2, 1, 2}, {3, 3, 4, 4}},
                                  .pair = {{3, 8, 9, 1, 2}, {5, 1, 1, 0, 0}},
                                  .pair_without_special_tokens = {{3, 1, 2}, {5, 0, 0}}});
}

TEST(TemplateProcessing, RefusesASpecialTokenMissingFromTheMap) {
  EXPECT_EQ(processor_load_error(R"({"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
               {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {}})"),
            "tokenizer.json: post_processor.single[0].SpecialToken.id: special token \"[CLS]\" is "
            "not in special_tokens");
}

TEST(TemplateProcessing, RefusesSequenceBInTheSingleTemplate) {
  EXPECT_EQ(processor_load_error(R"({"type": "TemplateProcessing",
    "single": [{"Sequence": {"id": "B", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {}})"),
            "tokenizer.json: post_processor.single[0].Sequence.id: the single template cannot use "
            "sequence B");
}

TEST(BertProcessing, AddsClsAndSep) {
  expect_encodings(kBert, {.single = {{6, 1, 2, 7}, {0, 0, 0, 0}},
                           .single_without_special_tokens = {{1, 2}, {0, 0}},
                           .pair = {{6, 1, 2, 7, 3, 7}, {0, 0, 0, 0, 1, 1}},
                           .pair_without_special_tokens = {{1, 2, 3}, {0, 0, 1}}});
}

TEST(RobertaProcessing, AddsSeparatorsAndGivesEveryTokenTypeIdZero) {
  expect_encodings(kRoberta, {.single = {{6, 1, 2, 7}, {0, 0, 0, 0}},
                              .single_without_special_tokens = {{1, 2}, {0, 0}},
                              .pair = {{6, 1, 2, 7, 7, 3, 7}, {0, 0, 0, 0, 0, 0, 0}},
                              .pair_without_special_tokens = {{1, 2, 3}, {0, 0, 0}}});
}

TEST(ByteLevelProcessing, LeavesTheIdsAlone) {
  expect_encodings(kByteLevel, {.single = {{1, 2}, {0, 0}},
                                .single_without_special_tokens = {{1, 2}, {0, 0}},
                                .pair = {{1, 2, 3}, {0, 0, 1}},
                                .pair_without_special_tokens = {{1, 2, 3}, {0, 0, 1}}});
}

TEST(SequenceProcessing, RunsLlamasChain) {
  expect_encodings(sequence_of(kByteLevel, kBertTemplate),
                   {.single = {{6, 1, 2, 7}, {0, 0, 0, 0}},
                    .single_without_special_tokens = {{1, 2}, {0, 0}},
                    .pair = {{6, 1, 2, 7, 3, 7}, {0, 0, 0, 0, 1, 1}},
                    .pair_without_special_tokens = {{1, 2, 3}, {0, 0, 1}}});
}

TEST(SequenceProcessing, HandsTheTemplatesPiecesToTheNextStepAsSeparateEncodings) {
  // Bert sees [CLS], A, [SEP] (and B, [SEP]) as encodings of their own: the first gets [CLS]
  // and [SEP], every later one a [SEP] of type id 1.
  expect_encodings(
      sequence_of(kBertTemplate, kBert),
      {.single = {{6, 6, 7, 1, 2, 7, 7, 7}, {0, 0, 0, 0, 0, 1, 0, 1}},
       .single_without_special_tokens = {{1, 2}, {0, 0}},
       .pair = {{6, 6, 7, 1, 2, 7, 7, 7, 3, 7, 7, 7}, {0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1}},
       .pair_without_special_tokens = {{1, 2, 3}, {0, 0, 1}}});
  expect_encodings(sequence_of(kOddTemplate, kRoberta),
                   {.single = {{6, 8, 9, 7, 7, 1, 2, 7, 7, 1, 2, 7}, std::vector<int>(12, 0)},
                    .single_without_special_tokens = {{1, 2, 1, 2}, {0, 0, 0, 0}},
                    .pair = {{6, 3, 7, 7, 8, 9, 7, 7, 1, 2, 7}, std::vector<int>(11, 0)},
                    .pair_without_special_tokens = {{3, 1, 2}, {0, 0, 0}}});
}

TEST(SequenceProcessing, ATemplateAfterATemplateIsAnError) {
  // The library stops on this (todo!()); attn names the file instead.
  const nlohmann::json config = nlohmann::json::parse(sequence_of(kBertTemplate, kBertTemplate));
  const auto processor =
      make_post_processor(ConfigNode(config, "tokenizer.json", "post_processor"));
  EXPECT_THROW(processor->process(sequence({1, 2}), std::nullopt, true), Error);
}

TEST(DefaultPostProcess, AppendsThePairWithTypeIdOne) {
  // The library without a post_processor.
  const Encoding single = default_post_process(sequence({1, 2}), std::nullopt);
  EXPECT_EQ(single.ids, (std::vector<int>{1, 2}));
  EXPECT_EQ(single.type_ids, (std::vector<int>{0, 0}));
  const Encoding pair = default_post_process(sequence({1, 2}), sequence({3}));
  EXPECT_EQ(pair.ids, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(pair.type_ids, (std::vector<int>{0, 0, 1}));
}

TEST(MakePostProcessor, RefusesUnknownTypes) {
  EXPECT_EQ(processor_load_error(R"({"type": "Foo"})"),
            "tokenizer.json: post_processor: post-processor type \"Foo\" is not implemented by "
            "attn");
}

TEST(MakePostProcessor, NamesTheFieldOfABadSetting) {
  EXPECT_EQ(processor_load_error(
                R"({"type": "BertProcessing", "sep": ["[SEP]", -1], "cls": ["[CLS]", 6]})"),
            "tokenizer.json: post_processor.sep[1]: expected a token id, found -1");
  EXPECT_EQ(processor_load_error(R"({"type": "BertProcessing", "sep": ["[SEP]", 7]})"),
            "tokenizer.json: post_processor.cls is missing");
}

TEST(MakePostProcessor, RefusesDeepNestingWithoutRecursingForever) {
  nlohmann::json config = nlohmann::json::parse(kBert);
  for (int depth = 0; depth < 1000; ++depth) {
    config = {{"type", "Sequence"}, {"processors", nlohmann::json::array({std::move(config)})}};
  }
  EXPECT_THROW(make_post_processor(ConfigNode(config, "tokenizer.json", "post_processor")), Error);
}

}  // namespace
}  // namespace attn::pipeline
