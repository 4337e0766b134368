// Reduced precisions (--dtype f16, bf16, q8) against f32: the next-token distribution along the
// golden greedy trajectories (teacher-forced), fill-mask's top candidate, and an F16 file
// against the same weights converted from F32 at load.
//
// The f32 reference is attn's own f32 run, which the family tests hold to Hugging Face's logits
// (tolerance::kLogitAbsolute, kLogitRelative); top-1 agreement is counted against the golden's
// own greedy tokens.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "src/kernels/gemm.h"
#include "src/kernels/weight_conversion.h"
#include "src/tasks/fill_mask.h"
#include "tests/decoder_checks.h"
#include "tests/encoder_checks.h"
#include "tests/safetensors_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

// Bounds on the mean KL divergence KL(f32 || reduced) of the next-token distribution, and on the
// fraction of steps whose argmax is the golden's greedy token: tests/tolerances.h gives their
// sources.
struct PrecisionBound {
  WeightType dtype;
  double max_mean_kl;
  double min_top1_agreement;
};

constexpr PrecisionBound kBounds[] = {
    {WeightType::kF16, tolerance::kHalfPrecisionMeanKl, tolerance::kHalfPrecisionTop1},
    {WeightType::kBF16, tolerance::kHalfPrecisionMeanKl, tolerance::kHalfPrecisionTop1},
    {WeightType::kQ8_0, tolerance::kQ8MeanKl, tolerance::kQ8Top1},
    {WeightType::kQ4_0, tolerance::kQ4MeanKl, tolerance::kQ4Top1}};

// log(sum(exp(logits))) of one row, in double.
double log_sum_exp(std::span<const float> logits) {
  double max = -INFINITY;
  for (float logit : logits) max = std::max(max, double(logit));
  double sum = 0;
  for (float logit : logits) sum += std::exp(logit - max);
  return max + std::log(sum);
}

// KL(p || q) of the two rows' softmax distributions, from their log-probabilities
// (logit - log_sum_exp), in double.
double kl_divergence(std::span<const float> reference, std::span<const float> other) {
  const double p_log_sum = log_sum_exp(reference), q_log_sum = log_sum_exp(other);
  double kl = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double log_p = reference[i] - p_log_sum, log_q = other[i] - q_log_sum;
    kl += std::exp(log_p) * (log_p - log_q);
  }
  return kl;
}

// Every reduced precision of kBounds against f32, each trajectory's f32 logits computed once.
void expect_close_to_f32(const std::filesystem::path& dir, const GoldenSet& golden) {
  const auto f32 = load_model(dir);
  const auto trajectories = golden.jsonl("generate.jsonl");
  struct Tally {
    std::unique_ptr<Model> model;
    double kl_sum = 0;
    int steps = 0, agreeing = 0;
  };
  std::vector<Tally> tallies;
  for (const PrecisionBound& bound : kBounds) tallies.push_back({load_model(dir, bound.dtype)});
  for (const nlohmann::json& line : trajectories) {
    const auto prompt = line["prompt_ids"].get<std::vector<int>>();
    const auto greedy = line["generated_ids"].get<std::vector<int>>();
    const auto reference = forced_step_logits(*f32, prompt, greedy);
    for (Tally& tally : tallies) {
      const auto ours = forced_step_logits(*tally.model, prompt, greedy);
      for (std::size_t s = 0; s < greedy.size(); ++s) {
        tally.kl_sum += kl_divergence(reference[s], ours[s]);
        tally.agreeing += top_ids(ours[s], 1)[0] == greedy[s];
        ++tally.steps;
      }
    }
  }
  for (std::size_t b = 0; b < std::size(kBounds); ++b) {
    const PrecisionBound& bound = kBounds[b];
    const Tally& tally = tallies[b];
    const double mean_kl = tally.kl_sum / tally.steps;
    const double agreement = double(tally.agreeing) / tally.steps;
    std::printf("%s --dtype %s: mean KL %.3g, top-1 %d/%d (%.2f%%) over the golden trajectories\n",
                dir.filename().c_str(), weight_type_name(bound.dtype), mean_kl, tally.agreeing,
                tally.steps, 100 * agreement);
    EXPECT_LE(mean_kl, bound.max_mean_kl) << weight_type_name(bound.dtype);
    EXPECT_GE(agreement, bound.min_top1_agreement) << weight_type_name(bound.dtype);
  }
}

