// TorchFile on pytorch_model.bin archives built here byte by byte (a small zip writer and
// hand-written pickles): what torch.save writes is read correctly, in place where it can be; and
// every hostile or broken file (globals that would run code, calls and opcodes a state dict
// never makes, bad zips, zip bombs, views outside their storage) is refused with one line naming
// the file and the reason. Nothing in any file is ever run. Last, the tiny BERT saved as
// pytorch_model.bin holds exactly the tensors of its model.safetensors.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <limits>
#include <set>

#include "src/base/error.h"
#include "src/io/safetensors.h"
#include "src/io/torch_file.h"
#include "src/io/torch_pickle.h"
#include "tests/cli_util.h"
#include "tests/crafted_file_test.h"
#include "tests/test_paths.h"
#include "tests/torch_zip_util.h"

namespace attn::test {
namespace {

template <typename T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), std::data(values), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> values_of(const void* data, std::size_t count) {
  std::vector<T> values(count);
  std::memcpy(values.data(), data, count * sizeof(T));
  return values;
}

class TorchFileTest : public CraftedFileTest<TorchFile> {
 protected:
  TorchFileTest() : CraftedFileTest("pytorch_model.bin") {}

  // A pickle that is not a valid state dict, in an otherwise valid archive.
  void expect_pickle_rejected(const std::string& pickle,
                              std::initializer_list<std::string> expected) {
    expect_rejected(torch_zip(pickle, {{.name = "0", .data = std::string(64, '\0')}}), expected);
  }
};

const std::string kSixFloats = bytes_of<float>({1, 2, 3, 4, 5, 6});

// ---- What torch.save writes

TEST_F(TorchFileTest, StoredTensorsAreReadInPlace) {
  const std::string pickle = state_dict_pickle({
      {"f32", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},
      {"tied", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},  // shares storage 0
      {"row", "FloatStorage", "0", 6, 3, {3}, {1}},         // a view at an offset
      {"f16", "HalfStorage", "1", 4, 0, {4}, {1}},
      {"bf16", "BFloat16Storage", "2", 4, 0, {2, 2}, {2, 1}},
      {"ids", "LongStorage", "3", 5, 0, {1, 5}, {5, 1}},  // a buffer such as position_ids
  });
  const std::string halves = bytes_of<uint16_t>({0x3c00, 0x4000, 0xbc00, 0x0001});
  const std::string bfloats = bytes_of<uint16_t>({0x3f80, 0x4000, 0xbf80, 0x7f80});
  write(torch_zip(pickle, {{.name = "0", .data = kSixFloats},
                           {.name = "1", .data = halves},
                           {.name = "2", .data = bfloats},
                           {.name = "3", .data = bytes_of<int64_t>({0, 1, 2, 3, 4})}}));
  TorchFile file(path_);
  EXPECT_STREQ(file.format(), "pytorch");
  EXPECT_EQ(file.path(), path_);
  ASSERT_EQ(file.tensors().size(), 6u);
  EXPECT_EQ(file.tensors().at("f16").dtype, "F16");
  EXPECT_EQ(file.tensors().at("bf16").dtype, "BF16");
  EXPECT_EQ(file.tensors().at("ids").dtype, "I64");
  EXPECT_EQ(file.tensors().at("ids").shape, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(file.tensors().at("row").begin, 12u);
  EXPECT_EQ(file.tensors().at("row").end, 24u);

  const TensorElements f32 = file.elements("f32", std::vector<int64_t>{2, 3});
  EXPECT_EQ(f32.dtype, "F32");
  EXPECT_EQ(values_of<float>(f32.data, 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  for (const char* name : {"f32", "tied", "row", "f16", "bf16"}) {
    EXPECT_TRUE(file.in_place(name)) << name;
  }
  EXPECT_EQ(file.elements("f32", std::vector<int64_t>{2, 3}).data, f32.data);
  EXPECT_EQ(file.elements("tied", std::vector<int64_t>{2, 3}).data, f32.data);
  EXPECT_EQ(file.elements("row", std::vector<int64_t>{3}).data,
            static_cast<const float*>(f32.data) + 3);
  const TensorElements f16 = file.elements("f16", std::vector<int64_t>{4});
  EXPECT_EQ(f16.dtype, "F16");
  EXPECT_EQ(values_of<uint16_t>(f16.data, 4), (std::vector<uint16_t>{0x3c00, 0x4000, 0xbc00, 1}));
  const TensorElements bf16 = file.elements("bf16", std::vector<int64_t>{2, 2});
  EXPECT_EQ(bf16.dtype, "BF16");
  EXPECT_EQ(values_of<uint16_t>(bf16.data, 4),
            (std::vector<uint16_t>{0x3f80, 0x4000, 0xbf80, 0x7f80}));

  try {
    file.elements("ids", std::vector<int64_t>{1, 5});
    ADD_FAILURE() << "elements() gave an I64 tensor as a weight";
  } catch (const Error& e) {
    expect_message(e.what(), {"'ids'", "I64"});
  }
  try {
    file.elements("f32", std::vector<int64_t>{3, 2});
    ADD_FAILURE() << "elements() accepted a wrong shape";
  } catch (const Error& e) {
    expect_message(e.what(), {"'f32'", "[2, 3]", "[3, 2]"});
  }
  EXPECT_FALSE(file.in_place("absent"));
}

TEST_F(TorchFileTest, StridedViewsAreCopiedRowMajor) {
  // A [2, 3] storage seen transposed as [3, 2], and as [3, 1, 2] with a size-1 dimension.
  const std::string pickle = state_dict_pickle({
      {"transposed", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}},
      {"unsqueezed", "FloatStorage", "0", 6, 0, {3, 1, 2}, {1, 99, 3}},
      {"every_other", "FloatStorage", "0", 6, 1, {2}, {2}},  // elements 1 and 3 (2.0 and 4.0)
      {"size_one_dims", "FloatStorage", "0", 6, 0, {1, 6, 1}, {7, 1, 5}},  // contiguous
  });
  write(torch_zip(pickle, {{.name = "0", .data = kSixFloats}}));
  TorchFile file(path_);
  const std::vector<float> expected = {1, 4, 2, 5, 3, 6};
  EXPECT_FALSE(file.in_place("transposed"));
  const TensorElements transposed = file.elements("transposed", std::vector<int64_t>{3, 2});
  EXPECT_EQ(values_of<float>(transposed.data, 6), expected);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(transposed.data) % alignof(float), 0u);
  // Copied once: the same copy the second time.
  EXPECT_EQ(file.elements("transposed", std::vector<int64_t>{3, 2}).data, transposed.data);
  EXPECT_EQ(values_of<float>(file.elements("unsqueezed", std::vector<int64_t>{3, 1, 2}).data, 6),
            expected);
  EXPECT_EQ(values_of<float>(file.elements("every_other", std::vector<int64_t>{2}).data, 2),
            (std::vector<float>{2, 4}));
  EXPECT_TRUE(file.in_place("size_one_dims"));
  EXPECT_EQ(values_of<float>(file.elements("size_one_dims", std::vector<int64_t>{1, 6, 1}).data, 6),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(TorchFileTest, DeflatedEntriesAreInflatedOnce) {
  // Other zip writers deflate; torch.save never does. data.pkl is deflated too.
  const std::string pickle = state_dict_pickle({
      {"all", "FloatStorage", "0", 6, 0, {6}, {1}},
      {"tail", "FloatStorage", "0", 6, 4, {2}, {1}},
      {"transposed", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}},
  });
  write(make_zip({{.name = "archive/data.pkl", .data = pickle, .deflate = true},
                  {.name = "archive/data/0", .data = kSixFloats, .deflate = true}}));
  TorchFile file(path_);
  EXPECT_FALSE(file.in_place("all"));
  const TensorElements all = file.elements("all", std::vector<int64_t>{6});
  EXPECT_EQ(values_of<float>(all.data, 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Both views of the storage share its one inflated copy.
  EXPECT_EQ(file.elements("tail", std::vector<int64_t>{2}).data,
            static_cast<const float*>(all.data) + 4);
  EXPECT_EQ(values_of<float>(file.elements("transposed", std::vector<int64_t>{3, 2}).data, 6),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST_F(TorchFileTest, MisalignedStorageIsCopied) {
  write(torch_zip(state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}}),
                  {{.name = "0", .data = kSixFloats, .misalign = 2}}));
  TorchFile file(path_);
  EXPECT_FALSE(file.in_place("w"));
  const TensorElements w = file.elements("w", std::vector<int64_t>{6});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data) % alignof(float), 0u);
  EXPECT_EQ(values_of<float>(w.data, 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(TorchFileTest, OrderedDictWithMetadataAndParameters) {
  // transformers' state dict: an OrderedDict whose `_metadata` attribute is set by BUILD after
  // its items; nn.Parameters come as _rebuild_parameter(tensor, requires_grad, hooks).
  Pickle pickle;
  pickle.proto().global("collections", "OrderedDict").op('q').le(0, 1).op(')').op('R');
  pickle.mark().str("weight").global("torch._utils", "_rebuild_parameter").mark();
  pickle.tensor("FloatStorage", "0", 6, 0, {6}, {1}).op(0x88).op('h').le(0, 1).op(')').op('R');
  pickle.op('t').op('R');
  pickle.str("scale").tensor("FloatStorage", "0", 6, 5, {}, {});  // a scalar: size (), stride ()
  pickle.op('u');
  // state: {'_metadata': OrderedDict({'': {'version': 1}})}
  pickle.op('}').str("_metadata").empty_ordered_dict().str("").op('}').str("version").integer(1);
  pickle.op('s').op('s').op('s').op('b').stop();
  write(torch_zip(pickle.bytes(), {{.name = "0", .data = kSixFloats}}));
  TorchFile file(path_);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(values_of<float>(file.elements("weight", std::vector<int64_t>{6}).data, 6),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(file.tensors().at("scale").shape, std::vector<int64_t>{});
  EXPECT_EQ(values_of<float>(file.elements("scale", std::vector<int64_t>{}).data, 1),
            std::vector<float>{6});
}

TEST_F(TorchFileTest, Protocol4OpcodesAndZip64ExtraFields) {
  // pickle_protocol=4: FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL, and the 7th argument of
  // _rebuild_tensor_v2 (metadata, None); BINUNICODE8, LONG1, LONG_BINPUT/LONG_BINGET, DICT,
  // TUPLE1 and a storage on 'cuda:0' too.
  Pickle p;
  p.proto(4).op(0x95).le(0, 8).op('}').op(0x94).mark();
  p.op(0x8c).le(7, 1).raw("encoder").op(0x94);
  p.stack_global("torch._utils", "_rebuild_tensor_v2").op('r').le(70000, 4);
  p.mark().mark().str("storage").stack_global("torch", "FloatStorage");
  p.op(0x8d).le(1, 8).raw("0").str("cuda:0").op(0x8a).le(2, 1).le(6, 2).op('t').op('Q');
  p.integer(0).ints({2, 3}).ints({3, 1}).op(0x89).mark().op('d').op('N').op('t').op('R');
  p.op(0x8c).le(5, 1).raw("other").op('j').le(70000, 4);
  p.mark().mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu");
  p.integer(6).op('t').op('Q').integer(3).op(0x8a).le(1, 1).le(3, 1).op(0x85);
  p.integer(1).op(0x85).op(0x88).op('}').op('t').op('R');
  p.op('u');
  // A BUILD state with a list of a float, None, a negative int, True, nested tuples.
  p.op('}').str("lists").mark().op('G').le(0x3ff8000000000000, 8).op('N').op('l');
  p.integer(-5).op('a').mark().op(0x88).op(')').op(0x86).op('e').op('s').op('b').stop();
  write(make_zip({{.name = "archive/data.pkl", .data = p.bytes(), .zip64_extra = true},
                  {.name = "archive/data/0", .data = kSixFloats, .zip64_extra = true},
                  {.name = "archive/byteorder", .data = "little", .zip64_extra = true}}));
  TorchFile file(path_);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_TRUE(file.in_place("encoder"));
  EXPECT_EQ(values_of<float>(file.elements("encoder", std::vector<int64_t>{2, 3}).data, 6),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values_of<float>(file.elements("other", std::vector<int64_t>{3}).data, 3),
            (std::vector<float>{4, 5, 6}));
}

TEST_F(TorchFileTest, EndRecordsWithAndWithoutZip64) {
  const std::string pickle = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}});
  const std::vector<ZipInput> entries = {{.name = "archive/data.pkl", .data = pickle},
                                         {.name = "archive/data/0", .data = kSixFloats}};
  // Plain end record only (most zip writers); the end record's fields all in zip64 (torch, for
  // archives past 4 GiB); a comment after the end record.
  for (const ZipEnd end : {ZipEnd{.zip64 = false}, ZipEnd{.markers = true}}) {
    write(make_zip(entries, end));
    TorchFile file(path_);
    EXPECT_EQ(values_of<float>(file.elements("w", std::vector<int64_t>{6}).data, 6),
              (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
  std::string commented = make_zip(entries);
  commented[commented.size() - 2] = 5;
  write(commented + "hello");
  EXPECT_EQ(TorchFile(path_).tensors().size(), 1u);
  expect_rejected(make_zip(entries, {.zip64 = false, .markers = true}),
                  {"needs a zip64 end-of-central-directory record, and has none"});
}

// read_torch_pickle alone: a pure function of the bytes (what fuzz_torch_pickle runs).
TEST(TorchPickleTest, ReadsStoragesAndViewsFromBytesAlone) {
  const std::string pickle = state_dict_pickle({
      {"w", "BFloat16Storage", "7", 12, 2, {2, 5}, {5, 1}},
      {"empty", "BoolStorage", "8", 3, 3, {0, 4}, {4, 1}},  // no elements, at the storage's end
      {"view", "BFloat16Storage", "7", 12, 0, {3}, {4}},
  });
  const TorchStateDict state = read_torch_pickle(
      std::span(reinterpret_cast<const std::byte*>(pickle.data()), pickle.size()), "x.bin");
  ASSERT_EQ(state.storages.size(), 2u);
  EXPECT_EQ(state.storages[0].key, "7");
  EXPECT_EQ(state.storages[0].dtype, "BF16");
  EXPECT_EQ(state.storages[0].numel, 12);
  EXPECT_EQ(state.storages[1].dtype, "BOOL");
  ASSERT_EQ(state.tensors.size(), 3u);
  EXPECT_EQ(state.tensors[0].name, "w");
  EXPECT_EQ(state.tensors[0].storage, 0u);
  EXPECT_EQ(state.tensors[0].offset, 2);
  EXPECT_EQ(state.tensors[0].size, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(state.tensors[0].stride, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(state.tensors[1].storage, 1u);
  EXPECT_EQ(state.tensors[2].storage, 0u);
  try {
    read_torch_pickle({}, "x.bin");
    ADD_FAILURE() << "read an empty pickle";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "x.bin: data.pkl ends at offset 0 without a STOP (is it truncated?)");
  }
}

// ---- Pickles that would run code, or build what a state dict never holds

TEST_F(TorchFileTest, RefusesGlobalsThatWouldRunCode) {
  // os.system('touch pwned'): what a hostile .bin does to Python's unpickler.
  expect_pickle_rejected(
      Pickle().proto().global("os", "system").str("touch pwned").op(0x85).op('R').stop().bytes(),
      {"data.pkl names the global 'os.system'", "refused", "nothing in the file is run"});
  expect_pickle_rejected(Pickle().proto().global("subprocess", "Popen").stop().bytes(),
                         {"'subprocess.Popen'", "refused"});
  expect_pickle_rejected(
      Pickle().proto(4).stack_global("builtins", "eval").str("1").op(0x85).op('R').stop().bytes(),
      {"'builtins.eval'", "refused"});
  expect_pickle_rejected(Pickle().proto(4).stack_global("os", "system").stop().bytes(),
                         {"'os.system'", "refused"});
  // A name with a newline or escape in it is quoted harmlessly.
  expect_pickle_rejected(Pickle().proto(4).stack_global("os\x1b[2J", "system").stop().bytes(),
                         {"'os\\x1B[2J.system'"});
  // A module spelled so that a dotted lookup would find an allowed function is still refused.
  expect_pickle_rejected(
      Pickle().proto(4).stack_global("torch", "_utils._rebuild_tensor_v2").stop().bytes(),
      {"'torch._utils._rebuild_tensor_v2'", "refused"});
}

TEST_F(TorchFileTest, RefusesGlobalsOutsideTheList) {
  expect_pickle_rejected(state_dict_pickle({{"w", "DoubleStorage", "0", 2, 0, {2}, {1}}}),
                         {"'torch.DoubleStorage'", "refused"});
  Pickle pickle;
  pickle.proto(4).op('}').str("w").stack_global("torch._utils", "_rebuild_parameter_with_state");
  expect_pickle_rejected(pickle.bytes(), {"'torch._utils._rebuild_parameter_with_state'"});
  expect_pickle_rejected(Pickle().proto().global("torch", "load").stop().bytes(), {"'torch.load'"});
}

TEST_F(TorchFileTest, RefusesCallsAStateDictNeverMakes) {
  // REDUCE on a storage type: torch.FloatStorage(...) would allocate as the pickle says.
  expect_pickle_rejected(
      Pickle().proto().global("torch", "FloatStorage").ints({1000}).op('R').stop().bytes(),
      {"REDUCE (0x52) at offset", "calls torch.FloatStorage", "refused"});
  // REDUCE on something that is not a global at all.
  expect_pickle_rejected(Pickle().proto().str("x").op(')').op('R').stop().bytes(),
                         {"REDUCE", "calls a string"});
  // OrderedDict with arguments, _rebuild_tensor_v2 with too few.
  expect_pickle_rejected(
      Pickle().proto().global("collections", "OrderedDict").ints({1}).op('R').stop().bytes(),
      {"OrderedDict with arguments"});
  expect_pickle_rejected(
      Pickle().proto().global("torch._utils", "_rebuild_tensor_v2").ints({1}).op('R').bytes(),
      {"_rebuild_tensor_v2 with 1 arguments"});
  // Backward hooks that are not empty, metadata that is not None or empty.
  Pickle hooks;
  hooks.proto().op('}').str("w").global("torch._utils", "_rebuild_tensor_v2").mark();
  hooks.storage("FloatStorage", "0", 2).integer(0).ints({2}).ints({1}).op(0x89);
  hooks.empty_ordered_dict().integer(1).str("hook").op('s').op('t').op('R').op('s').stop();
  expect_pickle_rejected(hooks.bytes(), {"backward hooks", "a dict"});
  Pickle metadata;
  metadata.proto().op('}').str("w").global("torch._utils", "_rebuild_tensor_v2").mark();
  metadata.storage("FloatStorage", "0", 2).integer(0).ints({2}).ints({1}).op(0x89);
  metadata.empty_ordered_dict().op('}').str("meta").str("x").op('s').op('t').op('R').op('s').stop();
  expect_pickle_rejected(metadata.bytes(), {"metadata", "a dict"});
  // _rebuild_parameter on something that is not a tensor.
  expect_pickle_rejected(Pickle()
                             .proto()
                             .global("torch._utils", "_rebuild_parameter")
                             .mark()
                             .str("x")
                             .op(0x89)
                             .op('}')
                             .op('t')
                             .op('R')
                             .stop()
                             .bytes(),
                         {"_rebuild_parameter with other arguments"});
}

TEST_F(TorchFileTest, RefusesBuildOnAnythingButADict) {
  Pickle pickle;
  pickle.proto().tensor("FloatStorage", "0", 2, 0, {2}, {1}).op('}').op('b').stop();
  expect_pickle_rejected(pickle.bytes(), {"BUILD (0x62) at offset", "sets the state of a tensor"});
  expect_pickle_rejected(Pickle().proto().global("os", "path").bytes(), {"'os.path'"});
  expect_pickle_rejected(Pickle().proto().op(']').op('}').op('b').stop().bytes(),
                         {"sets the state of a list"});
}

TEST_F(TorchFileTest, RefusesPersistentIdsThatAreNotStorages) {
  expect_pickle_rejected(Pickle().proto().str("/etc/passwd").op('Q').stop().bytes(),
                         {"BINPERSID", "a persistent id that is not a storage (a string)"});
  expect_pickle_rejected(
      Pickle().proto().mark().str("module").str("x").op('t').op('Q').stop().bytes(),
      {"a persistent id that is not a storage (a tuple)"});
  // A storage whose type is not a storage type, or whose size is negative.
  expect_pickle_rejected(Pickle()
                             .proto()
                             .mark()
                             .str("storage")
                             .global("collections", "OrderedDict")
                             .str("0")
                             .str("cpu")
                             .integer(2)
                             .op('t')
                             .op('Q')
                             .stop()
                             .bytes(),
                         {"a storage whose type is collections.OrderedDict"});
  expect_pickle_rejected(Pickle().proto().storage("FloatStorage", "0", -1).stop().bytes(),
                         {"a storage whose size is not an integer from 0 to 2^40"});
  // One key seen as two different storages.
  expect_pickle_rejected(state_dict_pickle({{"a", "FloatStorage", "0", 4, 0, {4}, {1}},
                                            {"b", "HalfStorage", "0", 8, 0, {8}, {1}}}),
                         {"storage '0' appears as 4 F32 and as 8 F16"});
}

TEST_F(TorchFileTest, RefusesOpcodesAStateDictNeverUses) {
  // NEWOBJ, INST, OBJ, EXT1, PERSID, the text-protocol opcodes, and a byte that is no opcode.
  expect_pickle_rejected(Pickle().proto().op(0x81).stop().bytes(),
                         {"opcode NEWOBJ (0x81) at offset 2", "not one a state dict uses"});
  expect_pickle_rejected(Pickle().proto().raw("ios\nsystem\n").stop().bytes(),
                         {"opcode INST (0x69) at offset 2"});
  expect_pickle_rejected(Pickle().op('P').raw("0\n").stop().bytes(),
                         {"opcode PERSID (0x50) at offset 0"});
  expect_pickle_rejected(Pickle().proto().op(0xff).bytes(), {"opcode byte 0xff at offset 2"});
  // Protocols 0, 1 and 6 are not what torch.save writes.
  expect_pickle_rejected(Pickle().proto(1).bytes(), {"pickle protocol 1"});
  expect_pickle_rejected(Pickle().proto(6).bytes(), {"pickle protocol 6"});
}

TEST_F(TorchFileTest, RefusesMalformedPickles) {
  const std::string valid = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}});
  // Cut inside a string, and cut before STOP.
  expect_pickle_rejected(valid.substr(0, 9), {"data.pkl is truncated", "BINUNICODE (0x58)"});
  expect_pickle_rejected(valid.substr(0, valid.size() - 1),
                         {"data.pkl ends at offset", "without a STOP"});
  expect_pickle_rejected("", {"data.pkl ends at offset 0 without a STOP"});
  // A string longer than the pickle.
  expect_pickle_rejected(Pickle().proto().op('X').le(0xFFFFFFFF, 4).raw("abc").bytes(),
                         {"truncated"});
  expect_pickle_rejected(Pickle().proto().op(0x8d).le(~0ULL, 8).raw("abc").bytes(), {"truncated"});
  // Values taken from an empty stack, or from below a MARK.
  expect_pickle_rejected(Pickle().proto().op('R').bytes(), {"REDUCE", "no value on the stack"});
  expect_pickle_rejected(Pickle().proto().op('N').mark().op(0x85).bytes(),
                         {"TUPLE1", "no value on the stack"});
  expect_pickle_rejected(Pickle().proto().op('N').op('t').bytes(), {"TUPLE", "needs a MARK"});
  expect_pickle_rejected(Pickle().proto().op('h').le(7, 1).bytes(),
                         {"BINGET", "recalls memo 7, never stored"});
  expect_pickle_rejected(Pickle().proto().op(0x8a).le(9, 1).raw("123456789").bytes(),
                         {"LONG1", "integer of 9 bytes"});
  expect_pickle_rejected(Pickle().proto().op(']').str("k").op('N').op('s').bytes(),
                         {"SETITEM", "adds to a list, not a dict"});
  expect_pickle_rejected(Pickle().proto().op('}').mark().op('N').op('u').bytes(),
                         {"SETITEMS", "in pairs"});
  expect_pickle_rejected(Pickle().proto().op('}').op('N').op('a').bytes(),
                         {"APPEND", "adds to a dict, not a list"});
}

TEST_F(TorchFileTest, DeepNestingIsBoundedAndNeverRecursed) {
  std::string marks = Pickle().proto().bytes() + std::string(100, '(');
  expect_pickle_rejected(marks, {"nests more than 64 MARKs deep"});
  // A million tuples each inside the next, and a list that contains itself: built, destroyed
  // and refused without recursion.
  Pickle nested;
  nested.proto().op(')');
  for (int i = 0; i < 1'000'000; ++i) nested.op(0x85);
  expect_pickle_rejected(nested.stop().bytes(), {"data.pkl holds a tuple, not a state dict"});
  expect_pickle_rejected(
      Pickle().proto().op(']').op('q').le(0, 1).op('h').le(0, 1).op('a').stop().bytes(),
      {"data.pkl holds a list, not a state dict"});
}

TEST_F(TorchFileTest, RefusesWhatIsNotAStateDict) {
  // Another tool's checkpoint: {"state_dict": {...}, "epoch": 3}.
  Pickle checkpoint;
  checkpoint.proto().op('}').mark().str("state_dict").op('}').str("w");
  checkpoint.tensor("FloatStorage", "0", 2, 0, {2}, {1}).op('s').str("epoch").integer(3);
  expect_pickle_rejected(checkpoint.op('u').stop().bytes(),
                         {"'state_dict' is a dict, not a tensor", "another tool"});
  expect_pickle_rejected(Pickle().proto().integer(3).stop().bytes(),
                         {"holds an integer, not a state dict"});
  expect_pickle_rejected(Pickle().proto().op('}').integer(1).op(0x88).op('s').stop().bytes(),
                         {"a key that is an integer"});
  // One name twice.
  expect_pickle_rejected(state_dict_pickle({{"w", "FloatStorage", "0", 2, 0, {2}, {1}},
                                            {"w", "FloatStorage", "0", 2, 0, {2}, {1}}}),
                         {"'w' appears twice"});
}

// ---- Tensors that do not fit their storage

TEST_F(TorchFileTest, RefusesViewsOutsideTheirStorage) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  const auto rejected = [&](const TensorSpec& spec, std::initializer_list<std::string> expected) {
    expect_rejected(torch_zip(state_dict_pickle({spec}), {{.name = "0", .data = kSixFloats}}),
                    expected);
  };
  rejected({"neg_stride", "FloatStorage", "0", 6, 5, {6}, {-1}},
           {"'neg_stride'", "stride [-1]", "negative size or stride"});
  rejected({"neg_size", "FloatStorage", "0", 6, 0, {-2}, {1}}, {"'neg_size'", "negative size"});
  rejected({"neg_offset", "FloatStorage", "0", 6, -1, {2}, {1}},
           {"'neg_offset'", "negative storage offset"});
  rejected({"big_stride", "FloatStorage", "0", 6, 0, {4}, {int64_t{1} << 62}},
           {"'big_stride'", "overflows 64 bits"});
  rejected({"big_offset", "FloatStorage", "0", 6, huge, {2}, {1}},
           {"'big_offset'", "overflows 64 bits"});
  rejected({"past_end", "FloatStorage", "0", 6, 5, {2}, {1}},
           {"'past_end'", "reaches element 6 of storage '0', which holds 6"});
  rejected({"strided_past", "FloatStorage", "0", 6, 0, {2, 3}, {3, 2}},
           {"'strided_past'", "reaches element 7"});
  rejected({"empty_past", "FloatStorage", "0", 6, 7, {0}, {1}}, {"'empty_past'", "reaches"});
  rejected({"huge_shape", "FloatStorage", "0", 6, 0, {1 << 21, 1 << 21}, {0, 0}},
           {"'huge_shape'", "impossibly large"});
  rejected({"ranks", "FloatStorage", "0", 6, 0, {2, 3}, {1}}, {"2 sizes and 1 strides"});
  // Zero strides repeat one element: a valid (broadcast) view, copied out.
  write(torch_zip(state_dict_pickle({{"repeat", "FloatStorage", "0", 6, 2, {2, 2}, {0, 0}}}),
                  {{.name = "0", .data = kSixFloats}}));
  TorchFile file(path_);
  EXPECT_EQ(values_of<float>(file.elements("repeat", std::vector<int64_t>{2, 2}).data, 4),
            (std::vector<float>{3, 3, 3, 3}));
}

TEST_F(TorchFileTest, RefusesStoragesTheArchiveDoesNotHold) {
  const std::string pickle = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}});
  expect_rejected(torch_zip(pickle, {{.name = "0", .data = kSixFloats.substr(0, 20)}}),
                  {"tensor 'w'", "archive/data/0 holds 20 bytes", "shorter than its tensor needs"});
  expect_rejected(torch_zip(pickle, {{.name = "1", .data = kSixFloats}}),
                  {"tensor 'w'", "archive/data/0 is not in the archive"});
  expect_rejected(torch_zip(state_dict_pickle({{"w", "FloatStorage", "../0", 6, 0, {6}, {1}}}),
                            {{.name = "0", .data = kSixFloats}}),
                  {"tensor 'w'", "storage key '../0' is not the name of a file in data/"});
}

