// The attention page's view of an encoder-decoder document (Marian, T5): the encoder, decoder
// and cross-attention sections, the lines between target and source tokens, and the address
// that preselects a view. The CLI does not write such documents yet, so the page is built here
// from the template (kAttentionViewHtml) and a document in the format `attn attention` will
// write, made from the Hugging Face golden of tiny-marian-random; headless chromium runs it.
//
// ATTN_CROSS_VIEW_PAGE=FILE makes the test also write the page it checks (golden tokens as they
// are) to FILE; docs/cross_attention.png is that page's screenshot, `chromium --headless
// --screenshot=docs/cross_attention.png --window-size=1100,800
// 'file://FILE#section=cross&layer=1&head=0&query=3'`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "src/tasks/attention_view_html.h"  // generated from src/tasks/attention_view.html
#include "tests/chromium_util.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// [layer][head][query][key] as the document's sections: the chosen layers and heads only,
// each weight rounded to 4 decimals (attn's default --precision).
json attention_section(const json& weights, const std::vector<int>& layers,
                       const std::vector<int>& heads) {
  json section = json::array();
  for (int layer : layers) {
    json entry = {{"layer", layer}, {"heads", json::array()}};
    for (int head : heads) {
      json rows = weights[layer][head];
      for (json& row : rows) {
        for (json& weight : row) weight = std::round(weight.get<double>() * 1e4) / 1e4;
      }
      entry["heads"].push_back({{"head", head}, {"weights", rows}});
    }
    section.push_back(entry);
  }
  return section;
}

// The document `attn attention --format json` writes for an encoder-decoder model.
json encoder_decoder_document(const json& golden, const std::vector<int>& layers,
                              const std::vector<int>& heads) {
  return {{"model", "tiny-marian-random"},
          {"model_type", "marian"},
          {"text", golden["text"]},
          {"tokens", golden["tokens"]},
          {"token_ids", golden["ids"]},
          {"decoder_tokens", golden["decoder_tokens"]},
          {"decoder_ids", golden["decoder_ids"]},
          {"n_layers", golden["encoder_shape"][0]},
          {"n_heads", golden["encoder_shape"][1]},
          {"n_decoder_layers", golden["decoder_shape"][0]},
          {"n_decoder_heads", golden["decoder_shape"][1]},
          {"encoder", attention_section(golden["encoder_attentions"], layers, heads)},
          {"decoder", attention_section(golden["decoder_attentions"], layers, heads)},
          {"cross", attention_section(golden["cross_attentions"], layers, heads)}};
}

// The page attn writes for a document: the template with the JSON in place of the marker, every
// "<" written as \u003c (as attn does) so that no token can close the <script> element.
std::string page_for(const json& document) {
  std::string data;
  for (char c : document.dump()) data += c == '<' ? std::string("\\u003c") : std::string(1, c);
  const std::string_view marker = "{{ATTENTION_DATA}}";
  std::string page(kAttentionViewHtml);
  const std::size_t at = page.find(marker);
  EXPECT_NE(at, std::string::npos);
  return page.replace(at, marker.size(), data);
}

// The DOM of a page after its scripts ran (headless chromium --dump-dom), giving up after a
// minute.
std::string rendered_dom(const std::string& chromium, const fs::path& page,
                         const std::string& address) {
  const CommandResult result =
      run_chromium(chromium, "file://" + page.string() + address, {"--dump-dom"});
  EXPECT_EQ(result.exit_status, 0) << describe(result);
  return result.out;
}

long count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

// The page shows each token once, in order, as text, as a <span class="CLASS"> (" active" added
// to the query's): every token of `tokens`, the one at `active` marked (-1: none).
void expect_token_spans(const std::string& dom, const std::string& span_class, const json& tokens,
                        int active) {
  const std::regex span("<span class=\"" + span_class + "( active)?\" data-index=\"(\\d+)\"[^>]*>" +
                        "([^<]*)</span>");
  std::size_t i = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), span); it != std::sregex_iterator();
       ++it, ++i) {
    ASSERT_LT(i, tokens.size()) << span_class << ": more elements than tokens";
    EXPECT_EQ((*it)[2].str(), std::to_string(i)) << span_class << ": out of order";
    EXPECT_EQ((*it)[3].str(), html_escape(tokens[i].get<std::string>())) << span_class << " " << i;
    EXPECT_EQ((*it)[1].matched, int(i) == active) << span_class << " " << i;
  }
  EXPECT_EQ(i, tokens.size()) << span_class << ": one element per token";
}

