#pragma once

// A SentencePiece model file (tokenizer.model, spiece.model, sentencepiece.bpe.model) loaded
// with Debian's libsentencepiece, with the settings of the file that the library does not expose.

#include <sentencepiece_processor.h>

#include <filesystem>
#include <memory>
#include <string>

namespace attn {

struct SentencePieceModel {
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor;
  // The same model with its dummy prefix turned off, when the tokenizer needs it
  // (LlamaTokenizer's legacy: false; read_model_without_dummy_prefix); null otherwise.
  std::unique_ptr<sentencepiece::SentencePieceProcessor> without_dummy_prefix;
  // NormalizerSpec: a space is put before the text; runs of spaces are collapsed.
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  // TrainerSpec.unk_surface: what an unknown piece decodes to (" ⁇ " by default).
  std::string unknown_surface;
};

// Reads and loads `path`. Errors name the file: "<path>: not a SentencePiece model (...)" for a
// file the library refuses, one cut short before its settings, or an empty one; the settings
// attn does not implement (treat_whitespace_as_suffix, a denormalizer) are refused too.
SentencePieceModel read_sentencepiece_model(const std::filesystem::path& path);

// The model of `path`, read before by read_sentencepiece_model, with its dummy prefix off.
std::unique_ptr<sentencepiece::SentencePieceProcessor> read_model_without_dummy_prefix(
    const std::filesystem::path& path);

}  // namespace attn
