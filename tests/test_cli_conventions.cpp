// The conventions every attn command shares (README: "Giving text and getting results"), checked
// against the real binary: texts as arguments, -p, -f FILE or standard input give the same
// output; -o writes what standard output would get; --json is JSON (Lines); empty texts and
// empty inputs are refused the same way everywhere; generate's sampling rules, refusals and
// seeds; did-you-mean for options and commands; help without parser internals; mean pooling on a
// plain encoder; shortest floats and right plurals. Tiny models and a few tokens: each test runs
// in seconds.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;

std::string gpt2() { return shipped_model("tiny-gpt2-brown").string(); }
std::string bert() { return shipped_model("tiny-bert-brown").string(); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The top-level keys of a JSON object.
std::set<std::string> keys_of(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

// ---------------------------------------------------------------------------------------------
// The table: every command that reads text, with settings that make its output deterministic.

// How a command's text output tells where a text came from, when it does.
enum class SourceMark {
  kNone,         // not at all: the same bytes whatever the source
  kTextAbove,    // fill-mask, classify: a line of a file prints the text above its results
  kLineLabel,    // embed: "line N: text" for a line, "text N: text" for an argument
  kSourceLabel,  // perplexity: "argument: ...", "--file PATH: ...", "standard input: ..."
};

// What --json prints.
enum class JsonShape {
  kPerText,      // one object per text, a line each (JSON Lines)
  kOneDocument,  // one document for all the texts (similarity, attention, heads)
};

struct TextCommand {
  const char* name;
  const char* model;  // a folder of the repository's models/, or of ../shared/models
  bool shared_model;
  std::vector<std::string> options;  // after the command and its model: deterministic settings
  std::vector<std::string> texts;
  SourceMark source_mark = SourceMark::kNone;
  JsonShape json_shape = JsonShape::kPerText;
  bool corpus = false;    // a file or standard input is one text (perplexity)
  bool one_text = false;  // exactly one text (attention)
};

const std::vector<TextCommand>& text_commands() {
  static const std::vector<TextCommand> commands = {
      {.name = "generate",
       .model = "tiny-gpt2-brown",
       .shared_model = false,
       .options = {"--temp", "0", "-n", "4"},
       .texts = {"The cat"}},
      {.name = "fill-mask",
       .model = "tiny-bert-brown",
       .shared_model = false,
       .options = {"-k", "3"},
       .texts = {"The [MASK] sat on the mat."},
       .source_mark = SourceMark::kTextAbove},
      {.name = "classify",
       .model = "tiny-bert-seqcls-random",
       .shared_model = true,
       .options = {"-q"},
       .texts = {"The cat sat on the mat."},
       .source_mark = SourceMark::kTextAbove},
      {.name = "embed",
       .model = "tiny-bert-brown",
       .shared_model = false,
       .options = {"-q"},
       .texts = {"The cat sat on the mat."},
       .source_mark = SourceMark::kLineLabel},
      {.name = "similarity",
       .model = "tiny-bert-brown",
       .shared_model = false,
       .options = {"-q"},
       .texts = {"The cat sat on the mat.", "A dog ran home."},
       .json_shape = JsonShape::kOneDocument},
      {.name = "attention",
       .model = "tiny-gpt2-brown",
       .shared_model = false,
       .options = {},
       .texts = {"The cat sat"},
       .json_shape = JsonShape::kOneDocument,
       .one_text = true},
      {.name = "heads",
       .model = "tiny-gpt2-brown",
       .shared_model = false,
       .options = {"--probe", "none"},
       .texts = {"The cat sat on the mat."},
       .json_shape = JsonShape::kOneDocument},
      {.name = "lens",
       .model = "tiny-gpt2-brown",
       .shared_model = false,
       .options = {"-q"},
       .texts = {"The cat sat on the mat."}},
      {.name = "tokenize",
       .model = "tiny-gpt2-brown",
       .shared_model = false,
       .options = {},
       .texts = {"The cat sat on the mat."}},
      {.name = "perplexity",
       .model = "tiny-gpt2-brown",
       .shared_model = false,
       .options = {"-q"},
       .texts = {"The cat sat on the mat."},
       .source_mark = SourceMark::kSourceLabel,
       .corpus = true},
      {.name = "translate",
       .model = "tiny-t5-random",
       .shared_model = true,
       .options = {"-n", "4", "-q"},
       .texts = {"The house is wonderful."}},
  };
  return commands;
}

// Test names and failure messages show a row by its command.
void PrintTo(const TextCommand& command, std::ostream* out) { *out << command.name; }

enum class Source { kArgument, kPrompt, kFile, kStdin };

const char* source_name(Source source) {
  switch (source) {
    case Source::kArgument:
      return "argument";
    case Source::kPrompt:
      return "-p";
    case Source::kFile:
      return "-f";
    case Source::kStdin:
      return "standard input";
  }
  return "?";
}

class TextCommandTest : public testing::TestWithParam<TextCommand> {
 protected:
  void SetUp() override {
    if (GetParam().shared_model) {
      ATTN_REQUIRE_SHARED();
      if (!std::filesystem::exists(model_dir())) {
        ATTN_SKIP_UNLESS_CI(model_dir().string() << " not found; skipping");
      }
    }
  }

  std::filesystem::path model_dir() const {
    const TextCommand& command = GetParam();
    return command.shared_model ? shared_dir() / "models" / command.model
                                : shipped_model(command.model);
  }

  // The command, its model, its settings and `extra`.
  std::vector<std::string> command_line(const std::vector<std::string>& extra) const {
    const TextCommand& command = GetParam();
    std::vector<std::string> args = {command.name, "-m", model_dir().string()};
    args.insert(args.end(), command.options.begin(), command.options.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // What a file holds for `texts`: one a line, or (a corpus) the one text as it is.
  std::string file_contents(const std::vector<std::string>& texts) const {
    if (GetParam().corpus) return texts.at(0);
    std::string contents;
    for (const std::string& text : texts) contents += text + "\n";
    return contents;
  }

  std::filesystem::path texts_file() {
    const std::filesystem::path path = scratch_ / "texts.txt";
    write_file(path, file_contents(GetParam().texts));
    return path;
  }

  // The command with the table's texts given the `source` way.
  CommandResult run(Source source, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = command_line(extra);
    const std::vector<std::string>& texts = GetParam().texts;
    switch (source) {
      case Source::kArgument:
        args.insert(args.end(), texts.begin(), texts.end());
        return run_attn(args);
      case Source::kPrompt:
        for (const std::string& text : texts) {
          args.push_back("-p");
          args.push_back(text);
        }
        return run_attn(args);
      case Source::kFile:
        args.push_back("-f");
        args.push_back(texts_file().string());
        return run_attn(args);
      case Source::kStdin:
        return run_attn(args, texts_file());
    }
    throw std::logic_error("no such source");
  }

  // The text output with the marks of its source taken out, as documented per command, and
  // perplexity's speed (which varies from run to run) masked. A mark that is not where it should
  // be is left in, so that the comparison fails.
  std::string canonical(const std::string& out, Source source) {
    std::string text = out;
    const bool from_lines = source == Source::kFile || source == Source::kStdin;
    switch (GetParam().source_mark) {
      case SourceMark::kNone:
        break;
      case SourceMark::kTextAbove: {
        const std::string above = GetParam().texts.at(0) + "\n";
        if (from_lines && text.starts_with(above)) text.erase(0, above.size());
        break;
      }
      case SourceMark::kLineLabel:
        if (from_lines)
          text = std::regex_replace(text, std::regex("\nline ([0-9]+): "), "\ntext $1: ");
        break;
      case SourceMark::kSourceLabel: {
        const std::string label = source == Source::kArgument ? "argument"
                                  : source == Source::kPrompt ? "--prompt"
                                  : source == Source::kFile
                                      ? "--file " + (scratch_ / "texts.txt").string()
                                      : "standard input";
        if (text.starts_with(label + ": ")) text.replace(0, label.size(), "TEXT");
        break;
      }
    }
    return std::regex_replace(text, std::regex("\\| [0-9]+ tokens/s"), "| N tokens/s");
  }

  // --json output: one document, or one object a line.
  std::vector<json> parse_json(const CommandResult& result) {
    if (GetParam().json_shape == JsonShape::kOneDocument) return {json::parse(result.out)};
    std::vector<json> objects;
    for (const std::string& line : split_lines_of(result.out)) objects.push_back(json::parse(line));
    EXPECT_TRUE(result.out.ends_with('\n'));
    return objects;
  }

  TempDir scratch_;
};

std::string command_label(const testing::TestParamInfo<TextCommand>& info) {
  std::string name = info.param.name;
  std::erase(name, '-');
  return name;
}

// (a) The same text as an argument, with -p, in a file and on standard input: the same plain
// text output (less the documented marks of where a text came from).
TEST_P(TextCommandTest, SameOutputWhateverTheSource) {
  const CommandResult argument = run(Source::kArgument);
  ASSERT_EQ(argument.exit_status, 0) << describe(argument);
  ASSERT_FALSE(argument.out.empty());
  const std::string expected = canonical(argument.out, Source::kArgument);
  for (const Source source : {Source::kPrompt, Source::kFile, Source::kStdin}) {
    SCOPED_TRACE(source_name(source));
    const CommandResult result = run(source);
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    EXPECT_EQ(canonical(result.out, source), expected);
  }
}

// (b) -o FILE: exactly what standard output had, and nothing on standard output.
TEST_P(TextCommandTest, OutputFileHoldsWhatStandardOutputHad) {
  const CommandResult printed = run(Source::kArgument);
  ASSERT_EQ(printed.exit_status, 0) << describe(printed);
  const std::filesystem::path path = scratch_ / "out.txt";
  const CommandResult written = run(Source::kArgument, {"-o", path.string()});
  ASSERT_EQ(written.exit_status, 0) << describe(written);
  EXPECT_EQ(written.out, "");
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(canonical(read_file(path), Source::kArgument),
            canonical(printed.out, Source::kArgument));
}

// -o /dev/stdout is standard output itself: the same bytes, there.
TEST_P(TextCommandTest, OutputToDevStdoutIsStandardOutput) {
  const CommandResult printed = run(Source::kArgument);
  ASSERT_EQ(printed.exit_status, 0) << describe(printed);
  const CommandResult through_path = run(Source::kArgument, {"-o", "/dev/stdout"});
  ASSERT_EQ(through_path.exit_status, 0) << describe(through_path);
  EXPECT_EQ(canonical(through_path.out, Source::kArgument),
            canonical(printed.out, Source::kArgument));
}

// A full standard output ends the command at once, with one line, however many texts are left
// (it is no bad text, after which the next text would run).
TEST_P(TextCommandTest, FullStandardOutputEndsTheCommandWithOneLine) {
  std::vector<std::string> args = {"-c", "exec \"$0\" \"$@\" > /dev/full", attn_binary().string()};
  const std::vector<std::string> command = command_line({});
  args.insert(args.end(), command.begin(), command.end());
  const int copies = GetParam().one_text ? 1 : 2;
  for (int i = 0; i < copies; ++i) {
    args.insert(args.end(), GetParam().texts.begin(), GetParam().texts.end());
  }
  const CommandResult result = run_program("/bin/sh", args);
  EXPECT_EQ(result.exit_status, 1) << describe(result);
  EXPECT_EQ(result.err, "attn: error: stdout: No space left on device\n");
}

// (c) --json parses, as one document or as JSON Lines, one object per text; a text from a line
// has the keys of a text given as an argument, plus "line".
TEST_P(TextCommandTest, JsonParsesWithTheSameKeysWhateverTheSource) {
  const TextCommand& command = GetParam();
  const CommandResult argument = run(Source::kArgument, {"--json"});
  ASSERT_EQ(argument.exit_status, 0) << describe(argument);
  const CommandResult lines = run(Source::kFile, {"--json"});
  ASSERT_EQ(lines.exit_status, 0) << describe(lines);
  std::vector<json> from_arguments, from_lines;
  ASSERT_NO_THROW(from_arguments = parse_json(argument)) << argument.out;
  ASSERT_NO_THROW(from_lines = parse_json(lines)) << lines.out;
  if (command.json_shape == JsonShape::kOneDocument) {
    ASSERT_EQ(from_arguments.size(), 1u);
    ASSERT_EQ(from_lines.size(), 1u);
    EXPECT_TRUE(from_arguments[0].is_object());
    EXPECT_EQ(keys_of(from_lines[0]), keys_of(from_arguments[0]));
    return;
  }
  // Per text: as many objects as texts (a corpus file is one text).
  const std::size_t texts = command.texts.size();
  ASSERT_EQ(from_arguments.size(), texts) << argument.out;
  ASSERT_EQ(from_lines.size(), command.corpus ? 1 : texts) << lines.out;
  std::set<std::string> line_keys;
  for (std::size_t i = 0; i < from_lines.size(); ++i) {
    ASSERT_TRUE(from_lines[i].is_object()) << lines.out;
    if (from_lines[i].contains("line")) {
      EXPECT_EQ(from_lines[i]["line"], i + 1);
    }
    line_keys = keys_of(from_lines[i]);
    line_keys.erase("line");
  }
  EXPECT_EQ(keys_of(from_arguments[0]), line_keys) << argument.out << lines.out;
  if (command.one_text) return;
  // Several arguments: one object each, with the same keys.
  std::vector<std::string> twice = command.texts;
  twice.insert(twice.end(), command.texts.begin(), command.texts.end());
  std::vector<std::string> args = command_line({"--json"});
  args.insert(args.end(), twice.begin(), twice.end());
  const CommandResult several = run_attn(args);
  ASSERT_EQ(several.exit_status, 0) << describe(several);
  std::vector<json> objects;
  ASSERT_NO_THROW(objects = parse_json(several)) << several.out;
  ASSERT_EQ(objects.size(), twice.size()) << several.out;
  for (const json& object : objects) {
    EXPECT_EQ(keys_of(object), line_keys) << several.out;
  }
}

// (d) An empty argument is run as typed, as Hugging Face runs it: where the tokenizer gives it
// tokens (BERT's [CLS] [SEP], Marian's </s>) the command runs it; where it gives none (GPT-2),
// exit status 1 and one line in the same words for every command. fill-mask and similarity
// have their own rules (a mask; two texts), so they get the empty text beside the usual one,
// and fill-mask's complaint is the missing mask.
TEST_P(TextCommandTest, EmptyArgumentRunsAsHuggingFaceRunsIt) {
  const TextCommand& command = GetParam();
  const CommandResult tokens = run_attn({"tokenize", "-m", model_dir().string(), "--json", ""});
  ASSERT_EQ(tokens.exit_status, 0) << describe(tokens);
  const bool gives_tokens = !json::parse(tokens.out)["ids"].empty();
  const bool two_texts = command.name == std::string("similarity");
  for (const std::string source : {"argument", "--prompt"}) {
    SCOPED_TRACE(source);
    std::vector<std::string> texts = {""};
    if (source == "--prompt") texts = {"-p", ""};
    if (two_texts) texts.push_back(command.texts.at(0));
    const CommandResult result = run_attn(command_line(texts));
    const std::string name = two_texts && source == "argument" ? "argument 1" : source;
    if (command.name == std::string("fill-mask")) {
      EXPECT_EQ(result.exit_status, 1) << describe(result);
      EXPECT_TRUE(result.err.starts_with("attn: error: " + name + ": no [MASK] token"))
          << result.err;
    } else if (gives_tokens || command.name == std::string("tokenize")) {
      EXPECT_EQ(result.exit_status, 0) << describe(result);
    } else {
      EXPECT_EQ(result.exit_status, 1) << describe(result);
      EXPECT_EQ(result.err, "attn: error: " + name + ": the text gives no tokens\n");
      EXPECT_EQ(result.out, "");
    }
  }
}

// (f) A bad line among good ones (not UTF-8), the one rule of the README's "Giving text and getting
// results": one error line naming it on stderr and exit status 1; a command with a result per
// text still gives the others theirs (JSON lines keep their "line"), a command with one result
// over all the texts gives none; -o leaves no file either way.
TEST_P(TextCommandTest, BadLineAmongGoodOnes) {
  const TextCommand& command = GetParam();
  if (command.corpus || command.one_text) GTEST_SKIP() << "reads one text, not lines";
  const std::string good = command.texts.at(0);
  std::vector<std::string> lines = {good, "bad \xff byte", good};
  if (command.name == std::string("similarity")) lines.push_back(command.texts.at(1));
  write_file(scratch_ / "bad.txt", file_contents(lines));
  const std::string file = (scratch_ / "bad.txt").string();
  const CommandResult result = run_attn(command_line({"-q", "--json", "-f", file}));
  EXPECT_EQ(result.exit_status, 1) << describe(result);
  EXPECT_EQ(result.err, "attn: error: --file " + file + ": line 2: invalid UTF-8 at byte 4\n");
  if (command.json_shape == JsonShape::kOneDocument) {
    EXPECT_EQ(result.out, "") << "one result over all the texts";
  } else {
    const std::vector<json> objects = parse_json(result);
    ASSERT_EQ(objects.size(), 2u) << result.out;
    EXPECT_EQ(objects[0]["line"], 1);
    EXPECT_EQ(objects[1]["line"], 3);
  }
  const std::filesystem::path output = scratch_ / "out.json";
  const CommandResult written =
      run_attn(command_line({"-q", "--json", "-f", file, "-o", output.string()}));
  EXPECT_EQ(written.exit_status, 1) << describe(written);
  EXPECT_FALSE(std::filesystem::exists(output));
}

// (e) An empty file, or standard input of blank lines only: exit status 1, "no text".
TEST_P(TextCommandTest, InputWithoutTextIsRefused) {
  const std::filesystem::path empty = scratch_ / "empty.txt";
  write_file(empty, "");
  const CommandResult from_file = run_attn(command_line({"-f", empty.string()}));
  EXPECT_EQ(from_file.exit_status, 1) << describe(from_file);
  EXPECT_TRUE(contains(from_file.err, "--file " + empty.string() + ": no text")) << from_file.err;
  EXPECT_EQ(from_file.out, "");
  const std::filesystem::path blank = scratch_ / "blank.txt";
  write_file(blank, "\n \t\n\r\n");
  const CommandResult from_stdin = run_attn(command_line({}), blank);
  EXPECT_EQ(from_stdin.exit_status, 1) << describe(from_stdin);
  EXPECT_TRUE(contains(from_stdin.err, "standard input: no text")) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, "");
}

// (f) A leading byte order mark and CRLF line ends change nothing (a corpus keeps its bytes, so
// only the mark is added there).
TEST_P(TextCommandTest, ByteOrderMarkAndCrlfChangeNothing) {
  const CommandResult plain = run(Source::kStdin);
  ASSERT_EQ(plain.exit_status, 0) << describe(plain);
  std::string windows = "\xEF\xBB\xBF";
  if (GetParam().corpus) {
    windows += GetParam().texts.at(0);
  } else {
    for (const std::string& text : GetParam().texts) windows += text + "\r\n";
  }
  const std::filesystem::path path = scratch_ / "windows.txt";
  write_file(path, windows);
  const CommandResult result = run_attn(command_line({}), path);
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(canonical(result.out, Source::kStdin), canonical(plain.out, Source::kStdin));
}

// (g) Texts given two ways (arguments and --file) are a usage error naming --file.
TEST_P(TextCommandTest, ArgumentsAndFileTogetherAreAUsageError) {
  std::vector<std::string> args = command_line({"-f", texts_file().string()});
  args.push_back(GetParam().texts.at(0));
  const CommandResult result = run_attn(args);
  EXPECT_EQ(result.exit_status, 2) << describe(result);
  EXPECT_TRUE(contains(result.err, "--file")) << result.err;
  EXPECT_EQ(result.out, "");
}

INSTANTIATE_TEST_SUITE_P(EveryTextCommand, TextCommandTest, testing::ValuesIn(text_commands()),
                         command_label);

// ---------------------------------------------------------------------------------------------
// Reading texts: the commands' own rules.

class TextInputTest : public testing::Test {
 protected:
  TempDir scratch_;
};

// A text is taken as typed: CLI11 read an argument in brackets as a list ("[MASK]" became
// "MASK", "[a,b]" two texts), here checked on the tokens tokenize --json gives for it.
TEST_F(TextInputTest, TextsInBracketsAreTakenAsTyped) {
  const auto tokens_of = [](const std::vector<std::string>& args) {
    std::vector<std::string> full = {"tokenize", "-m", bert(), "--json"};
    full.insert(full.end(), args.begin(), args.end());
    const CommandResult result = run_attn(full);
    EXPECT_EQ(result.exit_status, 0) << describe(result);
    std::vector<json> lines;
    for (const std::string& line : split_lines_of(result.out)) lines.push_back(json::parse(line));
    return lines;
  };
  std::vector<json> lines = tokens_of({"[MASK]", "[a,b]", "[CLS] [SEP]"});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["tokens"], json({"[CLS]", "[MASK]", "[SEP]"}));
  EXPECT_EQ(lines[1]["tokens"], json({"[CLS]", "[", "a", ",", "b", "]", "[SEP]"}));
  EXPECT_EQ(lines[2]["tokens"], json({"[CLS]", "[CLS]", "[SEP]", "[SEP]"}));
  // The same through -p, and after "--", where a text may start with "-".
  // Arguments come before --prompt texts.
  lines = tokens_of({"-p", "[MASK]", "--", "[a,b]", "-x"});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["tokens"], json({"[CLS]", "[", "a", ",", "b", "]", "[SEP]"}));
  EXPECT_EQ(lines[1]["tokens"], json({"[CLS]", "-", "x", "[SEP]"}));
  EXPECT_EQ(lines[2]["tokens"], json({"[CLS]", "[MASK]", "[SEP]"}));
  // An argument that is not an option's name is a text wherever it is, as CLI11 reads it.
  lines = tokens_of({"-- a, b", "-1.5"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["tokens"], json({"[CLS]", "-", "-", "a", ",", "b", "[SEP]"}));
  EXPECT_EQ(lines[1]["tokens"], json({"[CLS]", "-", "1", ".", "5", "[SEP]"}));
}

// A text of spaces given as an argument is a text, run as Hugging Face runs it; a blank line of a
// file is skipped.
TEST_F(TextInputTest, SpacesGivenAsAnArgumentAreAText) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"generate", "-m", gpt2(), "--temp", "0", "-n", "2", "--json", "   "},
           {"lens", "-m", gpt2(), "--json", "   "},
           {"embed", "-m", bert(), "--json", "   "},
           {"tokenize", "-m", bert(), "--json", "   "}}) {
    const CommandResult result = run_attn(args);
    ASSERT_EQ(result.exit_status, 0) << args[0] << ": " << describe(result);
    ASSERT_EQ(split_lines_of(result.out).size(), 1u) << args[0] << ": " << result.out;
  }
  const std::filesystem::path path = scratch_ / "blank.txt";
  write_file(path, "   \nThe cat\n");
  const CommandResult file =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "2", "--json", "-f", path.string()});
  ASSERT_EQ(file.exit_status, 0) << describe(file);
  EXPECT_EQ(split_lines_of(file.out).size(), 1u) << file.out;
}