// How many weights of a head get a line: those of at least 1% of the head's largest (fainter
// ones would not show); `row` >= 0: of that query's row only.
long drawn_lines(const json& weights, int row = -1) {
  double largest = 0;
  for (const json& r : weights) {
    for (const json& w : r) largest = std::max(largest, w.get<double>());
  }
  long lines = 0;
  for (std::size_t q = 0; q < weights.size(); ++q) {
    if (row >= 0 && int(q) != row) continue;
    for (const json& w : weights[q]) lines += w.get<double>() >= 0.01 * largest;
  }
  return lines;
}

class AttentionCrossView : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  }

  // Writes the page for `document` and returns its DOM once the script ran at `address`, and
  // then `actions` (a script run after the page's, playing the user).
  std::string render(const json& document, const std::string& address,
                     const std::string& actions = "") {
    std::string html = page_for(document);
    const std::size_t end = html.rfind("</body>");
    EXPECT_NE(end, std::string::npos);
    if (!actions.empty()) html.insert(end, "<script>\n" + actions + "\n</script>\n");
    const fs::path page = scratch_ / "page.html";
    write_file(page, html);
    return rendered_dom(chromium_, page, address);
  }

  std::string chromium_;
  TempDir scratch_;
};

// An ordinary (decoder-only or encoder) document shows one section, as before: no section
// selector, no cross-attention view.
TEST_F(AttentionCrossView, OrdinaryDocumentHasNoSections) {
  const json document = {
      {"model", "m"},
      {"model_type", "gpt2"},
      {"text", "a <b>"},
      {"tokens", {"a", " <b>"}},
      {"token_ids", {64, 1279}},
      {"n_layers", 1},
      {"n_heads", 1},
      {"attention",
       {{{"layer", 0}, {"heads", {{{"head", 0}, {"weights", {{1, 0}, {0.5, 0.5}}}}}}}}}};
  const std::string dom = render(document, "#layer=0&head=0&query=1");
  expect_token_spans(dom, "token", document["tokens"], 1);
  EXPECT_NE(dom.find("m (gpt2) · 2 tokens · layer 0 · head 0 · query 1 \" &lt;b&gt;\""),
            std::string::npos);
  EXPECT_NE(dom.find("<label id=\"section-control\" hidden=\"\">"), std::string::npos);
  EXPECT_NE(dom.find("<div id=\"cross-view\" hidden=\"\">"), std::string::npos);
  EXPECT_EQ(count(dom, "<line\\b"), 0);
}

class AttentionCrossViewGolden : public AttentionCrossView {
 protected:
  void SetUp() override {
    AttentionCrossView::SetUp();
    if (IsSkipped()) return;
    ATTN_REQUIRE_SHARED();
    golden_ = read_jsonl(shared_dir() / "golden/tiny-marian-random/attention.jsonl").at(0);
    // Layers 0-1 and heads 0 and 2 (head numbers differ from list positions).
    document_ = encoder_decoder_document(golden_, {0, 1}, {0, 2});
  }

  const json& weights(const char* section, int layer_index, int head_index) const {
    return document_[section][layer_index]["heads"][head_index]["weights"];
  }

  json golden_;
  json document_;
};