// ---- Broken zips and zip bombs

TEST_F(TorchFileTest, RefusesFilesThatAreNotTorchZips) {
  expect_rejected("", {"not a zip archive (torch.save's format)"});
  expect_rejected("{\"not\": \"a zip\"}", {"not a zip archive (torch.save's format)"});
  // torch < 1.6: pickles in a row, the first being the magic number.
  expect_rejected(
      std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15),
      {"PyTorch's legacy (pre-1.6, non-zip) format", "re-save it", "convert it to safetensors"});
  const std::string zip = torch_zip(state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}}),
                                    {{.name = "0", .data = kSixFloats}});
  // Cut short: the end records are gone, or the end record points past the end.
  expect_rejected(zip.substr(0, zip.size() * 2 / 3),
                  {"without an end-of-central-directory record", "truncated"});
  expect_rejected(zip.substr(0, 10), {"truncated zip archive (10 bytes)"});
  std::string cut = zip;
  cut.erase(200, 100);  // entries shift: the directory's offsets point to the wrong places
  expect_rejected(cut, {"zip"});
  // No data.pkl; entries in two folders; no folder.
  expect_rejected(make_zip({{.name = "archive/version", .data = "3\n"}}),
                  {"no archive/data.pkl in the zip archive"});
  expect_rejected(
      make_zip({{.name = "a/data.pkl", .data = "."}, {.name = "b/version", .data = "3"}}),
      {"'a/data.pkl' and 'b/version' are in different folders"});
  expect_rejected(make_zip({{.name = "data.pkl", .data = "."}}), {"not inside a folder"});
  expect_rejected(make_zip({}), {"empty zip archive, without a data.pkl"});
  // byteorder other than little.
  expect_rejected(make_zip({{.name = "archive/byteorder", .data = "big"},
                            {.name = "archive/data.pkl", .data = "}."}}),
                  {"byteorder does not say 'little'"});
}