TEST(Precision, TinyGpt2AlongGoldenTrajectories) {
  ATTN_REQUIRE_SHARED();
  expect_close_to_f32(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(Precision, TinyLlamaAlongGoldenTrajectories) {
  ATTN_REQUIRE_SHARED();
  expect_close_to_f32(shared_dir() / "models/tiny-llama-brown", GoldenSet("tiny-llama-brown"));
}

TEST(Precision, FullSizeGpt2AlongGoldenTrajectories) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("gpt2");
  if (dir.empty())
    ATTN_SKIP_UNLESS_CI("full-size random GPT-2 not generated (python3-numpy missing?)");
  expect_close_to_f32(dir, GoldenSet("gpt2-124M-random"));
}

// How many of the golden masks' top candidates (f32's) the model loaded as `dtype` also puts
// first, out of how many masks.
struct MaskAgreement {
  int agreeing = 0;
  int masks = 0;
};

MaskAgreement fill_mask_top1_agreement(const std::filesystem::path& dir, const GoldenSet& golden,
                                       WeightType dtype) {
  const auto model = load_model(dir, dtype);
  MaskAgreement count;
  for (const nlohmann::json& sentence : golden.jsonl("fill_mask.jsonl")) {
    const MaskedInput input = encode_masked_input(*model, sentence["text"].get<std::string>());
    const auto predictions = fill_mask(*model, std::span(&input, 1), {.top_k = 1})[0];
    EXPECT_EQ(predictions.size(), sentence["masks"].size()) << golden.dir() / "fill_mask.jsonl";
    for (std::size_t m = 0; m < predictions.size() && m < sentence["masks"].size(); ++m) {
      count.agreeing += predictions[m].candidates[0].token_id ==
                        sentence["masks"][m]["top"][0]["token_id"].get<int>();
      ++count.masks;
    }
  }
  std::printf("%s --dtype %s: top-1 identical on %d of %d masks\n", dir.filename().c_str(),
              weight_type_name(dtype), count.agreeing, count.masks);
  return count;
}

// q8 with the bound: f32's top candidate on at least 95% of its 58 masks, the trained
// tiny BERT's 44 and the random BERT-base's 14 counted together, and on 95% of the trained
// model's alone. Not 95% of the random model's 14 alone (14 of 14): three of its masks' f32
// leads are 0.069 to 0.080 in logits, below how far q8_0 weights move a gap between two logits
// of this model (root mean square 0.10 over its top-10 candidates with f32 activations, 0.13
// with activations in int8 blocks, on every kernel set), so whether those three keep their
// order is chance: q8_0 weights with f32 activations keep 13 of 14, int8 products 14 on AVX2
// and AVX-512 and 12 on the scalar kernels (measured with attn fill-mask --json -k 10).
TEST(Precision, Q8FillMaskTopCandidate) {
  ATTN_REQUIRE_SHARED();
  const MaskAgreement trained = fill_mask_top1_agreement(
      shipped_model("tiny-bert-brown"), GoldenSet("tiny-bert-brown"), WeightType::kQ8_0);
  EXPECT_GE(trained.agreeing, 0.95 * trained.masks);
  const auto bert_base = random_model("bert");
  if (bert_base.empty())
    ATTN_SKIP_UNLESS_CI("full-size random BERT not generated (python3-numpy missing?)");
  const MaskAgreement random =
      fill_mask_top1_agreement(bert_base, GoldenSet("bert-base-random"), WeightType::kQ8_0);
  EXPECT_GE(trained.agreeing + random.agreeing, 0.95 * (trained.masks + random.masks));
}

// q4 on the trained tiny BERT (40 of its 44 masks when measured). Not on the random BERT-base:
// its candidates' probabilities lie so close together that 4-bit weights reorder the top one on
// about half of the masks (6 of 14 kept), which says nothing about trained models.
TEST(Precision, Q4FillMaskTopCandidate) {
  ATTN_REQUIRE_SHARED();
  const MaskAgreement trained = fill_mask_top1_agreement(
      shipped_model("tiny-bert-brown"), GoldenSet("tiny-bert-brown"), WeightType::kQ4_0);
  EXPECT_GE(trained.agreeing, 0.85 * trained.masks);
}

// A copy of the model folder `dir` whose F32 tensors are stored as `type` (F16 or BF16).
void write_half_precision_copy(const std::filesystem::path& dir, WeightType type,
                               const std::filesystem::path& copy) {
  std::filesystem::copy(dir, copy);
  std::vector<RawTensor> tensors = read_safetensors(dir / "model.safetensors");
  for (RawTensor& tensor : tensors) {
    const long n = long(tensor.bytes.size() / sizeof(float));
    std::vector<float> values(n);
    std::memcpy(values.data(), tensor.bytes.data(), tensor.bytes.size());
    tensor.bytes.assign(storage_bytes(type, n), '\0');
    convert_row(type, values.data(), tensor.bytes.data(), n);
    tensor.dtype = type == WeightType::kF16 ? "F16" : "BF16";
  }
  std::filesystem::remove(copy / "model.safetensors");
  write_safetensors(copy / "model.safetensors", tensors);
}

TEST(Precision, HalfPrecisionFileEqualsConversionAtLoad) {
  ATTN_REQUIRE_SHARED();
  for (const auto& dir :
       {shipped_model("tiny-gpt2-brown"), shared_dir() / "models/tiny-llama-brown"}) {
    const auto f32 = load_model(dir);
    const std::vector<int> ids = f32->tokenizer->encode("The jury said it did find that").ids;
    for (WeightType type : {WeightType::kF16, WeightType::kBF16}) {
      TempDir temp;
      write_half_precision_copy(dir, type, temp / "model");
      const auto stored = load_model(temp / "model");
      const auto converted = load_model(dir, type);
      EXPECT_EQ(stored->compute_dtype(), weight_type_name(type));
      if (type == WeightType::kBF16 && gemm_kernels().bf16) {
        // --dtype bf16 asks for bf16 products (vdpbf16ps, the prompt's rows rounded to bf16),
        // a bf16 file for Hugging Face's bf16 weights times f32 activations: they differ here.
        // (ModelGoldensOn.avx2 runs this test without bf16 products, where they are equal.)
        EXPECT_NE(last_logits(*stored, ids), last_logits(*converted, ids)) << dir.filename();
      } else {
        EXPECT_EQ(last_logits(*stored, ids), last_logits(*converted, ids))
            << dir.filename() << " " << weight_type_name(type);
      }
      EXPECT_NE(last_logits(*f32, ids), last_logits(*converted, ids))
          << "rounding to " << weight_type_name(type) << " changed nothing";
    }
  }
}

}  // namespace
}  // namespace attn::test
