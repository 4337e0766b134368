#include "src/tokenizer/tokenizer.h"

#include "src/base/error.h"
#include "src/tokenizer/bpe.h"
#include "src/tokenizer/wordpiece.h"

namespace attn {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir,
                                          std::string_view family) {
  if (family == "gpt2") return load_bpe_tokenizer(model_dir);
  if (family == "bert") return load_wordpiece_tokenizer(model_dir);
  throw Error(model_dir.string() + ": no tokenizer for family '" + std::string(family) + "'");
}

}  // namespace attn