TEST_F(TorchFileTest, RefusesEntriesOutsideTheFile) {
  const std::string pickle = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}});
  // A stored entry whose size runs past the file.
  expect_rejected(
      torch_zip(pickle, {{.name = "0",
                          .data = kSixFloats,
                          .size = 1'000'000'000,
                          .compressed_size = 1'000'000'000}}),
      {"zip entry 'archive/data/0'", "1000000000 bytes at offset", "run past the end of the file"});
  // Sizes in zip64 fields, past the file by far (2^63).
  expect_rejected(torch_zip(pickle, {{.name = "0",
                                      .data = kSixFloats,
                                      .zip64_extra = true,
                                      .size = int64_t{1} << 62,
                                      .compressed_size = int64_t{1} << 62}}),
                  {"zip entry 'archive/data/0'", "run past the end of the file"});
  // A stored entry whose two sizes disagree.
  expect_rejected(torch_zip(pickle, {{.name = "0", .data = kSixFloats, .size = 12}}),
                  {"stored entry of 12 bytes takes 24"});
  // Other methods, encryption, a name twice, entries that overlap.
  expect_rejected(
      torch_zip(pickle, {{.name = "0", .data = kSixFloats, .method = 12}}),
      {"'archive/data/0' is compressed with method 12 (bzip2)", "only stored and deflated"});
  expect_rejected(torch_zip(pickle, {{.name = "0", .data = kSixFloats, .flags = 1}}),
                  {"'archive/data/0' is encrypted"});
  expect_rejected(
      torch_zip(pickle, {{.name = "0", .data = kSixFloats}, {.name = "0", .data = kSixFloats}}),
      {"'archive/data/0' appears twice"});
  expect_rejected(
      torch_zip(pickle, {{.name = "0", .data = kSixFloats, .size = 400, .compressed_size = 400},
                         {.name = "1", .data = kSixFloats}}),
      {"zip entries 'archive/data/0' and 'archive/data/1' overlap"});
}

TEST_F(TorchFileTest, RefusesZipBombs) {
  const std::string pickle = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}});
  // A deflated entry that claims far more than its bytes can give: refused when opened.
  expect_rejected(torch_zip(pickle, {{.name = "0",
                                      .data = kSixFloats,
                                      .deflate = true,
                                      .zip64_extra = true,
                                      .size = int64_t{1} << 40}}),
                  {"zip entry 'archive/data/0' claims 1099511627776 bytes", "zip bomb?"});
  // Runs of zeros compress ~1000:1: a stream that inflates past the size its entry declares is
  // cut off at that size, when the storage is first read.
  const std::string zeros(1 << 20, '\0');
  write(torch_zip(pickle, {{.name = "0", .data = zeros, .deflate = true, .size = 24}}));
  {
    TorchFile file(path_);
    try {
      file.elements("w", std::vector<int64_t>{6});
      ADD_FAILURE() << "read a storage that inflates past its size";
    } catch (const Error& e) {
      expect_message(e.what(), {"'archive/data/0'", "inflates past its declared size of 24 bytes",
                                "zip bomb?"});
    }
  }
  // data.pkl inflating past its size: refused when opened.
  expect_rejected(make_zip({{.name = "archive/data.pkl",
                             .data = pickle + zeros,
                             .deflate = true,
                             .size = int64_t(pickle.size())}}),
                  {"'archive/data.pkl'", "inflates past its declared size"});
}