// An option takes one value; the text after it is a text, not another of its values.
TEST_F(TextInputTest, AnOptionDoesNotSwallowTheTextAfterIt) {
  const std::filesystem::path input = scratch_ / "stdin.txt";
  write_file(input, "It was a dark night\n");
  const CommandResult stop = run_attn(
      {"generate", "-m", gpt2(), "--temp", "0", "-n", "5", "--json", "--stop", ".", "The jury"},
      input);
  const CommandResult given =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "5", "--json", "-p", "The jury"});
  ASSERT_EQ(stop.exit_status, 0) << describe(stop);
  ASSERT_EQ(given.exit_status, 0) << describe(given);
  EXPECT_EQ(json::parse(stop.out)["prompt"], "The jury");
  EXPECT_EQ(json::parse(stop.out)["prompt_ids"], json::parse(given.out)["prompt_ids"]);
  const CommandResult repeated =
      run_attn({"tokenize", "-m", bert(), "--json", "-p", "a", "-p", "b", "c"});
  ASSERT_EQ(repeated.exit_status, 0) << describe(repeated);
  EXPECT_EQ(split_lines_of(repeated.out).size(), 3u) << repeated.out;
}

// --prompt-file is one prompt, the whole file less one final newline (llama.cpp's -f).
TEST_F(TextInputTest, PromptFileIsOnePromptLessItsFinalNewline) {
  const std::filesystem::path path = scratch_ / "prompt.txt";
  write_file(path, "The cat\n");
  const CommandResult from_file = run_attn(
      {"generate", "-m", gpt2(), "--temp", "0", "-n", "4", "--prompt-file", path.string()});
  const CommandResult given =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "4", "-p", "The cat"});
  ASSERT_EQ(from_file.exit_status, 0) << describe(from_file);
  ASSERT_EQ(given.exit_status, 0) << describe(given);
  EXPECT_EQ(from_file.out, given.out);
  // Two lines are one prompt, the newline between them kept.
  write_file(path, "The cat\nThe dog\n");
  const CommandResult two_lines = run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "1",
                                            "--json", "--prompt-file", path.string()});
  ASSERT_EQ(two_lines.exit_status, 0) << describe(two_lines);
  const json out = json::parse(two_lines.out);
  EXPECT_EQ(out["prompt_ids"], json({464, 3797, 198, 464, 3290}));
  // Blank lines only: no prompt.
  write_file(path, "  \n");
  const CommandResult blank =
      run_attn({"generate", "-m", gpt2(), "-n", "1", "--prompt-file", path.string()});
  EXPECT_EQ(blank.exit_status, 1) << describe(blank);
  EXPECT_TRUE(contains(blank.err, "no text")) << blank.err;
  // And not together with another way of giving prompts.
  const CommandResult both =
      run_attn({"generate", "-m", gpt2(), "-n", "1", "--prompt-file", path.string(), "x"});
  EXPECT_EQ(both.exit_status, 2) << describe(both);
  EXPECT_TRUE(contains(both.err, "--prompt-file")) << both.err;
}

