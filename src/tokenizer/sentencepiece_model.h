#pragma once

// A SentencePiece model file (tokenizer.model, spiece.model, sentencepiece.bpe.model, Marian's
// source.spm and target.spm) loaded with Debian's libsentencepiece, with the settings of the file
// that the library does not expose; and the same file's ModelProto as transformers' converters
// read it.

#include <sentencepiece_processor.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace attn {

struct SentencePieceModel {
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor;
};

// Reads and loads `path`. Errors name the file: "<path>: not a SentencePiece model (...)" for a
// file the library refuses, one cut short before its settings, or an empty one; the settings
// attn does not implement (treat_whitespace_as_suffix, a denormalizer) are refused too.
SentencePieceModel read_sentencepiece_model(const std::filesystem::path& path);

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

// Reads `path` as the slow class does (libsentencepiece must load it, with the checks of
// read_sentencepiece_model), then its ModelProto as the converters read it. Errors name the file.
SentencePieceProto read_sentencepiece_proto(const std::filesystem::path& path);

}  // namespace attn