TEST_F(TorchFileTest, RefusesCorruptDeflatedData) {
  const std::string pickle = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}});
  const auto expect_read_fails = [&](const std::string& zip,
                                     std::initializer_list<std::string> expected) {
    write(zip);
    TorchFile file(path_);
    try {
      file.elements("w", std::vector<int64_t>{6});
      ADD_FAILURE() << "read a corrupt storage: " << *(expected.begin() + 1);
    } catch (const Error& e) {
      expect_message(e.what(), expected);
    }
  };
  expect_read_fails(
      torch_zip(pickle, {{.name = "0", .data = kSixFloats, .deflate = true, .crc = 1}}),
      {"'archive/data/0'", "CRC-32"});
  expect_read_fails(
      torch_zip(pickle,
                {{.name = "0", .data = kSixFloats + kSixFloats, .deflate = true, .size = 24}}),
      {"'archive/data/0'", "inflates past its declared size"});
  expect_read_fails(
      torch_zip(pickle, {{.name = "0", .data = kSixFloats, .deflate = true, .size = 28}}),
      {"'archive/data/0'", "inflates to 24 bytes, not its declared size of 28"});
  // Deflated bytes that are not a deflate stream (a stored entry marked deflated).
  expect_read_fails(
      torch_zip(pickle, {{.name = "0", .data = std::string(24, '\xff'), .method = 8}}),
      {"'archive/data/0'", "corrupt"});
  // A stream cut short.
  ZipInput cut{.name = "0", .data = kSixFloats, .method = 8};
  cut.data = raw_deflate(kSixFloats).substr(0, 5);
  cut.size = 24;
  expect_read_fails(torch_zip(pickle, {cut}), {"'archive/data/0'", "ends before the stream does"});
}

