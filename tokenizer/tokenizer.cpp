#include "tokenizer/tokenizer.h"

#include "src/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/wordpiece.h"

namespace attn {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir,
                                          std::string_view family) {
  if (family == "gpt2") return load_bpe_tokenizer(model_dir);
  if (family == "bert") return load_wordpiece_tokenizer(model_dir);
  throw Error(model_dir.string() + ": no tokenizer for family '" + std::string(family) + "'");
}

}  // namespace attn
