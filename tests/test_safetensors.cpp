// SafeTensors on crafted files: every malformed header or data section is rejected with one line
// naming the file and the problem; F16 and BF16 decode exactly; and the tiny GPT-2 converted to
// F16 and BF16 still gives the F32 model's greedy tokens and logits within half precision.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "src/base/error.h"
#include "src/io/safetensors.h"
#include "src/tasks/generate.h"
#include "tests/cli_util.h"
#include "tests/crafted_file_test.h"
#include "tests/model_util.h"
#include "tests/safetensors_util.h"

namespace attn::test {
namespace {

using nlohmann::json;

std::string float_bytes(std::initializer_list<float> values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), std::data(values), bytes.size());
  return bytes;
}

std::string u16_bytes(std::initializer_list<uint16_t> values) {
  std::string bytes(values.size() * 2, '\0');
  std::memcpy(bytes.data(), std::data(values), bytes.size());
  return bytes;
}

// One tensor entry of a header.
json entry(const std::string& dtype, std::vector<int64_t> shape, int64_t begin, int64_t end) {
  return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

class SafeTensorsTest : public CraftedFileTest<SafeTensors> {
 protected:
  SafeTensorsTest() : CraftedFileTest("crafted.safetensors") {}
};

TEST_F(SafeTensorsTest, MissingFileNamesItAndTheReason) {
  try {
    SafeTensors file(path_);
    ADD_FAILURE() << "opened a file that does not exist";
  } catch (const Error& e) {
    expect_message(e.what(), {"cannot open file", "No such file"});
  }
}

TEST_F(SafeTensorsTest, EmptyFileIsTruncated) { expect_rejected("", {"truncated: 0 bytes"}); }

TEST_F(SafeTensorsTest, FileShorterThanTheHeaderLengthIsTruncated) {
  expect_rejected(std::string(5, '\0'), {"truncated: 5 bytes"});
}

TEST_F(SafeTensorsTest, HeaderLengthPastTheEndOfTheFile) {
  std::string bytes = safetensors_bytes("{}", "");
  bytes[0] = char(200);  // claims a 200-byte header in a 10-byte file
  expect_rejected(bytes, {"header length 200", "past the end of the file (10 bytes)"});
}

TEST_F(SafeTensorsTest, HeaderLengthOver100MB) {
  std::string bytes = safetensors_bytes("{}", "");
  const uint64_t length = 100'000'001;
  std::memcpy(bytes.data(), &length, 8);
  expect_rejected(bytes, {"header length 100000001", "100 MB limit"});
}

TEST_F(SafeTensorsTest, HeaderLengthThatWouldOverflowAnOffset) {
  std::string bytes = safetensors_bytes("{}", "");
  std::memset(bytes.data(), 0xFF, 8);
  expect_rejected(bytes, {"header length 18446744073709551615", "100 MB limit"});
}

TEST_F(SafeTensorsTest, HeaderNotJson) {
  expect_rejected(safetensors_bytes("{\"w\": [1, 2", ""), {"header is not valid JSON"});
}

TEST_F(SafeTensorsTest, HeaderWithAnUnterminatedStringGivesAShortMessage) {
  write(safetensors_bytes("{\"" + std::string(100'000, 'x'), ""));
  try {
    SafeTensors file(path_);
    ADD_FAILURE() << "opened without error";
  } catch (const Error& e) {
    expect_message(e.what(), {"header is not valid JSON", "parse error at line 1"});
    EXPECT_LT(std::string(e.what()).size(), 400u) << e.what();
  }
}

TEST_F(SafeTensorsTest, HeaderNotAnObject) {
  expect_rejected(safetensors_bytes("[1, 2, 3]", ""), {"header is not a JSON object"});
}

TEST_F(SafeTensorsTest, EntryWithoutDataOffsets) {
  const json header = {{"w", {{"dtype", "F32"}, {"shape", {1}}}}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1})),
                  {"tensor 'w'", "dtype, shape and data_offsets"});
}

TEST_F(SafeTensorsTest, UnknownDtype) {
  const json header = {{"w", entry("F17", {1}, 0, 4)}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1})),
                  {"tensor 'w'", "unknown dtype 'F17'"});
}