// generate -f: one prompt per line, one JSON line each, numbered, each as if given alone.
TEST_F(TextInputTest, GenerateFileOfTwoLinesGivesTwoJsonLines) {
  const std::filesystem::path path = scratch_ / "prompts.txt";
  write_file(path, "The cat\nA dog\n");
  const CommandResult result =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "3", "--json", "-f", path.string()});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<std::string> lines = split_lines_of(result.out);
  ASSERT_EQ(lines.size(), 2u) << result.out;
  const std::vector<std::string> prompts = {"The cat", "A dog"};
  for (std::size_t i = 0; i < 2; ++i) {
    const json line = json::parse(lines[i]);
    EXPECT_EQ(line["line"], i + 1);
    const CommandResult alone =
        run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "3", "--json", prompts[i]});
    ASSERT_EQ(alone.exit_status, 0) << describe(alone);
    const json expected = json::parse(alone.out);
    EXPECT_EQ(line["prompt_ids"], expected["prompt_ids"]);
    EXPECT_EQ(line["generated_ids"], expected["generated_ids"]);
    EXPECT_EQ(line["text"], expected["text"]);
  }
  // The text output: each prompt and its continuation, a blank line between them.
  const CommandResult text =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "3", "-f", path.string()});
  const CommandResult first =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "3", "The cat"});
  const CommandResult second =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "3", "A dog"});
  EXPECT_EQ(text.out, first.out + "\n" + second.out);
}