// ---- The real thing

TEST(TorchFileRealTest, TinyBertBinHoldsTheTensorsOfItsSafetensors) {
  ATTN_REQUIRE_SHARED();
  const std::filesystem::path models = shared_dir() / "models";
  TorchFile bin(models / "tiny-bert-seqcls-random-bin" / "pytorch_model.bin");
  SafeTensors safetensors(models / "tiny-bert-seqcls-random" / "model.safetensors");
  std::set<std::string> bin_names, safetensors_names;
  for (const auto& [name, info] : bin.tensors()) bin_names.insert(name);
  for (const auto& [name, info] : safetensors.tensors()) safetensors_names.insert(name);
  EXPECT_EQ(bin_names, safetensors_names);
  EXPECT_EQ(bin.tensors().size(), 41u);
  for (const auto& [name, info] : safetensors.tensors()) {
    const TensorInfo* found = bin.find(name);
    ASSERT_NE(found, nullptr) << name;
    EXPECT_EQ(found->dtype, info.dtype) << name;
    ASSERT_EQ(found->shape, info.shape) << name;
    ASSERT_EQ(info.dtype, "F32") << name;
    // F32 tensors of a stored archive are used in place: no copy, the same pointer each time.
    EXPECT_TRUE(bin.in_place(name)) << name;
    const TensorElements elements = bin.elements(name, info.shape);
    EXPECT_EQ(bin.elements(name, info.shape).data, elements.data) << name;
    const TensorElements expected = safetensors.elements(name, info.shape);
    EXPECT_EQ(std::memcmp(elements.data, expected.data, info.end - info.begin), 0) << name;
  }
}

}  // namespace
}  // namespace attn::test