TEST_F(SafeTensorsTest, DataSectionShorterThanOffsetsClaim) {
  const json header = {{"w", entry("F32", {4}, 0, 16)}};
  expect_rejected(
      safetensors_bytes(header.dump(), float_bytes({1, 2})),
      {"tensor 'w'", "data_offsets [0, 16] run past the end of the data section (8 bytes"});
}

TEST_F(SafeTensorsTest, OffsetsReversed) {
  const json header = {{"w", entry("F32", {2}, 8, 0)}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1, 2})),
                  {"tensor 'w'", "data_offsets [8, 0] end before they begin"});
}

TEST_F(SafeTensorsTest, NegativeOffset) {
  const json header = {{"w", entry("F32", {2}, -8, 0)}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1, 2})),
                  {"tensor 'w'", "data_offsets must be non-negative integers"});
}

TEST_F(SafeTensorsTest, OffsetsOverlapping) {
  const json header = {{"a", entry("F32", {4}, 0, 16)}, {"b", entry("F32", {4}, 8, 24)}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1, 2, 3, 4, 5, 6})),
                  {"tensors 'a' and 'b' overlap"});
}

TEST_F(SafeTensorsTest, ByteSizeNotShapeTimesDtype) {
  const json header = {{"w", entry("F32", {3}, 0, 16)}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1, 2, 3, 4})),
                  {"tensor 'w'", "cover 16 bytes but shape [3] of F32 needs 12"});
}

TEST_F(SafeTensorsTest, NegativeShape) {
  const json header = {{"w", entry("F32", {-1}, 0, 4)}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1})),
                  {"tensor 'w'", "shape entries must be non-negative integers"});
}

TEST_F(SafeTensorsTest, ShapeWhoseElementCountOverflows) {
  // 2^40 x 2^24 elements x 4 bytes wraps around to 0 bytes in 64 bits, which these offsets claim.
  const json header = {{"w", entry("F32", {int64_t(1) << 40, int64_t(1) << 24}, 0, 0)}};
  expect_rejected(safetensors_bytes(header.dump(), ""),
                  {"tensor 'w'", "shape [1099511627776,16777216] is impossibly large"});
}

TEST_F(SafeTensorsTest, ControlCharactersInNamesCannotBreakTheLine) {
  const json header = {{"two\nlines", entry("F\n32", {1}, 0, 4)}};
  expect_rejected(safetensors_bytes(header.dump(), float_bytes({1})),
                  {"tensor 'two\\x0Alines'", "unknown dtype 'F\\x0A32'"});
}

TEST_F(SafeTensorsTest, WellFormedFileReadsBackExactly) {
  // A 3-byte header puts the data section at an odd address, so F32 goes through the copy path
  // for unaligned data as well as the in-place one.
  for (const std::string padding : {"", "   "}) {
    const json header = {{"__metadata__", {{"format", "pt"}}},
                         {"a", entry("F32", {2, 2}, 0, 16)},
                         {"empty", entry("F32", {0}, 16, 16)},
                         {"b", entry("F32", {1}, 16, 20)}};
    write(safetensors_bytes(header.dump() + padding, float_bytes({1.5f, -2, 3e-8f, 4e30f, 7})));
    SafeTensors file(path_);
    EXPECT_EQ(file.tensors().size(), 3u);
    EXPECT_EQ(file.find("__metadata__"), nullptr);
    const int64_t a_shape[] = {2, 2};
    const float* a = file.floats("a", a_shape);
    EXPECT_EQ(std::vector<float>(a, a + 4), (std::vector<float>{1.5f, -2, 3e-8f, 4e30f}));
    const int64_t b_shape[] = {1};
    EXPECT_EQ(*file.floats("b", b_shape), 7);
  }
}