// perplexity: a file or standard input is one text, every byte of it (a corpus).
TEST_F(TextInputTest, PerplexityReadsAFileAsOneText) {
  const std::string corpus = "The cat sat.\nOn the mat.\n";
  const std::filesystem::path path = scratch_ / "corpus.txt";
  write_file(path, corpus);
  const CommandResult from_file =
      run_attn({"perplexity", "-m", gpt2(), "-q", "--json", "-f", path.string()});
  const CommandResult given = run_attn({"perplexity", "-m", gpt2(), "-q", "--json", corpus});
  ASSERT_EQ(from_file.exit_status, 0) << describe(from_file);
  ASSERT_EQ(given.exit_status, 0) << describe(given);
  ASSERT_EQ(split_lines_of(from_file.out).size(), 1u) << from_file.out;
  const json scored = json::parse(from_file.out);
  EXPECT_EQ(scored["tokens"], json::parse(given.out)["tokens"]);
  EXPECT_EQ(scored["nll_sum"], json::parse(given.out)["nll_sum"]);
}

// attention: exactly one text.
TEST_F(TextInputTest, AttentionTakesOneText) {
  const CommandResult two = run_attn({"attention", "-m", gpt2(), "a", "b"});
  EXPECT_EQ(two.exit_status, 2) << describe(two);
  EXPECT_TRUE(contains(two.err, "one text")) << two.err;
  const std::filesystem::path path = scratch_ / "two.txt";
  write_file(path, "a\nb\n");
  const CommandResult two_lines = run_attn({"attention", "-m", gpt2(), "-f", path.string()});
  EXPECT_EQ(two_lines.exit_status, 2) << describe(two_lines);
  EXPECT_EQ(two_lines.out, "");
}

