#include "src/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "src/base/error.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

constexpr std::size_t kMaxHeaderBytes = 100'000'000;
// More elements than any real tensor has (4 TB of F32), and small enough that shape x dtype
// size cannot overflow 64 bits.
constexpr uint64_t kMaxElements = 1ULL << 40;

// Bytes per element of every dtype the safetensors format defines; others are rejected.
std::size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

float half_to_float(uint16_t half) {
  uint32_t sign = (half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1F;
  uint32_t mantissa = half & 0x3FF;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // inf or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal half: renormalize
    exponent = 113;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3FF) << 13);
  }
  return std::bit_cast<float>(bits);
}

float bfloat16_to_float(uint16_t value) { return std::bit_cast<float>(uint32_t(value) << 16); }

// The optional "__metadata__" entry maps names to strings ({"format": "pt"}); attn does not use
// it, but a file whose header breaks the format is refused, as the safetensors library does.
void check_metadata(const nlohmann::json& metadata, const std::string& file) {
  const bool all_strings =
      metadata.is_object() && std::all_of(metadata.begin(), metadata.end(),
                                          [](const nlohmann::json& v) { return v.is_string(); });
  if (!all_strings) {
    throw Error(file + ": header: __metadata__ must map names to strings, got " +
                brief_json(metadata));
  }
}

}  // namespace

std::string shape_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + "]";
}

SafeTensors::SafeTensors(const std::filesystem::path& path) : path_(path) {
  const std::string file = path.string();
  // Without O_NONBLOCK, opening a FIFO that has no writer would wait forever.
  int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(file + ": cannot open file (" + std::strerror(errno) + ")");
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const bool is_folder = S_ISDIR(info.st_mode);
    ::close(fd);
    throw Error(file + (is_folder ? ": is a folder, not a file" : ": not a regular file"));
  }
  mapping_size_ = static_cast<std::size_t>(info.st_size);
  if (mapping_size_ < 8) {
    ::close(fd);
    throw Error(file + ": truncated: " + std::to_string(mapping_size_) +
                " bytes, too short for a safetensors header");
  }
  void* mapping = ::mmap(nullptr, mapping_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) throw Error(file + ": cannot memory-map file");
  mapping_ = static_cast<const std::byte*>(mapping);

  // From here on the destructor does not run if we throw, so unmap on failure by hand.
  try {
    uint64_t header_size = 0;
    std::memcpy(&header_size, mapping_, 8);  // little-endian u64, as on every machine we run on
    if (header_size > kMaxHeaderBytes) {
      throw Error(file + ": header length " + std::to_string(header_size) +
                  " is larger than the 100 MB limit");
    }
    if (header_size > mapping_size_ - 8) {
      throw Error(file + ": header length " + std::to_string(header_size) +
                  " runs past the end of the file (" + std::to_string(mapping_size_) + " bytes)");
    }
    data_ = mapping_ + 8 + header_size;
    const std::size_t data_size = mapping_size_ - 8 - header_size;

    // A repeated tensor name would otherwise silently replace the first entry.
    std::set<std::string> names;
    const auto reject_repeated_names = [&](int depth, nlohmann::json::parse_event_t event,
                                           nlohmann::json& parsed) {
      if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
          !names.insert(parsed.get<std::string>()).second) {
        throw Error(file + ": tensor '" + brief_text(parsed.get<std::string>()) +
                    "' appears twice in the header");
      }
      return true;
    };
    const nlohmann::json header =
        parse_json(std::string_view(reinterpret_cast<const char*>(mapping_ + 8), header_size), file,
                   "header", reject_repeated_names);
    if (!header.is_object()) throw Error(file + ": header is not a JSON object");

    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        check_metadata(entry, file);
        continue;
      }
      const std::string where = file + ": tensor '" + brief_text(name) + "'";
      const auto field = [&](const char* key) {
        const auto it = entry.is_object() ? entry.find(key) : entry.end();
        return it == entry.end() ? nullptr : &*it;
      };
      const nlohmann::json* dtype = field("dtype");
      const nlohmann::json* shape = field("shape");
      const nlohmann::json* data_offsets = field("data_offsets");
      if (!dtype || !dtype->is_string() || !shape || !shape->is_array() || !data_offsets ||
          !data_offsets->is_array() || data_offsets->size() != 2) {
        throw Error(where + ": entry must have dtype, shape and data_offsets [begin, end]");
      }
      TensorInfo tensor;
      tensor.dtype = dtype->get<std::string>();
      const std::size_t element_size = dtype_size(tensor.dtype);
      if (element_size == 0) {
        throw Error(where + ": unknown dtype '" + brief_text(tensor.dtype) + "'");
      }
      uint64_t elements = 1;
      for (const auto& dim : *shape) {
        if (!dim.is_number_unsigned()) {
          throw Error(where + ": shape entries must be non-negative integers, got " +
                      brief_json(*shape));
        }
        const auto size = dim.get<uint64_t>();
        // Checked before multiplying: the product of two large sizes can wrap around to 0.
        if (size != 0 && elements > kMaxElements / size) {
          throw Error(where + ": shape " + brief_json(*shape) + " is impossibly large");
        }
        tensor.shape.push_back(static_cast<int64_t>(size));
        elements *= size;
      }
      for (const auto& offset : *data_offsets) {
        if (!offset.is_number_unsigned()) {
          throw Error(where + ": data_offsets must be non-negative integers, got " +
                      brief_json(*data_offsets));
        }
      }
      const auto begin = (*data_offsets)[0].get<uint64_t>();
      const auto end = (*data_offsets)[1].get<uint64_t>();
      const std::string offsets =
          "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
      if (begin > end) throw Error(where + ": " + offsets + " end before they begin");
      if (end > data_size) {
        throw Error(where + ": " + offsets + " run past the end of the data section (" +
                    std::to_string(data_size) + " bytes; is the file truncated?)");
      }
      if (end - begin != elements * element_size) {
        throw Error(where + ": " + offsets + " cover " + std::to_string(end - begin) +
                    " bytes but shape " + shape_string(tensor.shape) + " of " + tensor.dtype +
                    " needs " + std::to_string(elements * element_size));
      }
      tensor.begin = begin;
      tensor.end = end;
      tensors_.emplace(name, std::move(tensor));
    }

    std::vector<std::pair<std::size_t, const std::string*>> ranges;
    for (const auto& [name, tensor] : tensors_) {
      if (tensor.end > tensor.begin) ranges.emplace_back(tensor.begin, &name);
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) {
      const TensorInfo& previous = tensors_.at(*ranges[i - 1].second);
      if (ranges[i].first < previous.end) {
        throw Error(file + ": tensors '" + brief_text(*ranges[i - 1].second) + "' and '" +
                    brief_text(*ranges[i].second) + "' overlap in the data section");
      }
    }
  } catch (...) {
    ::munmap(const_cast<std::byte*>(mapping_), mapping_size_);
    throw;
  }
}