TEST_F(SafeTensorsTest, ShapeDisagreeingWithTheExpectedOne) {
  const json header = {{"w", entry("F32", {4}, 0, 16)}};
  write(safetensors_bytes(header.dump(), float_bytes({1, 2, 3, 4})));
  SafeTensors file(path_);
  const int64_t expected[] = {2, 2};
  try {
    file.floats("w", expected);
    ADD_FAILURE() << "accepted shape [4] as [2, 2]";
  } catch (const Error& e) {
    expect_message(e.what(), {"tensor 'w' has shape [4] but config.json implies [2, 2]"});
  }
}

TEST_F(SafeTensorsTest, MissingTensor) {
  write(safetensors_bytes(json::object().dump(), ""));
  SafeTensors file(path_);
  const int64_t shape[] = {1};
  try {
    file.floats("w", shape);
    ADD_FAILURE() << "returned a tensor that is not there";
  } catch (const Error& e) {
    expect_message(e.what(), {"missing tensor 'w'"});
  }
}

TEST_F(SafeTensorsTest, IntegerDtypeIsNotAWeight) {
  const json header = {{"w", entry("I64", {2}, 0, 16)}};
  write(safetensors_bytes(header.dump(), std::string(16, '\1')));
  SafeTensors file(path_);
  const int64_t shape[] = {2};
  try {
    file.floats("w", shape);
    ADD_FAILURE() << "returned I64 data as floats";
  } catch (const Error& e) {
    expect_message(e.what(), {"tensor 'w' has dtype I64", "must be F32, F16 or BF16"});
  }
}

TEST_F(SafeTensorsTest, F16DecodesEveryKindOfValue) {
  // 1, -2, largest normal, smallest normal, largest subnormal, smallest subnormal, -0, 1/3
  // rounded, +inf, -inf, NaN.
  const std::vector<float> want = {1.0f,
                                   -2.0f,
                                   65504.0f,
                                   std::ldexp(1.0f, -14),
                                   1023 * std::ldexp(1.0f, -24),
                                   std::ldexp(1.0f, -24),
                                   -0.0f,
                                   0.333251953125f,
                                   INFINITY,
                                   -INFINITY};
  const std::string bytes = u16_bytes(
      {0x3C00, 0xC000, 0x7BFF, 0x0400, 0x03FF, 0x0001, 0x8000, 0x3555, 0x7C00, 0xFC00, 0x7E00});
  const json header = {{"h", entry("F16", {11}, 0, 22)}};
  write(safetensors_bytes(header.dump(), bytes));
  SafeTensors file(path_);
  const int64_t shape[] = {11};
  const float* values = file.floats("h", shape);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(values[i]), std::bit_cast<uint32_t>(want[i]))
        << "element " << i << ": got " << values[i] << ", want " << want[i];
  }
  EXPECT_TRUE(std::isnan(values[10]));
}

TEST_F(SafeTensorsTest, BF16DecodesEveryKindOfValue) {
  // 1, -2, pi rounded, the largest finite, the smallest subnormal, +inf.
  const std::vector<float> want = {
      1.0f, -2.0f, 3.140625f, 3.3895313892515355e38f, std::ldexp(1.0f, -133), INFINITY};
  const std::string bytes = u16_bytes({0x3F80, 0xC000, 0x4049, 0x7F7F, 0x0001, 0x7F80});
  const json header = {{"b", entry("BF16", {2, 3}, 0, 12)}};
  write(safetensors_bytes(header.dump(), bytes));
  SafeTensors file(path_);
  const int64_t shape[] = {2, 3};
  const float* values = file.floats("b", shape);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(values[i]), std::bit_cast<uint32_t>(want[i]))
        << "element " << i << ": got " << values[i] << ", want " << want[i];
  }
}

// ---- The tiny GPT-2 in half precision ----

// Rounds to nearest, ties to even: the processor's own conversion (F16C, which every machine
// with AVX2 has), not the code under test.
uint16_t to_f16(float value) { return _cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT); }

uint16_t to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return uint16_t((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);  // weights are finite
}

