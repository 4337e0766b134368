#include "src/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "src/base/error.h"
#include "src/base/half_float.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

constexpr std::size_t kMaxHeaderBytes = 100'000'000;
// More elements than any real tensor has (4 TB of F32), and small enough that shape x dtype
// size cannot overflow 64 bits.
constexpr uint64_t kMaxElements = 1ULL << 40;

// Reads the header's entries into TensorInfo as the parser goes, without building the whole
// document: a hostile 100 MB header of tiny entries, or of one huge array, would take gigabytes
// as a JSON value. Every entry is checked against the format and the data section (data_size
// bytes) when its object closes.
//   {"__metadata__": {"format": "pt"},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
class HeaderReader final : public nlohmann::json::json_sax_t {
 public:
  HeaderReader(const std::string& file, std::size_t data_size,
               std::map<std::string, TensorInfo>& tensors)
      : file_(file), data_size_(data_size), tensors_(tensors) {}

  bool start_object(std::size_t) override {
    if (depth_ == 0) return enter();
    if (depth_ == 1) {
      entry_ = {};
      return enter();
    }
    if (depth_ == 2) {
      if (in_metadata_) fail_metadata();
      if (is_entry_field()) fail_entry();
      list_ = List::kIgnored;
    }
    if (depth_ > 2 && list_ != List::kIgnored) fail_list_item();
    return enter();
  }

  bool start_array(std::size_t) override {
    if (depth_ <= 1) return scalar();
    if (depth_ == 2) {
      if (in_metadata_) fail_metadata();
      if (field_ == "dtype") fail_entry();
      list_ = field_ == "shape"          ? List::kShape
              : field_ == "data_offsets" ? List::kOffsets
                                         : List::kIgnored;
      (list_ == List::kShape ? entry_.has_shape : entry_.has_offsets) |= list_ != List::kIgnored;
    }
    if (depth_ > 2 && list_ != List::kIgnored) fail_list_item();
    return enter();
  }

  bool end_object() override {
    --depth_;
    if (depth_ == 1 && !in_metadata_) finish_entry();
    return true;
  }

  bool end_array() override {
    --depth_;
    return true;
  }

  bool key(string_t& key) override {
    if (depth_ == 1) {
      in_metadata_ = key == "__metadata__";
      if (in_metadata_ ? std::exchange(saw_metadata_, true) : tensors_.contains(key)) {
        throw Error(file_ + ": tensor '" + brief_text(key) + "' appears twice in the header");
      }
      name_ = std::move(key);
    } else if (depth_ == 2) {
      field_ = std::move(key);
    }
    return true;
  }

  bool string(string_t& value) override {
    if (depth_ == 2 && !in_metadata_ && field_ == "dtype") {
      entry_.dtype = std::move(value);
      entry_.has_dtype = true;
      return true;
    }
    if (depth_ == 2 && in_metadata_) return true;
    return scalar();
  }

  bool number_unsigned(number_unsigned_t value) override {
    if (depth_ == 3 && list_ == List::kShape) {
      if (entry_.shape.size() == kMaxDimensions) {
        throw Error(where() + ": shape has more than " + std::to_string(kMaxDimensions) +
                    " dimensions");
      }
      entry_.shape.push_back(value);
      return true;
    }
    if (depth_ == 3 && list_ == List::kOffsets) {
      if (entry_.offsets.size() == 2) fail_entry();
      entry_.offsets.push_back(value);
      return true;
    }
    return scalar();
  }

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }

  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::json::exception& error) override {
    throw Error(invalid_json_message(file_, "header", error));  // not reached after check_json
  }

 private:
  // More dimensions than any real tensor has; keeps a hostile shape from filling memory.
  static constexpr std::size_t kMaxDimensions = 64;

  // The entry being read, as the file gives it.
  struct Entry {
    std::string dtype;
    std::vector<uint64_t> shape;
    std::vector<uint64_t> offsets;
    bool has_dtype = false, has_shape = false, has_offsets = false;
  };
  // The array being read inside an entry.
  enum class List { kShape, kOffsets, kIgnored };

  bool enter() {
    ++depth_;
    return true;
  }

  bool is_entry_field() const {
    return field_ == "dtype" || field_ == "shape" || field_ == "data_offsets";
  }

  // Any value other than those the handlers above take: fine in fields attn does not know,
  // an error anywhere else.
  bool scalar() {
    if (depth_ == 0) throw Error(file_ + ": header is not a JSON object");
    if (depth_ == 1) in_metadata_ ? fail_metadata() : fail_entry();
    if (depth_ == 2) {
      if (in_metadata_) fail_metadata();
      if (is_entry_field()) fail_entry();
      return true;
    }
    if (list_ != List::kIgnored) fail_list_item();
    return true;
  }

  std::string where() const { return file_ + ": tensor '" + brief_text(name_) + "'"; }

  [[noreturn]] void fail_entry() const {
    throw Error(where() + ": entry must have dtype, shape and data_offsets [begin, end]");
  }
  [[noreturn]] void fail_metadata() const {
    throw Error(file_ + ": header: __metadata__ must map names to strings");
  }
  [[noreturn]] void fail_list_item() const {
    throw Error(where() + (list_ == List::kShape ? ": shape entries" : ": data_offsets") +
                " must be non-negative integers");
  }

  void finish_entry() {
    if (!entry_.has_dtype || !entry_.has_shape || !entry_.has_offsets ||
        entry_.offsets.size() != 2) {
      fail_entry();
    }
    TensorInfo tensor;
    tensor.dtype = std::move(entry_.dtype);
    const std::size_t element_size = dtype_size(tensor.dtype);
    if (element_size == 0) {
      throw Error(where() + ": unknown dtype '" + brief_text(tensor.dtype) + "'");
    }
    uint64_t elements = 1;
    for (const uint64_t size : entry_.shape) {
      // Checked before multiplying: the product of two large sizes can wrap around to 0.
      if (size != 0 && elements > kMaxElements / size) {
        throw Error(where() + ": shape " + nlohmann::json(entry_.shape).dump() +
                    " is impossibly large");
      }
      tensor.shape.push_back(static_cast<int64_t>(size));
      elements *= size;
    }
    const uint64_t begin = entry_.offsets[0];
    const uint64_t end = entry_.offsets[1];
    const std::string offsets =
        "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
    if (begin > end) throw Error(where() + ": " + offsets + " end before they begin");
    if (end > data_size_) {
      throw Error(where() + ": " + offsets + " run past the end of the data section (" +
                  std::to_string(data_size_) + " bytes; is the file truncated?)");
    }
    if (end - begin != elements * element_size) {
      throw Error(where() + ": " + offsets + " cover " + std::to_string(end - begin) +
                  " bytes but shape " + shape_string(tensor.shape) + " of " + tensor.dtype +
                  " needs " + std::to_string(elements * element_size));
    }
    tensor.begin = begin;
    tensor.end = end;
    tensors_.emplace(std::move(name_), std::move(tensor));
  }

  const std::string& file_;
  const std::size_t data_size_;
  std::map<std::string, TensorInfo>& tensors_;
  int depth_ = 0;             // objects and arrays open around the parser
  bool in_metadata_ = false;  // inside the value of "__metadata__"
  bool saw_metadata_ = false;
  std::string name_;   // the current top-level key
  std::string field_;  // the current key inside an entry
  List list_ = List::kIgnored;
  Entry entry_;
};

}  // namespace