SafeTensors::~SafeTensors() { ::munmap(const_cast<std::byte*>(mapping_), mapping_size_); }

const TensorInfo* SafeTensors::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const float* SafeTensors::floats(const std::string& name, std::span<const int64_t> expected_shape) {
  const TensorInfo* tensor = find(name);
  if (!tensor) throw Error(path_.string() + ": missing tensor '" + name + "'");
  if (!std::equal(tensor->shape.begin(), tensor->shape.end(), expected_shape.begin(),
                  expected_shape.end())) {
    throw Error(path_.string() + ": tensor '" + name + "' has shape " +
                shape_string(tensor->shape) + " but config.json implies " +
                shape_string(expected_shape));
  }
  const std::byte* bytes = data_ + tensor->begin;
  const std::size_t count = (tensor->end - tensor->begin) / dtype_size(tensor->dtype);
  if (tensor->dtype == "F32" && reinterpret_cast<uintptr_t>(bytes) % alignof(float) == 0) {
    return reinterpret_cast<const float*>(bytes);
  }
  std::vector<float>& values = converted_.emplace_back(count);
  if (tensor->dtype == "F32") {
    std::memcpy(values.data(), bytes, count * sizeof(float));
  } else if (tensor->dtype == "F16" || tensor->dtype == "BF16") {
    const bool is_half = tensor->dtype == "F16";
    for (std::size_t i = 0; i < count; ++i) {
      uint16_t raw;
      std::memcpy(&raw, bytes + 2 * i, 2);
      values[i] = is_half ? half_to_float(raw) : bfloat16_to_float(raw);
    }
  } else {
    converted_.pop_back();
    throw Error(path_.string() + ": tensor '" + name + "' has dtype " + tensor->dtype +
                "; weights must be F32, F16 or BF16");
  }
  return values.data();
}

}  // namespace attn