TEST_F(AttentionCrossViewGolden, PreselectedCrossAttention) {
  if (const char* keep = std::getenv("ATTN_CROSS_VIEW_PAGE")) write_file(keep, page_for(document_));
  // Markup in tokens is text: the page must show it, not run it.
  document_["tokens"][1] = "a</script><b>x & y";
  document_["decoder_tokens"][2] = "<b>bold</b> &amp;";
  const json& source = document_["tokens"];
  const json& target = document_["decoder_tokens"];
  const std::size_t s = source.size();
  const std::size_t t = target.size();
  ASSERT_EQ(s, 8u);
  ASSERT_EQ(t, 12u);
  const std::string dom = render(document_, "#section=cross&layer=1&head=2&query=3");

  // Both columns, in order; target 3 is the query.
  expect_token_spans(dom, "token target", target, 3);
  expect_token_spans(dom, "token source", source, -1);
  EXPECT_EQ(count(dom, "class=\"token\""), 0) << "no token strip in the cross-attention view";
  EXPECT_NE(dom.find("tiny-marian-random (marian) · cross-attention · 12 target × 8 source tokens "
                     "· layer 1 · head 2 · query 3 \"" +
                     html_escape(target[3].get<std::string>()) + "\""),
            std::string::npos);
  // The selectors: the three sections, the dumped layers and heads by number.
  EXPECT_NE(dom.find("<option value=\"0\">encoder self-attention</option><option value=\"1\">"
                     "decoder self-attention</option><option value=\"2\">cross-attention</option>"),
            std::string::npos);
  EXPECT_NE(dom.find("<option value=\"0\">layer 0</option><option value=\"1\">layer 1</option>"
                     "</select>"),
            std::string::npos);
  EXPECT_NE(dom.find("<option value=\"0\">head 0</option><option value=\"1\">head 2</option>"
                     "</select>"),
            std::string::npos);

  // A line for each weight that shows, the query's in front and marked.
  const json& head = weights("cross", 1, 1);
  EXPECT_EQ(count(dom, "<line\\b"), drawn_lines(head));
  EXPECT_EQ(count(dom, "<line [^>]*data-query=\"3\" data-key=\"\\d+\" class=\"active\""),
            drawn_lines(head, 3));
  EXPECT_EQ(count(dom, "class=\"active\""), drawn_lines(head, 3))
      << "only the query's lines are marked";
  EXPECT_EQ(count(dom, "<svg id=\"cross-lines\"[^>]* class=\"focused\""), 1);

  // The heat map: T x S, decoder tokens as rows, source tokens as columns, the query's row
  // highlighted (22-pixel cells).
  EXPECT_NE(dom.find("<canvas id=\"heatmap\" width=\"8\" height=\"12\""), std::string::npos);
  EXPECT_EQ(count(dom, "class=\"query-label"), long(t));
  EXPECT_EQ(count(dom, "class=\"key-label"), long(s));
  const std::regex query_label("<div class=\"query-label( active)?\"[^>]*>([^<]*)</div>");
  std::size_t row = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), query_label);
       it != std::sregex_iterator(); ++it, ++row) {
    ASSERT_LT(row, t);
    EXPECT_EQ((*it)[2].str(), html_escape(target[row].get<std::string>())) << "row " << row;
    EXPECT_EQ((*it)[1].matched, row == 3) << "row " << row;
  }
  const std::regex key_label("<div class=\"key-label( active)?\"[^>]*>([^<]*)</div>");
  std::size_t column = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), key_label);
       it != std::sregex_iterator(); ++it, ++column) {
    ASSERT_LT(column, s);
    EXPECT_EQ((*it)[2].str(), html_escape(source[column].get<std::string>()))
        << "column " << column;
  }
  EXPECT_NE(dom.find("<div id=\"row-highlight\" style=\"display: block; top: 64px; height: 22px;"),
            std::string::npos);
  EXPECT_NE(dom.find("<div id=\"tokens\" hidden=\"\">"), std::string::npos);
}

// Without an address the page opens on cross-attention, first layer and head, no query.
TEST_F(AttentionCrossViewGolden, DefaultsToCrossAttention) {
  const std::string dom = render(document_, "");
  expect_token_spans(dom, "token target", document_["decoder_tokens"], -1);
  expect_token_spans(dom, "token source", document_["tokens"], -1);
  EXPECT_NE(dom.find("· cross-attention · 12 target × 8 source tokens · layer 0 · head 0</p>"),
            std::string::npos);
  EXPECT_EQ(count(dom, "<line\\b"), drawn_lines(weights("cross", 0, 0)));
  EXPECT_EQ(count(dom, "class=\"active\""), 0);
  EXPECT_NE(dom.find("<div id=\"row-highlight\" style=\"display: none;\">"), std::string::npos);
}