// A copy of the shipped tiny GPT-2 with every weight stored as `dtype` (F16 or BF16).
std::filesystem::path convert_tiny_gpt2(const TempDir& dir, const std::string& dtype) {
  const auto source = shipped_model("tiny-gpt2-brown");
  const auto target = dir / dtype;
  std::filesystem::copy(source, target);
  std::vector<RawTensor> tensors = read_safetensors(source / "model.safetensors");
  for (auto& tensor : tensors) {
    if (tensor.dtype != "F32") throw std::runtime_error(tensor.name + " is not F32");
    const std::size_t count = tensor.bytes.size() / 4;
    std::string converted(count * 2, '\0');
    for (std::size_t i = 0; i < count; ++i) {
      float value;
      std::memcpy(&value, tensor.bytes.data() + 4 * i, 4);
      const uint16_t half = dtype == "F16" ? to_f16(value) : to_bf16(value);
      std::memcpy(converted.data() + 2 * i, &half, 2);
    }
    tensor.dtype = dtype;
    tensor.bytes = std::move(converted);
  }
  write_safetensors(target / "model.safetensors", tensors);
  return target;
}

std::vector<int> greedy(const Model& model, std::span<const int> prompt_ids) {
  GenerateOptions options;
  options.max_new_tokens = 20;
  options.sampling.temperature = 0;
  options.ignore_eos = true;
  return generate(model, prompt_ids, options).generated_ids;
}

// Rounding each weight to within a unit roundoff u (F16: 2^-11, BF16: 2^-8) moves each logit by
// a sum of many such relative errors of mixed sign, which mostly cancel: measured on these
// prompts, the largest change is 1.1 to 1.7 u times the largest |logit| (F16 about 0.005, BF16
// about 0.04, against logits up to about 8.5). Allowing 4 u leaves room for other prompts and
// machines, while a wrongly decoded weight (a bit off in the exponent or the mantissa) moves logits
// by far more.
void expect_close_to_f32(const std::string& dtype, double unit_roundoff) {
  const TempDir dir;
  const FolderSnapshot shipped_before = snapshot(shipped_model("tiny-gpt2-brown"));
  auto reference = load_model(shipped_model("tiny-gpt2-brown"));
  auto half = load_model(convert_tiny_gpt2(dir, dtype));
  EXPECT_EQ(half->weights->files()[0]->tensors().begin()->second.dtype, dtype);
  for (const char* prompt : {"The jury said that the", "He was", "It is a"}) {
    const std::vector<int> ids = reference->tokenizer->encode(prompt).ids;
    const std::vector<float> want = last_logits(*reference, ids);
    const std::vector<float> got = last_logits(*half, ids);
    double largest = 0;
    for (float logit : want) largest = std::max(largest, double(std::abs(logit)));
    const Comparison c = compare(got, want, 4 * unit_roundoff * largest, 0);
    EXPECT_LE(c.worst_ratio, 1.0) << dtype << ", \"" << prompt << "\": logit " << c.worst_index
                                  << " is " << got[c.worst_index] << ", F32 " << want[c.worst_index]
                                  << " (largest |logit| " << largest << ")";
    std::cout << dtype << " \"" << prompt << "\": worst |logit - F32| " << c.worst_abs << " = "
              << c.worst_abs / (unit_roundoff * largest) << " u x largest |logit|\n";
    EXPECT_EQ(greedy(*half, ids), greedy(*reference, ids)) << dtype << ", \"" << prompt << "\"";
  }
  EXPECT_EQ(changed_files(shipped_before, snapshot(shipped_model("tiny-gpt2-brown"))),
            std::vector<std::string>());
}

TEST(HalfPrecisionWeights, F16TinyGpt2MatchesF32) {
  expect_close_to_f32("F16", std::ldexp(1, -11));
}

TEST(HalfPrecisionWeights, BF16TinyGpt2MatchesF32) {
  expect_close_to_f32("BF16", std::ldexp(1, -8));
}

}  // namespace
}  // namespace attn::test
