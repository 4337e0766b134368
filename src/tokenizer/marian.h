#pragma once

#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace attn {

// The file that marks a Marian folder: the SentencePiece model of the source language.
inline constexpr const char* kMarianSourceModel = "source.spm";

// Loads a Marian folder as transformers 4.40's MarianTokenizer reads it, converted into the
// tokenizer.json pipeline (marian.cpp): two SentencePiece models, source.spm (the text to
// translate) and target.spm (translations), and vocab.json, the model's ids of the pieces of both
// ({piece: id}, the ids 0 .. n-1, each once). The folder may declare no class but
// MarianTokenizer (declared_tokenizer_class); one that declares none is read as Marian.
//  - encode(): the added and special tokens written in the text cut out; each stretch of text
//    between them loses its language codes (">>fra<<": the regex ">>.+<<", the one at the very
//    start kept as a token of its own, looked up in vocab.json), then source.spm's pieces, each
//    looked up in vocab.json (<unk> when it is not there); </s> appended: A </s>, a pair
//    A B </s>, token types all 0. Offsets as the pipeline gives them. encode_target() is the
//    same with target.spm.
//  - decode(): the ids' pieces (vocab.json read backwards) decoded as target.spm decodes them,
//    special tokens written as they are and followed by a space, the text stripped, then joined
//    and cleaned up as PreTrainedTokenizer._decode does.
// Settings of tokenizer_config.json: separate_vocabs: true (a target_vocab.json of its own) and
// sp_model_kwargs are refused; clean_up_tokenization_spaces and spaces_between_special_tokens
// (both true by default) are honoured.
// Errors name the file and the problem: a missing target.spm, a vocab.json whose ids are not
// 0 .. n-1 each once, that lacks </s>, <unk> or <pad>, or that holds fewer than half the pieces
// of either model (the vocabulary of another model).
std::unique_ptr<Tokenizer> load_marian_tokenizer(const std::filesystem::path& model_dir);

}  // namespace attn