// The self-attention sections: the token strip and the square heat map of their own tokens.
TEST_F(AttentionCrossViewGolden, EncoderAndDecoderSections) {
  document_["tokens"][1] = "a</script><b>x & y";
  {
    const std::string dom = render(document_, "#section=encoder&layer=0&head=2&query=1");
    expect_token_spans(dom, "token", document_["tokens"], 1);
    EXPECT_NE(dom.find("· encoder self-attention · 8 source tokens · layer 0 · head 2 · query 1 "
                       "\"a&lt;/script&gt;&lt;b&gt;x &amp; y\"</p>"),
              std::string::npos);
    EXPECT_NE(dom.find("<canvas id=\"heatmap\" width=\"8\" height=\"8\""), std::string::npos);
    EXPECT_EQ(count(dom, "class=\"query-label"), 8);
    EXPECT_EQ(count(dom, "<div id=\"cross-view\"[^>]* hidden=\"\""), 1);
    EXPECT_EQ(count(dom, "<line\\b"), 0);
  }
  {
    const std::string dom = render(document_, "#section=decoder&layer=1&head=0&query=5");
    expect_token_spans(dom, "token", document_["decoder_tokens"], 5);
    EXPECT_NE(dom.find("· decoder self-attention · 12 target tokens · layer 1 · head 0 · query 5 "
                       "\"" +
                       html_escape(document_["decoder_tokens"][5].get<std::string>()) + "\"</p>"),
              std::string::npos);
    EXPECT_NE(dom.find("<canvas id=\"heatmap\" width=\"12\" height=\"12\""), std::string::npos);
    EXPECT_EQ(count(dom, "class=\"key-label"), 12);
  }
}

// Hovering a target token shows its lines and row instead of the kept query's.
TEST_F(AttentionCrossViewGolden, HoveringATargetToken) {
  const std::string dom = render(document_, "#section=cross&layer=1&head=2&query=3", R"(
    const token = document.querySelector('#target-column .token[data-index="5"]');
    token.dispatchEvent(new MouseEvent("mouseenter"));)");
  const std::string query = html_escape(document_["decoder_tokens"][5].get<std::string>());
  EXPECT_NE(dom.find("· layer 1 · head 2 · query 5 \"" + query + "\"</p>"), std::string::npos);
  expect_token_spans(dom, "token target", document_["decoder_tokens"], 5);
  const json& head = weights("cross", 1, 1);
  EXPECT_EQ(count(dom, "<line [^>]*data-query=\"5\" data-key=\"\\d+\" class=\"active\""),
            drawn_lines(head, 5));
  EXPECT_EQ(count(dom, "class=\"active\""), drawn_lines(head, 5));
  EXPECT_NE(dom.find("<div id=\"row-highlight\" style=\"display: block; top: 108px;"),
            std::string::npos);
}

// Changing the section keeps the layer, the head and (when the rows are the same tokens) the
// kept query: from cross-attention to the decoder's, and then to the encoder's.
TEST_F(AttentionCrossViewGolden, ChangingTheSection) {
  const std::string choose = R"(
    document.querySelector('#target-column .token[data-index="4"]').click();
    const select = document.getElementById("section-select");
    select.value = "1";
    select.dispatchEvent(new Event("change"));)";
  const json& target = document_["decoder_tokens"];
  {
    const std::string dom = render(document_, "#section=cross&layer=1&head=2", choose);
    EXPECT_NE(dom.find("· decoder self-attention · 12 target tokens · layer 1 · head 2 · query 4 "
                       "\"" +
                       html_escape(target[4].get<std::string>()) + "\"</p>"),
              std::string::npos);
    expect_token_spans(dom, "token", target, 4);
    EXPECT_EQ(count(dom, "<div id=\"cross-view\"[^>]* hidden=\"\""), 1);
  }
  {
    const std::string dom = render(document_, "#section=cross&layer=1&head=2", choose + R"(
      select.value = "0";
      select.dispatchEvent(new Event("change"));)");
    EXPECT_NE(dom.find("· encoder self-attention · 8 source tokens · layer 1 · head 2</p>"),
              std::string::npos);
    expect_token_spans(dom, "token", document_["tokens"], -1);
  }
}

TEST(AttentionCrossViewPage, SelfContained) {
  const std::string page(kAttentionViewHtml);
  EXPECT_EQ(page.find("http://"), std::string::npos) << "the page must not load anything";
  EXPECT_EQ(page.find("https://"), std::string::npos) << "the page must not load anything";
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
}

}  // namespace
}  // namespace attn::test