SafeTensors::SafeTensors(const std::filesystem::path& path) : mapping_(path) {
  const std::string file = path.string();
  const std::span<const std::byte> bytes = mapping_.bytes();
  if (bytes.size() < 8) {
    throw Error(file + ": truncated: " + std::to_string(bytes.size()) +
                " bytes, too short for a safetensors header");
  }
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);  // little-endian u64, as on every machine we run on
  if (header_size > kMaxHeaderBytes) {
    throw Error(file + ": header length " + std::to_string(header_size) +
                " is larger than the 100 MB limit");
  }
  if (header_size > bytes.size() - 8) {
    throw Error(file + ": header length " + std::to_string(header_size) +
                " runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
  }
  data_ = bytes.data() + 8 + header_size;
  const std::size_t data_size = bytes.size() - 8 - header_size;

  const std::string_view header_text(reinterpret_cast<const char*>(bytes.data() + 8), header_size);
  // Syntax first, so that broken JSON is reported as such rather than as whatever entry the
  // reader below was in when the text broke off.
  check_json(header_text, file, "header");
  HeaderReader reader(file, data_size, tensors_);
  nlohmann::json::sax_parse(header_text, &reader);

  std::vector<std::pair<std::size_t, const std::string*>> ranges;
  for (const auto& [name, tensor] : tensors_) {
    if (tensor.end > tensor.begin) ranges.emplace_back(tensor.begin, &name);
  }
  // By start, then by name: the names' addresses would make the message depend on the heap.
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const TensorInfo& previous = tensors_.at(*ranges[i - 1].second);
    if (ranges[i].first < previous.end) {
      throw Error(file + ": tensors '" + brief_text(*ranges[i - 1].second) + "' and '" +
                  brief_text(*ranges[i].second) + "' overlap in the data section");
    }
  }
}

TensorElements SafeTensors::elements(const std::string& name,
                                     std::span<const int64_t> expected_shape) {
  const TensorInfo& tensor = check_weight(*this, name, expected_shape);
  const std::byte* bytes = data_ + tensor.begin;
  const std::size_t size = tensor.end - tensor.begin;
  if (reinterpret_cast<uintptr_t>(bytes) % dtype_size(tensor.dtype) == 0) {
    return {.data = bytes, .dtype = tensor.dtype};
  }
  // A float vector's storage is aligned for every dtype used here.
  std::vector<float>& copy = converted_.emplace_back((size + sizeof(float) - 1) / sizeof(float));
  // An empty vector's data() may be null, which memcpy must not be given even for 0 bytes.
  if (size > 0) std::memcpy(copy.data(), bytes, size);
  return {.data = copy.data(), .dtype = tensor.dtype};
}

const float* SafeTensors::floats(const std::string& name, std::span<const int64_t> expected_shape) {
  const TensorElements tensor = elements(name, expected_shape);
  if (tensor.dtype == "F32") return static_cast<const float*>(tensor.data);
  // F16 or BF16 (elements() refuses any other dtype): 2 bytes each, aligned.
  const TensorInfo& info = *find(name);
  const auto* halves = static_cast<const uint16_t*>(tensor.data);
  std::vector<float>& values = converted_.emplace_back((info.end - info.begin) / 2);
  const bool is_half = tensor.dtype == "F16";
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = is_half ? f16_to_float(halves[i]) : bf16_to_float(halves[i]);
  }
  return values.data();
}

}  // namespace attn