// fill-mask --json: one object {"text", "masks"} per text however it is given ("line" for a line
// of a file), one text alone included (it was a bare array of masks).
TEST_F(TextInputTest, FillMaskJsonShapes) {
  const std::string text = "The [MASK] sat.";
  const CommandResult one = run_attn({"fill-mask", "-m", bert(), "-k", "2", "--json", text});
  ASSERT_EQ(one.exit_status, 0) << describe(one);
  const json alone = json::parse(one.out);
  EXPECT_EQ(keys_of(alone), (std::set<std::string>{"text", "masks"}));
  EXPECT_EQ(alone["text"], text);
  const json& masks = alone["masks"];
  ASSERT_TRUE(masks.is_array());
  ASSERT_EQ(masks.size(), 1u);
  EXPECT_EQ(masks[0]["candidates"].size(), 2u);
  const std::filesystem::path path = scratch_ / "one.txt";
  write_file(path, text + "\n");
  const CommandResult line =
      run_attn({"fill-mask", "-m", bert(), "-k", "2", "--json", "-f", path.string()});
  ASSERT_EQ(line.exit_status, 0) << describe(line);
  const json object = json::parse(line.out);
  EXPECT_EQ(keys_of(object), (std::set<std::string>{"line", "text", "masks"}));
  EXPECT_EQ(object["masks"], masks);
  const CommandResult two = run_attn({"fill-mask", "-m", bert(), "-k", "2", "--json", text, text});
  ASSERT_EQ(two.exit_status, 0) << describe(two);
  for (const std::string& each : split_lines_of(two.out)) {
    EXPECT_EQ(keys_of(json::parse(each)), (std::set<std::string>{"text", "masks"}));
  }
}

// translate < in.txt: plain text, one translation a line, a blank line for a blank line.
TEST_F(TextInputTest, TranslateStandardInputGivesPlainTextLines) {
  ATTN_REQUIRE_SHARED();
  const std::string model = (shared_dir() / "models" / "tiny-t5-random").string();
  if (!std::filesystem::exists(model)) ATTN_SKIP_UNLESS_CI(model << " not found; skipping");
  const std::filesystem::path path = scratch_ / "in.txt";
  write_file(path, "The house is wonderful.\n\nI like cats.\n");
  const CommandResult result = run_attn({"translate", "-m", model, "-n", "4", "-q"}, path);
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<std::string> lines = split_lines_of(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out;
  EXPECT_EQ(lines[1], "");
  const std::vector<std::string> sources = {"The house is wonderful.", "I like cats."};
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string& line = lines[i * 2];
    EXPECT_FALSE(line.starts_with("{")) << line;
    const CommandResult alone = run_attn({"translate", "-m", model, "-n", "4", "-q", sources[i]});
    EXPECT_EQ(line + "\n", alone.out);
  }
}

// Output that is line for line with its input keeps in step past a line that fails: the error
// line itself takes its place (translate dropped it, so line N no longer answered line N).
TEST_F(TextInputTest, LineForLineOutputMarksAFailedLine) {
  const std::filesystem::path path = scratch_ / "in.txt";
  write_file(path, "464 9002\n\n464 x\n482\n");
  const CommandResult decoded = run_attn({"tokenize", "-m", gpt2(), "--decode", "-f", path});
  EXPECT_EQ(decoded.exit_status, 1) << describe(decoded);
  const std::string error = "attn: error: --file " + path.string() +
                            ": line 3: expected token ids (numbers separated by spaces or "
                            "commas), found \"x\"\n";
  EXPECT_EQ(decoded.out, "The jury\n\n" + error + "ok\n");
  EXPECT_EQ(decoded.err, error);

  ATTN_REQUIRE_SHARED();
  const std::string model = (shared_dir() / "models" / "tiny-t5-random").string();
  if (!std::filesystem::exists(model)) ATTN_SKIP_UNLESS_CI(model << " not found; skipping");
  write_file(path, "The house is wonderful.\n\nbad \xff byte\nI like cats.\n");
  const CommandResult translated =
      run_attn({"translate", "-m", model, "-n", "4", "-q", "-f", path});
  EXPECT_EQ(translated.exit_status, 1) << describe(translated);
  const std::vector<std::string> lines = split_lines_of(translated.out);
  ASSERT_EQ(lines.size(), 4u) << translated.out;
  EXPECT_EQ(lines[1], "");
  EXPECT_EQ(lines[2] + "\n", translated.err);
  EXPECT_EQ(lines[2], "attn: error: --file " + path.string() + ": line 3: invalid UTF-8 at byte 4");
  EXPECT_EQ(lines[3] + "\n",
            run_attn({"translate", "-m", model, "-n", "4", "-q", "I like cats."}).out);
}

// ---------------------------------------------------------------------------------------------
// -o for every command but bench, and all-or-nothing.

TEST(OutputOptionTest, InfoTakesOutputAndJson) {
  TempDir scratch;
  const CommandResult printed = run_attn({"info", "-m", gpt2()});
  ASSERT_EQ(printed.exit_status, 0) << describe(printed);
  const std::filesystem::path path = scratch / "info.txt";
  const CommandResult written = run_attn({"info", "-m", gpt2(), "-o", path.string()});
  ASSERT_EQ(written.exit_status, 0) << describe(written);
  EXPECT_EQ(written.out, "");
  EXPECT_EQ(read_file(path), printed.out);
  const CommandResult as_json = run_attn({"info", "-m", gpt2(), "--json"});
  ASSERT_EQ(as_json.exit_status, 0) << describe(as_json);
  EXPECT_TRUE(json::accept(as_json.out)) << as_json.out;
  // One line, as every other --json object.
  EXPECT_EQ(split_lines_of(as_json.out).size(), 1u) << as_json.out;
}

TEST(OutputOptionTest, AFailedRunLeavesTheFileAsItWas) {
  TempDir scratch;
  const std::filesystem::path path = scratch / "out.txt";
  write_file(path, "before\n");
  const CommandResult failed = run_attn(
      {"generate", "-m", (scratch / "no-such-model").string(), "-o", path.string(), "The cat"});
  EXPECT_EQ(failed.exit_status, 1) << describe(failed);
  EXPECT_EQ(read_file(path), "before\n");
  // No temporary file left beside it.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(scratch.path())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"out.txt"});
  // A run in which one text of several fails (exit status 1) leaves it as it was too.
  const std::filesystem::path texts = scratch / "texts.txt";
  write_file(texts, "The man went to the [MASK].\n\xFF[MASK]\n");
  const CommandResult one_failed =
      run_attn({"fill-mask", "-m", bert(), "-q", "-f", texts.string(), "-o", path.string()});
  EXPECT_EQ(one_failed.exit_status, 1) << describe(one_failed);
  EXPECT_EQ(read_file(path), "before\n");
  // A run that succeeds replaces it whole.
  const CommandResult done = run_attn(
      {"generate", "-m", gpt2(), "-q", "--temp", "0", "-n", "2", "-o", path.string(), "The cat"});
  ASSERT_EQ(done.exit_status, 0) << describe(done);
  EXPECT_EQ(read_file(path), "The cat, and\n");
}

TEST(OutputOptionTest, AFullOutputFileEndsTheCommandWithOneLine) {
  const CommandResult result = run_attn({"generate", "-m", gpt2(), "-q", "--temp", "0", "-n", "2",
                                         "-o", "/dev/full", "The cat", "A dog"});
  EXPECT_EQ(result.exit_status, 1) << describe(result);
  EXPECT_EQ(result.err, "attn: error: -o /dev/full: cannot write: No space left on device\n");
}

// bench's -o is llama-bench's: the table's format, not the common file for the results.
TEST(OutputOptionTest, BenchOutputIsTheTableFormat) {
  const CommandResult help = run_attn({"bench", "--help"});
  ASSERT_EQ(help.exit_status, 0) << describe(help);
  EXPECT_TRUE(contains(help.out, "-o, --output FORMAT")) << help.out;
  EXPECT_FALSE(contains(help.out, "write the results to this file")) << help.out;
}

// ---------------------------------------------------------------------------------------------
// generate: sampling, refusals, seeds, context, aliases.

