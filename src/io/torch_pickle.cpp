#include "src/io/torch_pickle.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "src/base/error.h"
#include "src/io/json_util.h"
#include "src/io/tensor_file.h"

// A pickle is a program for a small stack machine. torch.save writes a state dict as one; this
// is its start, for a BERT checkpoint (`python -m pickletools data.pkl`, leaving out the BINPUTs
// that remember values and the BINGETs that recall them):
//
//   PROTO 2, EMPTY_DICT, MARK,
//     BINUNICODE 'bert.embeddings.word_embeddings.weight',
//     GLOBAL 'torch._utils _rebuild_tensor_v2',
//     MARK,
//       MARK, BINUNICODE 'storage', GLOBAL 'torch FloatStorage', BINUNICODE '0',
//             BINUNICODE 'cpu', BININT 381504, TUPLE, BINPERSID,  <- storage data/0: 381504 F32
//       BININT1 0,                                                 <- storage offset
//       BININT2 5961, BININT1 64, TUPLE2,                          <- size (5961, 64)
//       BININT1 64, BININT1 1, TUPLE2,                             <- stride (64, 1)
//       NEWFALSE,                                                  <- requires_grad
//       GLOBAL 'collections OrderedDict', EMPTY_TUPLE, REDUCE,     <- backward hooks: {}
//     TUPLE, REDUCE,                    <- _rebuild_tensor_v2(storage, 0, size, stride, ...)
//     BINUNICODE 'bert.embeddings.position_embeddings.weight', ...
//   SETITEMS, STOP                      <- {name: tensor, ...}
//
// Python's unpickler would import and call whatever GLOBAL and REDUCE name, which is how a
// hostile .bin runs code. This one runs nothing: it knows a dozen globals, and a REDUCE ("call")
// on one of them builds the plain data that the call would have returned (a tensor, or an empty
// dict); any other global, opcode or call is refused.

