#pragma once

// A SentencePiece model file (tokenizer.model, spiece.model, sentencepiece.bpe.model, Marian's
// source.spm and target.spm): its ModelProto as transformers' converters read it, checked as
// libsentencepiece checks a model when the slow classes load it.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace attn {

// ModelProto.SentencePiece.Type.
enum class SentencePieceType : std::uint8_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SentencePieceEntry {
  std::string piece;
  float score = 0;
  SentencePieceType type = SentencePieceType::kNormal;
};

// What transformers' converters (convert_slow_tokenizer.py) read of a model file's ModelProto:
// the pieces (field 1), TrainerSpec (2: model_type 3, unk_id 40, unk_surface 44, unk_piece 45)
// and NormalizerSpec (3: precompiled_charsmap 2, add_dummy_prefix 3, remove_extra_whitespaces 4).
struct SentencePieceProto {
  std::vector<SentencePieceEntry> pieces;
  int model_type = 1;  // 1 UNIGRAM, 2 BPE (3 WORD and 4 CHAR are refused)
  int unk_id = 0;
  std::string unk_piece = "<unk>";
  std::string unk_surface = " \xE2\x81\x87 ";  // what decoding writes for unk_piece (" ⁇ ")
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
};

// Reads `path`'s ModelProto. Errors name the file: "<path>: not a SentencePiece model (...)" for
// an empty file, one that is not a protocol buffer, one cut short before its settings, and
// pieces libsentencepiece (0.1.97) refuses (empty, given twice, no unknown piece or two, a
// byte piece without byte_fallback or not of the form <0xNN>, byte_fallback without all 256);
// pieces that are not UTF-8 (the pipeline's vocabulary is text), the settings attn does not
// implement (treat_whitespace_as_suffix, a denormalizer) and model types transformers does not
// convert (WORD, CHAR) are refused too.
SentencePieceProto read_sentencepiece_proto(const std::filesystem::path& path);

}  // namespace attn