// tiny-gpt2-brown's files beside a generation_config.json of our own.
class GenerationConfigFolder {
 public:
  explicit GenerationConfigFolder(const std::string& generation_config) {
    for (const auto& entry :
         std::filesystem::directory_iterator(shipped_model("tiny-gpt2-brown"))) {
      if (entry.path().filename() == "generation_config.json") continue;
      std::filesystem::create_symlink(entry.path(), folder_ / entry.path().filename().string());
    }
    write_file(folder_ / "generation_config.json", generation_config);
  }
  std::string path() const { return folder_.path().string(); }

 private:
  TempDir folder_;
};

constexpr const char* kGreedyConfig =
    R"({"do_sample": false, "bos_token_id": 50256, "eos_token_id": 50256,)"
    R"( "repetition_penalty": 1.3, "temperature": 0.7, "top_p": 0.9})";

// A sampling option turns sampling on over generation_config.json's do_sample false; without
// one, the folder's greedy decoding.
TEST(GenerateSamplingTest, SamplingOptionsTurnSamplingOnOverDoSampleFalse) {
  const GenerationConfigFolder folder(kGreedyConfig);
  auto run_with = [&](std::vector<std::string> options) {
    std::vector<std::string> args = {"generate", "-m", folder.path(), "-n", "8", "-v"};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("The cat");
    const CommandResult result = run_attn(args);
    EXPECT_EQ(result.exit_status, 0) << describe(result);
    return result;
  };
  const std::string greedy = run_with({}).out;
  EXPECT_EQ(greedy, run_with({"--temp", "0"}).out);
  for (const std::vector<std::string>& option : {std::vector<std::string>{"--temp", "0.9"},
                                                 {"--top-k", "40"},
                                                 {"--top-p", "0.95"},
                                                 {"--min-p", "0.05"},
                                                 {"--typical-p", "0.9"},
                                                 {}}) {
    const std::string name = option.empty() ? "--seed" : option[0];
    SCOPED_TRACE(name);
    // Some seed among a few samples something other than the greedy text.
    bool sampled = false;
    for (const char* seed : {"2", "3"}) {
      std::vector<std::string> args = option;
      args.insert(args.end(), {"--seed", seed});
      const CommandResult result = run_with(args);
      sampled = sampled || result.out != greedy;
      // -v says why (--temp above 0 samples by itself: there is nothing to override).
      if (name != "--temp") {
        EXPECT_TRUE(contains(result.err, name)) << result.err;
        EXPECT_TRUE(
            contains(result.err, ": sampling, over generation_config.json's do_sample false"))
            << result.err;
      }
      if (sampled) break;
    }
    EXPECT_TRUE(sampled) << "every seed gave the greedy text";
  }
}

// Each option that would do nothing is refused with exit status 2 and a message naming it.
TEST(GenerateRefusalTest, OptionsThatDoNothingAreRefused) {
  struct Refusal {
    std::vector<std::string> options;
    std::string named;
  };
  const std::vector<Refusal> refusals = {
      {{"--num-return", "2"}, "--num-return"},
      {{"--length-penalty", "1.5"}, "--length-penalty"},
      {{"--early-stopping"}, "--early-stopping"},
      {{"--beams", "1", "--num-return", "1"}, "--num-return"},
      {{"--beams", "2", "--temp", "0.7"}, "--temp"},
      {{"--beams", "2", "--temp", "0"}, "--temp"},
      {{"--beams", "2", "--top-k", "5"}, "--top-k"},
      {{"--beams", "2", "--top-p", "0.5"}, "--top-p"},
      {{"--beams", "2", "--min-p", "0.1"}, "--min-p"},
      {{"--beams", "2", "--typical-p", "0.5"}, "--typical-p"},
      {{"--beams", "2", "--seed", "3"}, "--seed"},
      {{"--temp", "0", "--top-k", "5"}, "--top-k"},
      {{"--temp", "0", "--top-p", "0.5"}, "--top-p"},
      {{"--temp", "0", "--min-p", "0.1"}, "--min-p"},
      {{"--temp", "0", "--typical-p", "0.5"}, "--typical-p"},
      {{"--temp", "0", "--seed", "3"}, "--seed"},
      {{"--stream"}, "--stream"},
      {{"--seed", "9007199254740992"}, "--seed"},  // 2^53
      {{"--seed", "-2"}, "--seed"},
      {{"--seed", "1.5"}, "--seed"},
  };
  for (const Refusal& refusal : refusals) {
    std::vector<std::string> args = {"generate", "-m", gpt2(), "-n", "2"};
    args.insert(args.end(), refusal.options.begin(), refusal.options.end());
    args.push_back("The cat");
    const CommandResult result = run_attn(args);
    std::string shown;
    for (const std::string& option : refusal.options) shown += option + " ";
    EXPECT_EQ(result.exit_status, 2) << shown << describe(result);
    EXPECT_TRUE(contains(result.err, refusal.named)) << shown << result.err;
    EXPECT_EQ(result.out, "") << shown;
  }
}

// --seed -1 is a random seed, below 2^53; 2^53 - 1 is the largest accepted. The seed --json
// prints gives the same text back.
TEST(GenerateSeedTest, JsonSeedReproducesTheText) {
  const std::vector<std::string> base = {"generate", "-m", gpt2(),   "--temp", "1",
                                         "-n",       "8",  "--json", "-q",     "The cat"};
  auto run_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult result = run_attn(args);
    EXPECT_EQ(result.exit_status, 0) << describe(result);
    return json::parse(result.out);
  };
  for (const std::vector<std::string>& random : {std::vector<std::string>{}, {"--seed", "-1"}}) {
    const json first = run_with(random);
    ASSERT_TRUE(first["seed"].is_number_unsigned()) << first;
    const std::uint64_t seed = first["seed"];
    EXPECT_LT(seed, std::uint64_t(1) << 53);
    const json again = run_with({"--seed", std::to_string(seed)});
    EXPECT_EQ(again["seed"], first["seed"]);
    EXPECT_EQ(again["generated_ids"], first["generated_ids"]);
    EXPECT_EQ(again["text"], first["text"]);
    const json alias = run_with({"-s", std::to_string(seed)});
    EXPECT_EQ(alias["text"], first["text"]);
  }
  const json largest = run_with({"--seed", "9007199254740991"});
  EXPECT_EQ(largest["seed"], 9007199254740991ull);
}

// -c/--ctx-size caps the positions the prompt and the new tokens use: stop_reason "context".
TEST(GenerateContextTest, ContextSizeStopsGeneration) {
  for (const char* option : {"-c", "--ctx-size"}) {
    const CommandResult result = run_attn(
        {"generate", "-m", gpt2(), "--temp", "0", "-n", "10", option, "4", "--json", "The cat"});
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    const json out = json::parse(result.out);
    EXPECT_EQ(out["stop_reason"], "context");
    // The last pass reads position 4 (the 2 prompt tokens and 2 new ones) and predicts one more.
    EXPECT_EQ(out["prompt_ids"].size() + out["generated_ids"].size(), 5u) << out;
  }
  // A prompt longer than -c fails, naming -c.
  const CommandResult longer =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-c", "1", "The cat"});
  EXPECT_EQ(longer.exit_status, 1) << describe(longer);
  EXPECT_TRUE(contains(longer.err, "-c context of 1")) << longer.err;
}