namespace attn {
namespace {

// The opcodes a state dict uses, named as pickletools names them.
enum class Op : uint8_t {
  kProto = 0x80,  // protocol version: 2 to 5
  kFrame = 0x95,  // protocol 4+: the length of the next frame; frames change nothing here
  kStop = '.',    // the end: the value on top of the stack is the result
  kMark = '(',    // opens a run of values for TUPLE, LIST, DICT, APPENDS or SETITEMS
  kEmptyDict = '}',
  kEmptyTuple = ')',
  kEmptyList = ']',
  kTuple = 't',  // a tuple of the values since the MARK
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kList = 'l',  // a list of the values since the MARK
  kDict = 'd',  // a dict of the keys and values since the MARK
  kAppend = 'a',
  kAppends = 'e',
  kSetItem = 's',
  kSetItems = 'u',
  kBinPut = 'q',  // remember the top of the stack in the memo under a 1-byte index
  kLongBinPut = 'r',
  kMemoize = 0x94,  // the same, under the next free index
  kBinGet = 'h',    // push a remembered value again
  kLongBinGet = 'j',
  kBinInt = 'J',   // int32
  kBinInt1 = 'K',  // uint8
  kBinInt2 = 'M',  // uint16
  kLong1 = 0x8a,   // a two's-complement integer of n bytes
  kBinFloat = 'G',
  kNone = 'N',
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kBinUnicode = 'X',  // UTF-8 text of a uint32 length
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kGlobal = 'c',        // "module\nname\n": a class or function, by name
  kStackGlobal = 0x93,  // the same, from two strings on the stack
  kReduce = 'R',        // call a global with a tuple of arguments
  kBuild = 'b',         // set the state of an object
  kBinPersId = 'Q',     // an object the pickle refers to by id: torch's storages
};

// Every opcode of pickle protocols 0 to 5, for messages that name what a file holds.
std::string opcode_name(uint8_t code) {
  // clang-format off
  static const std::map<uint8_t, const char*> names = {
      {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"},
      {'2', "DUP"}, {'F', "FLOAT"}, {'I', "INT"}, {'J', "BININT"},
      {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"}, {'N', "NONE"},
      {'P', "PERSID"}, {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"},
      {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"}, {'X', "BINUNICODE"},
      {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"},
      {'}', "EMPTY_DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"},
      {'i', "INST"}, {'j', "LONG_BINGET"}, {'l', "LIST"}, {']', "EMPTY_LIST"},
      {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"}, {'r', "LONG_BINPUT"},
      {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"}, {'u', "SETITEMS"},
      {'G', "BINFLOAT"}, {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"}, {0x80, "PROTO"},
      {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"},
      {0x85, "TUPLE1"}, {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"},
      {0x89, "NEWFALSE"}, {0x8a, "LONG1"}, {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"},
      {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"},
      {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
      {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}};
  // clang-format on
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", code);
  const auto it = names.find(code);
  return it == names.end() ? "byte " + std::string(hex)
                           : std::string(it->second) + " (" + hex + ")";
}

// The globals a state dict names, and nothing else. A storage type gives its tensors' dtype.
struct Global {
  std::string_view module, name;
  const char* dtype;  // storage types only
};
constexpr Global kGlobals[] = {
    {"collections", "OrderedDict", nullptr},
    {"torch._utils", "_rebuild_tensor_v2", nullptr},
    {"torch._utils", "_rebuild_parameter", nullptr},
    {"torch", "FloatStorage", "F32"},
    {"torch", "HalfStorage", "F16"},
    {"torch", "BFloat16Storage", "BF16"},
    {"torch", "LongStorage", "I64"},
    {"torch", "IntStorage", "I32"},
    {"torch", "ShortStorage", "I16"},
    {"torch", "CharStorage", "I8"},
    {"torch", "ByteStorage", "U8"},
    {"torch", "BoolStorage", "BOOL"},
};
// Indexes of kGlobals.
constexpr int64_t kOrderedDict = 0, kRebuildTensor = 1, kRebuildParameter = 2;

std::string global_name(int64_t index) {
  return std::string(kGlobals[index].module) + "." + std::string(kGlobals[index].name);
}

// What the stack, the memo and the containers hold. Numbers are held in place; strings,
// containers, storages and tensors live in tables of the Unpickler and are referred to by index.
// So no object owns another, and however deep or cyclic the nesting a pickle builds, nothing is
// ever walked or destroyed recursively.
enum class Kind : uint8_t {
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kTuple,
  kList,
  kDict,
  kGlobal,
  kStorage,
  kTensor
};

struct Value {
  Kind kind = Kind::kNone;
  // kBool, kInt: the value; kFloat: its bits; kGlobal: index into kGlobals; every other kind:
  // index into its table.
  int64_t number = 0;
};

class Unpickler {
 public:
  Unpickler(std::span<const std::byte> pickle, const std::string& file)
      : pickle_(pickle), file_(file) {}

  TorchStateDict run() {
    for (;;) {
      if (at_ == pickle_.size()) {
        throw Error(file_ + ": data.pkl ends at offset " + std::to_string(at_) +
                    " without a STOP (is it truncated?)");
      }
      opcode_at_ = at_;
      opcode_ = uint8_t(pickle_[at_++]);
      if (Op(opcode_) == Op::kStop) return state_dict(pop());
      step(Op(opcode_));
    }
  }

 private:
  // Bounds on what a pickle may build: far above what any state dict needs (a checkpoint of
  // 100,000 tensors builds about a million objects, and nests MARKs 3 deep), far below what
  // would exhaust memory. Every string is at most the bytes left in the pickle.
  static constexpr std::size_t kMaxStack = 1 << 20;
  static constexpr std::size_t kMaxMarks = 64;  // containers being built inside one another
  static constexpr std::size_t kMaxMemo = 1 << 21;
  static constexpr std::size_t kMaxObjects = 1 << 22;  // strings, containers, storages, tensors
  static constexpr std::size_t kMaxItems = 1 << 23;    // in all tuples, lists and dicts together
  static constexpr std::size_t kMaxDimensions = 64;

  void step(Op op) {
    switch (op) {
      case Op::kProto:
        if (const uint8_t version = byte(); version < 2 || version > 5) {
          fail("pickle protocol " + std::to_string(version) + "; torch.save writes 2 to 5");
        }
        return;
      case Op::kFrame:
        if (little_endian(8) > pickle_.size() - at_) truncated();
        return;
      case Op::kMark:
        if (marks_.size() == kMaxMarks) {
          fail("nests more than " + std::to_string(kMaxMarks) + " MARKs deep");
        }
        marks_.push_back(stack_.size());
        return;
      case Op::kEmptyDict:
        return push(container(Kind::kDict, {}));
      case Op::kEmptyTuple:
        return push(container(Kind::kTuple, {}));
      case Op::kEmptyList:
        return push(container(Kind::kList, {}));
      case Op::kTuple:
        return push(container(Kind::kTuple, pop_mark()));
      case Op::kTuple1:
      case Op::kTuple2:
      case Op::kTuple3: {
        std::vector<Value> items(opcode_ - uint8_t(Op::kTuple1) + 1);
        for (std::size_t i = items.size(); i-- > 0;) items[i] = pop();
        return push(container(Kind::kTuple, std::move(items)));
      }
      case Op::kList:
        return push(container(Kind::kList, pop_mark()));
      case Op::kDict: {
        std::vector<Value> items = pop_mark();
        check_pairs(items);
        return push(container(Kind::kDict, std::move(items)));
      }
      case Op::kAppend: {
        const Value item = pop();
        return add_to(Kind::kList, {item});
      }
      case Op::kAppends:
        return add_to(Kind::kList, pop_mark());
      case Op::kSetItem: {
        const Value value = pop();
        const Value key = pop();
        return add_to(Kind::kDict, {key, value});
      }
      case Op::kSetItems:
        return add_to(Kind::kDict, pop_mark());
      case Op::kBinPut:
        return remember(byte());
      case Op::kLongBinPut:
        return remember(little_endian(4));
      case Op::kMemoize:
        return remember(memo_.size());
      case Op::kBinGet:
        return push(recall(byte()));
      case Op::kLongBinGet:
        return push(recall(little_endian(4)));
      case Op::kBinInt:
        return push(integer(int32_t(uint32_t(little_endian(4)))));
      case Op::kBinInt1:
        return push(integer(byte()));
      case Op::kBinInt2:
        return push(integer(int64_t(little_endian(2))));
      case Op::kLong1:
        return push(integer(long_integer(byte())));
      case Op::kBinFloat: {
        uint64_t bits = 0;  // big-endian, unlike everything else in a pickle
        for (const std::byte b : take(8)) bits = bits << 8 | uint8_t(b);
        return push({Kind::kFloat, int64_t(bits)});
      }
      case Op::kNone:
        return push({Kind::kNone, 0});
      case Op::kNewTrue:
        return push({Kind::kBool, 1});
      case Op::kNewFalse:
        return push({Kind::kBool, 0});
      case Op::kBinUnicode:
        return push(string(text(little_endian(4))));
      case Op::kShortBinUnicode:
        return push(string(text(byte())));
      case Op::kBinUnicode8:
        return push(string(text(little_endian(8))));
      case Op::kGlobal: {
        const std::string_view module = line();
        return push(global(module, line()));
      }
      case Op::kStackGlobal: {
        const Value name = pop();
        const Value module = pop();
        if (module.kind != Kind::kString || name.kind != Kind::kString) {
          fail("needs a module and a name, found " + describe(module) + " and " + describe(name));
        }
        return push(global(strings_[module.number], strings_[name.number]));
      }
      case Op::kReduce: {
        const Value arguments = pop();
        const Value callable = pop();
        return push(reduce(callable, arguments));
      }
      case Op::kBuild: {
        // transformers sets `_metadata` (each module's version) on the state dict this way;
        // attn has no use for it. Anything else with a state is not plain data.
        pop();
        if (const Value target = top(); target.kind != Kind::kDict) {
          fail("sets the state of " + describe(target) + "; only a dict's is accepted");
        }
        return;
      }
      case Op::kBinPersId:
        return push(storage(pop()));
      case Op::kStop:
        break;  // handled by run()
    }
    throw Error(file_ + ": data.pkl: opcode " + opcode_name(opcode_) + " at offset " +
                std::to_string(opcode_at_) + " is not one a state dict uses; refused");
  }

  // ---- Reading the bytes of the pickle

  std::span<const std::byte> take(uint64_t count) {
    if (count > pickle_.size() - at_) truncated();
    const std::span<const std::byte> bytes = pickle_.subspan(at_, count);
    at_ += count;
    return bytes;
  }
  uint8_t byte() { return uint8_t(take(1)[0]); }
  uint64_t little_endian(std::size_t bytes) {
    uint64_t value = 0;
    const std::span<const std::byte> data = take(bytes);
    for (std::size_t i = bytes; i-- > 0;) value = value << 8 | uint8_t(data[i]);
    return value;
  }
  std::string_view text(uint64_t bytes) {
    const std::span<const std::byte> data = take(bytes);
    return {reinterpret_cast<const char*>(data.data()), data.size()};
  }
  // GLOBAL's module or name: text up to a newline.
  std::string_view line() {
    const auto begin = pickle_.begin() + std::ptrdiff_t(at_);
    const auto end = std::find(begin, pickle_.end(), std::byte{'\n'});
    if (end == pickle_.end()) truncated();
    const std::string_view found = text(std::size_t(end - begin));
    ++at_;  // the newline
    return found;
  }

  // LONG1's integer: `bytes` bytes of two's complement, little-endian.
  int64_t long_integer(std::size_t bytes) {
    if (bytes > 8) {
      fail("an integer of " + std::to_string(bytes) + " bytes, larger than any a state dict holds");
    }
    uint64_t value = little_endian(bytes);
    if (bytes > 0 && bytes < 8 && (value >> (8 * bytes - 1)) != 0) value |= ~0ULL << (8 * bytes);
    return int64_t(value);
  }

  // ---- The stack. A MARK hides the values below it until an opcode takes the values above.

  std::size_t values_above_mark() const {
    return stack_.size() - (marks_.empty() ? 0 : marks_.back());
  }
  void push(Value value) {
    if (stack_.size() == kMaxStack) fail("the stack holds more than " + std::to_string(kMaxStack));
    stack_.push_back(value);
  }
  Value& top() {
    if (values_above_mark() == 0) fail("finds no value on the stack");
    return stack_.back();
  }
  Value pop() {
    const Value value = top();
    stack_.pop_back();
    return value;
  }
  std::vector<Value> pop_mark() {
    if (marks_.empty()) fail("needs a MARK, and there is none");
    const std::vector<Value> values(stack_.begin() + marks_.back(), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return values;
  }

  // ---- The memo: values remembered by index, to be pushed again.

  void remember(uint64_t index) {
    if (memo_.size() == kMaxMemo && !memo_.contains(index)) {
      fail("remembers more than " + std::to_string(kMaxMemo) + " values");
    }
    memo_[index] = top();
  }
  Value recall(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("recalls memo " + std::to_string(index) + ", never stored");
    return it->second;
  }

  // ---- Making values

  void count_objects(std::size_t objects, std::size_t items) {
    objects_ += objects;
    items_ += items;
    if (objects_ > kMaxObjects || items_ > kMaxItems) {
      fail("builds more objects than a state dict needs (" + std::to_string(kMaxObjects) +
           " objects or " + std::to_string(kMaxItems) + " items in containers)");
    }
  }
  static Value integer(int64_t value) { return {Kind::kInt, value}; }
  Value string(std::string_view text) {
    count_objects(1, 0);
    strings_.emplace_back(text);
    return {Kind::kString, int64_t(strings_.size() - 1)};
  }
  Value container(Kind kind, std::vector<Value> items) {
    count_objects(1, items.size());
    containers_.push_back(std::move(items));
    return {kind, int64_t(containers_.size() - 1)};
  }
  void check_pairs(const std::vector<Value>& items) {
    if (items.size() % 2 != 0) {
      fail("needs keys and values in pairs, finds " + std::to_string(items.size()) + " values");
    }
  }
  // APPEND(S) and SETITEM(S): `items` go into the list or dict on top of the stack.
  void add_to(Kind kind, const std::vector<Value>& items) {
    const Value target = top();
    if (target.kind != kind) {
      fail("adds to " + describe(target) + ", not a " + (kind == Kind::kList ? "list" : "dict"));
    }
    if (kind == Kind::kDict) check_pairs(items);
    count_objects(0, items.size());
    std::vector<Value>& contents = containers_[target.number];
    contents.insert(contents.end(), items.begin(), items.end());
  }

  Value global(std::string_view module, std::string_view name) {
    for (std::size_t i = 0; i < std::size(kGlobals); ++i) {
      if (kGlobals[i].module == module && kGlobals[i].name == name) {
        return {Kind::kGlobal, int64_t(i)};
      }
    }
    throw Error(file_ + ": data.pkl names the global '" +
                brief_text(std::string(module) + "." + std::string(name)) +
                "', which a state dict never needs; refused (nothing in the file is run)");
  }

  // REDUCE: what calling `callable` with `arguments` would return, for the three calls a
  // state dict makes.
  Value reduce(Value callable, Value arguments) {
    if (callable.kind != Kind::kGlobal) {
      fail("calls " + describe(callable) + "; only the globals of a state dict are called");
    }
    if (arguments.kind != Kind::kTuple) fail("passes " + describe(arguments) + ", not a tuple");
    // A reference stays valid while containers_ grows: it is a deque.
    const std::vector<Value>& args = containers_[arguments.number];
    switch (callable.number) {
      case kOrderedDict:
        // OrderedDict() is made empty, then filled by SETITEMS.
        if (!args.empty()) fail("calls collections.OrderedDict with arguments");
        return container(Kind::kDict, {});
      case kRebuildTensor:
        return rebuild_tensor(args);
      case kRebuildParameter:
        // _rebuild_parameter(data, requires_grad, backward_hooks): an nn.Parameter, which is
        // its data for attn.
        if (args.size() != 3 || args[0].kind != Kind::kTensor || args[1].kind != Kind::kBool ||
            !is_empty_dict(args[2])) {
          fail("calls _rebuild_parameter with other arguments than (tensor, bool, {})");
        }
        return args[0];
    }
    fail("calls " + global_name(callable.number) + ", which a state dict never calls; refused");
  }

  // torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
  // backward_hooks[, metadata]). Sizes and strides are checked against the storage once the
  // tensor's name is known (state_dict()).
  Value rebuild_tensor(const std::vector<Value>& args) {
    if (args.size() != 6 && args.size() != 7) {
      fail("calls _rebuild_tensor_v2 with " + std::to_string(args.size()) +
           " arguments instead of 6 or 7");
    }
    if (args[0].kind != Kind::kStorage) {
      fail("calls _rebuild_tensor_v2 on " + describe(args[0]) + ", not a storage");
    }
    TorchTensor tensor;
    tensor.storage = std::size_t(args[0].number);
    if (args[1].kind != Kind::kInt) fail("gives a storage offset that is " + describe(args[1]));
    tensor.offset = args[1].number;
    tensor.size = integers(args[2], "size");
    tensor.stride = integers(args[3], "stride");
    if (tensor.size.size() != tensor.stride.size()) {
      fail("gives a tensor " + std::to_string(tensor.size.size()) + " sizes and " +
           std::to_string(tensor.stride.size()) + " strides");
    }
    if (args[4].kind != Kind::kBool) fail("gives requires_grad that is " + describe(args[4]));
    if (!is_empty_dict(args[5])) {
      fail("gives a tensor backward hooks (" + describe(args[5]) + "); a state dict has none");
    }
    if (args.size() == 7 && args[6].kind != Kind::kNone && !is_empty_dict(args[6])) {
      fail("gives a tensor metadata (" + describe(args[6]) + "); a state dict has none");
    }
    count_objects(1, 0);
    tensors_.push_back(std::move(tensor));
    return {Kind::kTensor, int64_t(tensors_.size() - 1)};
  }

  // A size or stride: a tuple of integers.
  std::vector<int64_t> integers(Value tuple, const char* what) {
    if (tuple.kind != Kind::kTuple)
      fail(std::string("gives a ") + what + " that is " + describe(tuple));
    const std::vector<Value>& items = containers_[tuple.number];
    if (items.size() > kMaxDimensions) {
      fail(std::string("gives a ") + what + " of more than " + std::to_string(kMaxDimensions) +
           " dimensions");
    }
    std::vector<int64_t> numbers;
    for (const Value& item : items) {
      if (item.kind != Kind::kInt)
        fail(std::string("gives a ") + what + " holding " + describe(item));
      numbers.push_back(item.number);
    }
    return numbers;
  }

  bool is_empty_dict(Value value) const {
    return value.kind == Kind::kDict && containers_[value.number].empty();
  }

  // BINPERSID: torch.save refers to each storage by the persistent id
  // ('storage', <storage type>, key, location, numel), its bytes being the entry data/<key>.
  Value storage(Value id) {
    const std::vector<Value>* fields = id.kind == Kind::kTuple ? &containers_[id.number] : nullptr;
    if (!fields || fields->size() != 5 || (*fields)[0].kind != Kind::kString ||
        strings_[(*fields)[0].number] != "storage") {
      fail("a persistent id that is not a storage (" + describe(id) + "); refused");
    }
    const Value type = (*fields)[1], key = (*fields)[2], location = (*fields)[3],
                numel = (*fields)[4];
    if (type.kind != Kind::kGlobal || !kGlobals[type.number].dtype) {
      fail("a storage whose type is " + describe(type));
    }
    if (key.kind != Kind::kString || location.kind != Kind::kString) {
      fail("a storage whose key or location is not a string");
    }
    if (numel.kind != Kind::kInt || numel.number < 0 || numel.number > kMaxTorchElements) {
      fail("a storage whose size is not an integer from 0 to 2^40");
    }
    TorchStorage found{strings_[key.number], kGlobals[type.number].dtype, numel.number};
    // Tensors that share a storage (tied weights, views) repeat its id.
    const auto [it, added] = storage_index_.emplace(found.key, storages_.size());
    if (added) {
      count_objects(1, 0);
      storages_.push_back(std::move(found));
    } else if (const TorchStorage& first = storages_[it->second];
               first.dtype != found.dtype || first.numel != found.numel) {
      fail("storage '" + brief_text(found.key) + "' appears as " + std::to_string(first.numel) +
           " " + first.dtype + " and as " + std::to_string(found.numel) + " " + found.dtype);
    }
    return {Kind::kStorage, int64_t(it->second)};
  }

  // ---- The result

  // STOP's value, which must map names to tensors; each tensor is checked against its storage.
  TorchStateDict state_dict(Value result) {
    if (result.kind != Kind::kDict) {
      throw Error(file_ + ": data.pkl holds " + describe(result) +
                  ", not a state dict (a dict of named tensors)");
    }
    const std::vector<Value>& items = containers_[result.number];
    TorchStateDict state;
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < items.size(); i += 2) {
      const Value key = items[i], value = items[i + 1];
      if (key.kind != Kind::kString) {
        throw Error(file_ + ": data.pkl holds a dict with a key that is " + describe(key) +
                    ", not a state dict (a dict of named tensors)");
      }
      const std::string& name = strings_[key.number];
      const std::string where = file_ + ": data.pkl: '" + brief_text(name) + "'";
      if (value.kind != Kind::kTensor) {
        throw Error(where + " is " + describe(value) + ", not a tensor" +
                    (value.kind == Kind::kDict
                         ? " (a checkpoint of another tool, with the weights inside an entry?)"
                         : ""));
      }
      if (!names.insert(name).second) throw Error(where + " appears twice in the state dict");
      TorchTensor tensor = tensors_[value.number];
      tensor.name = name;
      check_view(tensor, storages_[tensor.storage], where);
      state.tensors.push_back(std::move(tensor));
    }
    state.storages = std::move(storages_);
    return state;
  }

  // The elements the tensor views, offset + sum_i (0 .. size[i] - 1) * stride[i], must lie in
  // the storage's numel elements, with every step of the arithmetic checked for overflow.
  static void check_view(const TorchTensor& tensor, const TorchStorage& storage,
                         const std::string& where) {
    const std::string view = "size " + shape_string(tensor.size) + ", stride " +
                             shape_string(tensor.stride) + " from storage offset " +
                             std::to_string(tensor.offset);
    if (tensor.offset < 0) throw Error(where + ": " + view + ": negative storage offset");
    bool empty = false;
    for (std::size_t i = 0; i < tensor.size.size(); ++i) {
      if (tensor.size[i] < 0 || tensor.stride[i] < 0) {
        throw Error(where + ": " + view + ": negative size or stride");
      }
      empty |= tensor.size[i] == 0;
    }
    int64_t elements = 1;
    for (const int64_t size : tensor.size) {
      if (empty) break;
      if (elements > kMaxTorchElements / size) {
        throw Error(where + ": shape " + shape_string(tensor.size) + " is impossibly large");
      }
      elements *= size;
    }
    int64_t last = tensor.offset;  // the last element viewed (or, if none, where they would start)
    for (std::size_t i = 0; i < tensor.size.size() && !empty; ++i) {
      int64_t step = 0;
      if (__builtin_mul_overflow(tensor.size[i] - 1, tensor.stride[i], &step) ||
          __builtin_add_overflow(last, step, &last)) {
        throw Error(where + ": " + view + " overflows 64 bits");
      }
    }
    if (empty ? last > storage.numel : last >= storage.numel) {
      throw Error(where + ": " + view + " reaches element " + std::to_string(last) +
                  " of storage '" + brief_text(storage.key) + "', which holds " +
                  std::to_string(storage.numel));
    }
  }

  // ---- Errors

  std::string describe(Value value) const {
    switch (value.kind) {
      case Kind::kNone:
        return "None";
      case Kind::kBool:
        return "a bool";
      case Kind::kInt:
        return "an integer";
      case Kind::kFloat:
        return "a float";
      case Kind::kString:
        return "a string";
      case Kind::kTuple:
        return "a tuple";
      case Kind::kList:
        return "a list";
      case Kind::kDict:
        return "a dict";
      case Kind::kGlobal:
        return global_name(value.number);
      case Kind::kStorage:
        return "a storage";
      case Kind::kTensor:
        return "a tensor";
    }
    return "a value";
  }

  // "<file>: data.pkl, REDUCE at offset 197: <what>"
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file_ + ": data.pkl, " + opcode_name(opcode_) + " at offset " +
                std::to_string(opcode_at_) + ": " + what);
  }
  [[noreturn]] void truncated() const {
    throw Error(file_ + ": data.pkl is truncated: " + opcode_name(opcode_) + " at offset " +
                std::to_string(opcode_at_) + " runs past its end");
  }

  const std::span<const std::byte> pickle_;
  const std::string& file_;
  std::size_t at_ = 0;         // the next byte to read
  std::size_t opcode_at_ = 0;  // where the opcode being run starts
  uint8_t opcode_ = 0;

  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;  // the stack's size at each open MARK
  std::unordered_map<uint64_t, Value> memo_;
  std::size_t objects_ = 0, items_ = 0;

  // The tables Values refer to. Deques, so that references stay valid as they grow.
  std::deque<std::string> strings_;
  std::deque<std::vector<Value>> containers_;  // tuples, lists, dicts (keys and values alternate)
  std::vector<TorchStorage> storages_;
  std::map<std::string, std::size_t> storage_index_;  // key -> index in storages_
  std::vector<TorchTensor> tensors_;                  // named by state_dict()
};

}  // namespace

TorchStateDict read_torch_pickle(std::span<const std::byte> pickle, const std::string& file) {
  return Unpickler(pickle, file).run();
}

}  // namespace attn
