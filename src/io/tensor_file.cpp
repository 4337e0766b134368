#include "src/io/tensor_file.h"

#include <algorithm>

#include "src/base/error.h"

namespace attn {

std::size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + "]";
}

const TensorInfo* TensorFile::find(const std::string& name) const {
  auto it = tensors().find(name);
  return it == tensors().end() ? nullptr : &it->second;
}

const TensorInfo& check_weight(const TensorFile& file, const std::string& name,
                               std::span<const int64_t> expected_shape) {
  const TensorInfo* tensor = file.find(name);
  const std::string where = file.path().string();
  if (!tensor) throw Error(where + ": missing tensor '" + name + "'");
  if (!std::equal(tensor->shape.begin(), tensor->shape.end(), expected_shape.begin(),
                  expected_shape.end())) {
    throw Error(where + ": tensor '" + name + "' has shape " + shape_string(tensor->shape) +
                " but config.json implies " + shape_string(expected_shape));
  }
  if (tensor->dtype != "F32" && tensor->dtype != "F16" && tensor->dtype != "BF16") {
    throw Error(where + ": tensor '" + name + "' has dtype " + tensor->dtype +
                "; weights must be F32, F16 or BF16");
  }
  return *tensor;
}

}  // namespace attn