// llama.cpp's spellings: -n/--n-predict/--max-new-tokens, -s/--seed, --color (plain without a
// terminal).
TEST(GenerateAliasTest, LlamaCppSpellings) {
  auto out = [](std::vector<std::string> options) {
    std::vector<std::string> args = {"generate", "-m", gpt2(), "-q"};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("The cat");
    const CommandResult result = run_attn(args);
    EXPECT_EQ(result.exit_status, 0) << describe(result);
    return result.out;
  };
  const std::string three = out({"--temp", "0", "-n", "3"});
  EXPECT_EQ(three, "The cat, and the\n");
  EXPECT_EQ(out({"--temp", "0", "--n-predict", "3"}), three);
  EXPECT_EQ(out({"--temp", "0", "--max-new-tokens", "3"}), three);
  EXPECT_EQ(out({"--temp", "0", "-n", "3", "--color"}), three);  // standard output is a file
  EXPECT_EQ(out({"-n", "6", "-s", "11"}), out({"-n", "6", "--seed", "11"}));
  // --no-display-prompt: the continuation alone.
  EXPECT_EQ(out({"--temp", "0", "-n", "3", "--no-display-prompt"}), ", and the\n");
  // llama.cpp's other spellings: --temperature, --max-tokens (its server's), and --repeat-last-n
  // (a window for the penalty, which without a penalty does nothing).
  EXPECT_EQ(out({"--temperature", "0", "--max-tokens", "3"}), three);
  EXPECT_EQ(out({"--temp", "0", "-n", "3", "--repeat-last-n", "64"}), three);
  // Over 16 tokens a penalty of 2 changes the text, and --repeat-last-n 0 turns it off.
  const std::string sixteen = out({"--temp", "0", "-n", "16"});
  EXPECT_NE(out({"--temp", "0", "-n", "16", "--repeat-penalty", "2"}), sixteen);
  EXPECT_EQ(out({"--temp", "0", "-n", "16", "--repeat-penalty", "2", "--repeat-last-n", "0"}),
            sixteen);
  // An option given twice keeps the last, as llama.cpp's do (CLI11 refused "At Most 1 required
  // but received 2").
  EXPECT_EQ(out({"--temp", "0", "--temp", "0.9", "-s", "5", "-n", "6", "-n", "8"}),
            out({"--temp", "0.9", "-s", "5", "-n", "8"}));
  // llama.cpp's GPU options are taken, with one line saying attn runs on the CPU (-ngl was read
  // as -n gl, and -fa as an unknown option).
  for (const std::vector<std::string>& gpu : {std::vector<std::string>{"-ngl", "99"},
                                              {"--n-gpu-layers", "99"},
                                              {"-fa"},
                                              {"-fa", "on"},
                                              {"--flash-attn"}}) {
    std::vector<std::string> args = {"generate", "-m", gpt2(), "--temp", "0", "-n", "3"};
    args.insert(args.end(), gpu.begin(), gpu.end());
    args.push_back("The cat");
    const CommandResult taken = run_attn(args);
    EXPECT_EQ(taken.exit_status, 0) << describe(taken);
    EXPECT_EQ(taken.out, three) << gpu[0];
    EXPECT_TRUE(contains(taken.err, gpu[0] + ": attn runs on the CPU")) << taken.err;
  }
}

// ---------------------------------------------------------------------------------------------
// A friendly command line.

TEST(FriendlyCliTest, UnknownOptionsAndCommandsGetASuggestion) {
  const CommandResult option = run_attn({"generate", "-m", gpt2(), "--sed", "3", "The cat"});
  EXPECT_EQ(option.exit_status, 2) << describe(option);
  EXPECT_TRUE(contains(option.err, "did you mean --seed?")) << option.err;
  EXPECT_TRUE(contains(option.err, "see attn generate --help")) << option.err;
  EXPECT_EQ(split_lines_of(option.err).size(), 1u) << option.err;
  const CommandResult embed = run_attn({"embed", "--polling", "mean", "x"});
  EXPECT_EQ(embed.exit_status, 2) << describe(embed);
  EXPECT_TRUE(contains(embed.err, "did you mean --pooling?")) << embed.err;
  EXPECT_TRUE(contains(embed.err, "see attn embed --help")) << embed.err;
  for (const auto& [typo, meant] : std::vector<std::pair<std::string, std::string>>{
           {"genrate", "generate"}, {"fill_mask", "fill-mask"}, {"tokenise", "tokenize"}}) {
    const CommandResult command = run_attn({typo, "x"});
    EXPECT_EQ(command.exit_status, 2) << describe(command);
    EXPECT_TRUE(contains(command.err, "did you mean " + meant + "?")) << command.err;
  }
  // Nothing near: no suggestion.
  const CommandResult far = run_attn({"xyzzyplugh"});
  EXPECT_EQ(far.exit_status, 2) << describe(far);
  EXPECT_FALSE(contains(far.err, "did you mean")) << far.err;
}

// Options before the command, a model folder without -m, and `attn help [COMMAND]`.
TEST(FriendlyCliTest, MisplacedArgumentsSayWhereTheyGo) {
  const CommandResult before = run_attn({"-m", bert(), "fill-mask", "A [MASK]."});
  EXPECT_EQ(before.exit_status, 2) << describe(before);
  EXPECT_TRUE(contains(before.err, "options go after it: attn fill-mask -m ...")) << before.err;
  EXPECT_EQ(split_lines_of(before.err).size(), 1u) << before.err;
  const CommandResult folder = run_attn({"info", bert()});
  EXPECT_EQ(folder.exit_status, 2) << describe(folder);
  EXPECT_TRUE(contains(folder.err, "a model folder goes after -m: -m " + bert())) << folder.err;
  const CommandResult not_folder = run_attn({"info", "no-such-folder"});
  EXPECT_EQ(not_folder.exit_status, 2) << describe(not_folder);
  EXPECT_FALSE(contains(not_folder.err, "goes after -m")) << not_folder.err;
  // A weights file where its folder is meant.
  TempDir dir;
  write_file(dir / "model.gguf", "GGUF");
  const CommandResult gguf = run_attn({"generate", "-m", (dir / "model.gguf").string(), "x"});
  EXPECT_EQ(gguf.exit_status, 1) << describe(gguf);
  EXPECT_TRUE(contains(gguf.err, "not GGUF files")) << gguf.err;
  const CommandResult weights = run_attn(
      {"generate", "-m", (shipped_model("tiny-gpt2-brown") / "model.safetensors").string(), "x"});
  EXPECT_EQ(weights.exit_status, 1) << describe(weights);
  EXPECT_TRUE(contains(weights.err, "-m takes the folder that holds config.json")) << weights.err;
  const CommandResult help = run_attn({"help"});
  EXPECT_EQ(help.exit_status, 0) << describe(help);
  EXPECT_EQ(help.out, run_attn({"--help"}).out);
  const CommandResult help_info = run_attn({"help", "info"});
  EXPECT_EQ(help_info.exit_status, 0) << describe(help_info);
  EXPECT_EQ(help_info.out, run_attn({"info", "--help"}).out);
}

// Help shows each option as "-n, --max-new-tokens INT  description": no validator ranges
// ("INT:INT", ":>= 0"), no "=default", no "{false}" on negated flags, no Excludes/Needs.
TEST(FriendlyCliTest, HelpHasNoParserInternals) {
  for (const char* command : {"", "generate", "chat", "translate", "classify", "rerank", "ner",
                              "fill-mask", "embed", "similarity", "attention", "heads", "lens",
                              "tokenize", "info", "perplexity", "bench", "serve"}) {
    SCOPED_TRACE(command);
    std::vector<std::string> args;
    if (*command) args.push_back(command);
    args.push_back("--help");
    const CommandResult help = run_attn(args);
    ASSERT_EQ(help.exit_status, 0) << describe(help);
    ASSERT_FALSE(help.out.empty());
    for (const char* internal :
         {"INT:INT", "{false}", "{true}", "Excludes", "Needs:", "[Option", ":NUMBER", "TEXT:"}) {
      EXPECT_FALSE(contains(help.out, internal)) << internal << "\n" << help.out;
    }
    for (const std::string& line : split_lines_of(help.out)) {
      if (!line.starts_with("  -")) continue;
      // The names and the value's type, before the description.
      const std::string names = line.substr(0, line.find("  ", 2));
      EXPECT_EQ(names.find_first_of("=:[]"), std::string::npos) << line;
    }
    // A command's help ends with examples; an option that takes a file says FILE.
    if (*command) {
      EXPECT_TRUE(contains(help.out, "\nExamples:\n  attn " + std::string(command))) << help.out;
    }
    EXPECT_FALSE(contains(help.out, " PATH ")) << help.out;
  }
}

// The families a command takes come from the model registry, all of them: fill-mask's help left
// out MPNet, embed's error named 5 of the 7 encoder families.
TEST(FriendlyCliTest, FamilyListsNameEveryFamily) {
  const std::string summary = run_attn({"--help"}).out;
  const CommandResult embed = run_attn({"embed", "-m", gpt2(), "a"});
  EXPECT_EQ(embed.exit_status, 2) << describe(embed);
  for (const char* encoder :
       {"BERT", "RoBERTa", "XLM-R", "DistilBERT", "ALBERT", "MPNet", "ModernBERT"}) {
    EXPECT_TRUE(contains(summary, std::string(encoder) + ",") ||
                contains(summary, std::string(encoder) + ")"))
        << encoder << "\n"
        << summary;
    EXPECT_TRUE(contains(embed.err, encoder)) << embed.err;
  }
  for (const char* decoder : {"GPT-2", "Llama", "Mistral", "Qwen3", "Gemma-3", "Phi-3", "BLOOM"}) {
    EXPECT_TRUE(contains(summary, decoder)) << decoder << "\n" << summary;
  }
}

// ---------------------------------------------------------------------------------------------
// Embeddings of a plain encoder, shortest floats, plurals.

TEST(EmbedPlainEncoderTest, MeanPoolingWithANote) {
  for (const char* command : {"embed", "similarity"}) {
    SCOPED_TRACE(command);
    const CommandResult result = run_attn({command, "-m", bert(), "The cat sat.", "A dog ran."});
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    EXPECT_FALSE(result.out.empty());
    const std::vector<std::string> err = split_lines_of(result.err);
    ASSERT_EQ(err.size(), 1u) << result.err;
    EXPECT_TRUE(contains(err[0], "mean pooling")) << result.err;
    EXPECT_TRUE(contains(err[0], "modules.json")) << result.err;
    // --pooling mean: the same vectors, without the note.
    const CommandResult asked =
        run_attn({command, "-m", bert(), "--pooling", "mean", "The cat sat.", "A dog ran."});
    ASSERT_EQ(asked.exit_status, 0) << describe(asked);
    EXPECT_EQ(asked.out, result.out);
    EXPECT_FALSE(contains(asked.err, "mean pooling")) << asked.err;
  }
}

TEST(InfoTest, FloatsInShortestForm) {
  const GenerationConfigFolder folder(kGreedyConfig);
  const CommandResult as_json = run_attn({"info", "-m", folder.path(), "--json"});
  ASSERT_EQ(as_json.exit_status, 0) << describe(as_json);
  const CommandResult text = run_attn({"info", "-m", folder.path()});
  ASSERT_EQ(text.exit_status, 0) << describe(text);
  for (const CommandResult* result : {&as_json, &text}) {
    EXPECT_TRUE(contains(result->out, "\"repetition_penalty\":")) << result->out;
    for (const char* expected : {"1.3", "0.7", "0.9"}) {
      EXPECT_TRUE(contains(result->out, expected)) << expected << "\n" << result->out;
    }
    for (const char* long_form : {"1.2999", "0.6999", "0.8999", "00000"}) {
      EXPECT_FALSE(contains(result->out, long_form)) << long_form << "\n" << result->out;
    }
  }
  const json defaults = json::parse(as_json.out)["generation_defaults"];
  EXPECT_EQ(defaults["repetition_penalty"].dump(), "1.3");
  EXPECT_EQ(defaults["do_sample"], false);
}

TEST(LogTest, PluralsAreRight) {
  const CommandResult one =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "1", "The"});  // 1 prompt token
  ASSERT_EQ(one.exit_status, 0) << describe(one);
  for (const char* part : {"prompt 1 token,", "decode 0 passes,", "| 1 new token,"}) {
    EXPECT_TRUE(contains(one.err, part)) << part << "\n" << one.err;
  }
  const CommandResult two = run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "2", "The"});
  ASSERT_EQ(two.exit_status, 0) << describe(two);
  for (const char* part : {"decode 1 pass,", "| 2 new tokens,"}) {
    EXPECT_TRUE(contains(two.err, part)) << part << "\n" << two.err;
  }
  const CommandResult three =
      run_attn({"generate", "-m", gpt2(), "--temp", "0", "-n", "3", "The cat"});
  ASSERT_EQ(three.exit_status, 0) << describe(three);
  for (const char* part : {"prompt 2 tokens,", "decode 2 passes,", "| 3 new tokens,"}) {
    EXPECT_TRUE(contains(three.err, part)) << part << "\n" << three.err;
  }
  const CommandResult perplexity = run_attn({"perplexity", "-m", gpt2(), "The cat sat."});
  ASSERT_EQ(perplexity.exit_status, 0) << describe(perplexity);
  EXPECT_TRUE(contains(perplexity.out, "in 1 window of")) << perplexity.out;
  EXPECT_FALSE(contains(perplexity.out, "1 windows")) << perplexity.out;
}

// ---------------------------------------------------------------------------------------------
// The README.

// Every docs/examples/ file the README names is shipped, and its quick start runs as written
// (attn standing for the executable under test; the examples' files found where they are).
TEST(ReadmeTest, QuickStartRunsAndItsExampleFilesAreShipped) {
  const std::filesystem::path examples = source_dir() / "docs" / "examples";
  const std::string readme = read_file(source_dir() / "README.md");
  const std::regex named("docs/examples/([A-Za-z0-9_.-]+)");
  int files = 0;
  for (std::sregex_iterator it(readme.begin(), readme.end(), named), end; it != end; ++it) {
    EXPECT_TRUE(std::filesystem::is_regular_file(examples / (*it)[1].str())) << (*it)[0];
    ++files;
  }
  EXPECT_GT(files, 5);
  const std::size_t start = readme.find("```sh\n", readme.find("## Quick start"));
  ASSERT_NE(start, std::string::npos);
  const std::size_t end = readme.find("```", start + 6);
  TempDir scratch;  // the commands' output files go here
  int commands = 0;
  for (std::string line : split_lines_of(readme.substr(start + 6, end - start - 6))) {
    if (!line.starts_with("attn ")) continue;  // the install line
    line = line.substr(0, line.find("   # "));
    line = std::regex_replace(line, std::regex("docs/examples/"), examples.string() + "/");
    const std::string script = "cd '" + scratch.path().string() + "' && attn() { '" +
                               attn_binary().string() + "' \"$@\"; } && " + line;
    const CommandResult result = run_program("/bin/sh", {"-c", script});
    EXPECT_EQ(result.exit_status, 0) << line << "\n" << describe(result);
    ++commands;
  }
  EXPECT_GE(commands, 5);
}

}  // namespace
}  // namespace attn::test
