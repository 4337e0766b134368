// The attention page (src/tasks/attention_view.html) on documents made here, run by headless
// chromium: its tokens as readable text, its colour scales, and its view of an encoder-decoder
// document (Marian, T5): the encoder, decoder and cross-attention sections, the lines between
// target and source tokens, and the address that preselects a view. The page is built from the
// template (kAttentionViewHtml) and a document in the format `attn attention` writes, the
// encoder-decoder's made from the Hugging Face golden of tiny-marian-random.
//
// ATTN_CROSS_VIEW_PAGE=FILE makes the test also write the page it checks (golden tokens as they
// are) to FILE; docs/cross_attention.png is that page's screenshot, `chromium --headless
// --screenshot=docs/cross_attention.png --window-size=1100,800
// 'file://FILE#section=cross&layer=1&head=0&query=3'`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <utility>
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
// to the query's): every token of `tokens` (shown_token), the one at `active` marked (-1: none).
void expect_token_spans(const std::string& dom, const std::string& span_class, const json& tokens,
                        int active) {
  const std::regex span("<span class=\"" + span_class + "( active)?\" data-index=\"(\\d+)\"[^>]*>" +
                        "([^<]*)</span>");
  std::size_t i = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), span); it != std::sregex_iterator();
       ++it, ++i) {
    ASSERT_LT(i, tokens.size()) << span_class << ": more elements than tokens";
    EXPECT_EQ((*it)[2].str(), std::to_string(i)) << span_class << ": out of order";
    EXPECT_EQ((*it)[3].str(), html_escape(shown_token(tokens[i].get<std::string>())))
        << span_class << " " << i;
    EXPECT_EQ((*it)[1].matched, int(i) == active) << span_class << " " << i;
  }
  EXPECT_EQ(i, tokens.size()) << span_class << ": one element per token";
}

// How many weights of a head get a line under the default colour scale (per row): those of at
// least 1% of their row's largest (fainter ones would not show); `row` >= 0: of that query's row
// only.
long drawn_lines(const json& weights, int row = -1) {
  long lines = 0;
  for (std::size_t q = 0; q < weights.size(); ++q) {
    if (row >= 0 && int(q) != row) continue;
    double largest = 0;
    for (const json& w : weights[q]) largest = std::max(largest, w.get<double>());
    for (const json& w : weights[q]) lines += w.get<double>() >= 0.01 * largest;
  }
  return lines;
}

class AttentionPage : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  }

  // Writes the page for `document` and returns its DOM once the script ran at `address`, and
  // then `actions` (a script run after the page's, playing the user). Expects no script errors.
  std::string render(const json& document, const std::string& address,
                     const std::string& actions = "") {
    std::string html = with_error_probe(page_for(document));
    const std::size_t end = html.rfind("</body>");
    EXPECT_NE(end, std::string::npos);
    if (!actions.empty()) html.insert(end, "<script>\n" + actions + "\n</script>\n");
    const fs::path page = scratch_ / "page.html";
    write_file(page, html);
    std::string dom = rendered_dom(chromium_, page, address);
    EXPECT_EQ(dom.find("data-errors"), std::string::npos) << dom.substr(0, dom.find("<body"));
    return dom;
  }

  std::string chromium_;
  TempDir scratch_;
};

// An ordinary (decoder-only or encoder) document shows one section, as before: no section
// selector, no cross-attention view.
TEST_F(AttentionPage, OrdinaryDocumentHasNoSections) {
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
  EXPECT_NE(dom.find("m (gpt2) · 2 tokens · layer 0 · head 0 · query 1 \"␣&lt;b&gt;\""),
            std::string::npos);
  EXPECT_NE(dom.find("<label id=\"section-control\" hidden=\"\">"), std::string::npos);
  EXPECT_NE(dom.find("<div id=\"cross-view\" hidden=\"\">"), std::string::npos);
  EXPECT_EQ(count(dom, "<line\\b"), 0);
}

// A decoder-only document of one layer and head over these tokens, `weights` its rows.
json single_head_document(const std::vector<std::string>& tokens, const json& weights) {
  std::vector<int> ids(tokens.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = int(i);
  return {{"model", "m"},
          {"model_type", "m"},
          {"text", ""},
          {"tokens", tokens},
          {"token_ids", ids},
          {"n_layers", 1},
          {"n_heads", 1},
          {"attention", {{{"layer", 0}, {"heads", {{{"head", 0}, {"weights", weights}}}}}}}};
}

// Causal rows that spread evenly over the keys they see.
json even_causal_weights(std::size_t n) {
  json weights = json::array();
  for (std::size_t q = 0; q < n; ++q) {
    json row = json::array();
    for (std::size_t k = 0; k < n; ++k) row.push_back(k <= q ? 1.0 / double(q + 1) : 0.0);
    weights.push_back(row);
  }
  return weights;
}

// The token strip's labels and tooltips (as serialized: `"` is &quot;), in order.
std::vector<std::pair<std::string, std::string>> token_strip(const std::string& dom) {
  const std::regex span(
      "<span class=\"token[^\"]*\" data-index=\"\\d+\" title=\"([^\"]*)\"[^>]*>([^<]*)</span>");
  std::vector<std::pair<std::string, std::string>> tokens;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), span); it != std::sregex_iterator();
       ++it) {
    tokens.emplace_back((*it)[2].str(), (*it)[1].str());
  }
  return tokens;
}

// Tokens are shown as text a reader can read, whatever vocabulary spelled them: byte-level
// BPE's byte stand-ins decoded, SentencePiece's "▁" and byte pieces likewise, whitespace and
// invisible characters as marks, a character split across tokens as its bytes (the tooltips say
// which character). The pieces stay in the tooltips.
TEST_F(AttentionPage, ReadableTokens) {
  struct Case {
    const char* vocabulary;
    std::vector<std::string> pieces;
    std::vector<std::string> shown;
    std::vector<std::pair<int, std::string>> notes;  // token, what its tooltip says
  };
  const std::vector<Case> cases = {
      {"byte-level BPE",
       {"C", "af", "Ã©", "ĠnaÃ¯ve", "ĠðŁĺ", "Ĥ", "Ċ", "ĉ", "ĠĠ", "<|endoftext|>", "Âł", "č", "ĠâĢ",
        "ľ"},
       {"C", "af", "é", "␣naïve", R"(␣\xF0\x9F\x98)", R"(\x82)", "⏎", "⇥", "␣␣",
        "&lt;|endoftext|&gt;", R"(\u{A0})", R"(\r)", R"(␣\xE2\x80)", R"(\x9C)"},
       {{3, "token 3, id 3, piece &quot;ĠnaÃ¯ve&quot;"},
        {4, "part of &quot;😂&quot; (U+1F602), tokens 4-5"},
        {5, "token 5, id 5, piece &quot;Ĥ&quot;\npart of &quot;😂&quot; (U+1F602), tokens 4-5"},
        {13, "part of &quot;“&quot; (U+201C), tokens 12-13"}}},
      {"SentencePiece",
       {"▁The", "▁cat", "<0x0A>", "<0xE2>", "<0x98>", "<0x95>", "▁", "</s>"},
       {"␣The", "␣cat", "⏎", R"(\xE2)", R"(\x98)", R"(\x95)", "␣", "&lt;/s&gt;"},
       {{0, "token 0, id 0, piece &quot;▁The&quot;"},
        {3, "part of &quot;☕&quot; (U+2615), tokens 3-5"}}},
      // Not byte-level although every character is in the byte table: "café"'s é would be a
      // byte that is not UTF-8.
      {"WordPiece",
       {"[CLS]", "café", "##s", "naïve", "[SEP]"},
       {"[CLS]", "café", "##s", "naïve", "[SEP]"},
       {{1, "token 1, id 1, piece &quot;café&quot;"}}},
  };
  for (const Case& c : cases) {
    const std::string dom =
        render(single_head_document(c.pieces, even_causal_weights(c.pieces.size())), "");
    const auto strip = token_strip(dom);
    ASSERT_EQ(strip.size(), c.shown.size()) << c.vocabulary;
    for (std::size_t i = 0; i < strip.size(); ++i) {
      EXPECT_EQ(strip[i].first, c.shown[i]) << c.vocabulary << ", token " << i;
    }
    for (const auto& [token, note] : c.notes) {
      EXPECT_NE(strip[token].second.find(note), std::string::npos)
          << c.vocabulary << ", token " << token << ": " << strip[token].second;
    }
  }
}

// Run after the page's script: the heat map's red channel, one value per cell, row by row, in
// <pre id="probe">.
constexpr const char* kHeatmapProbe = R"({
  const canvas = document.getElementById("heatmap");
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  const probe = document.createElement("pre");
  probe.id = "probe";
  probe.textContent = JSON.stringify(Array.from({length: data.length / 4}, (_, i) => data[4 * i]));
  document.body.appendChild(probe);
})";

// The red channel of a weight on a scale whose darkest weight is `scale`: white (255) at 0, the
// darkest blue's 8 at `scale` and above.
long expected_red(double weight, double scale) {
  return std::lround(255 - std::min(1.0, weight / scale) * (255 - 8));
}

// The colour scales: per query row (the default), or one for the whole head at its largest
// weight or at a percentile of its weights (nearest rank), heavier weights as dark; the legend
// names the darkest weight.
TEST_F(AttentionPage, ColourScales) {
  // Bidirectional: all 25 weights are seen, so the 95th percentile is the 24th smallest (0.7),
  // not the largest (0.8).
  const json weights = {{0.6, 0.1, 0.1, 0.1, 0.1},
                        {0.05, 0.05, 0.8, 0.05, 0.05},
                        {0.2, 0.2, 0.2, 0.2, 0.2},
                        {0.1, 0.2, 0.3, 0.25, 0.15},
                        {0.03, 0.04, 0.05, 0.18, 0.7}};
  const json document = single_head_document({"a", "b", "c", "d", "e"}, weights);
  const std::vector<double> row_max = {0.6, 0.8, 0.2, 0.3, 0.7};
  struct Case {
    std::string address;
    double scale;  // the darkest weight, 0: each row's largest
    std::string legend;
  };
  for (const Case& c : std::vector<Case>{{"", 0, "row max"},
                                         {"#query=3", 0, "0.3000"},
                                         {"#scale=max", 0.8, "0.8000"},
                                         {"#scale=p95", 0.7, "0.7000"}}) {
    const std::string dom = render(document, c.address, kHeatmapProbe);
    const std::size_t open = dom.find("<pre id=\"probe\">");
    ASSERT_NE(open, std::string::npos) << c.address;
    const json red = json::parse(dom.substr(open + 16, dom.find("</pre>", open) - open - 16));
    ASSERT_EQ(red.size(), 25u);
    for (int q = 0; q < 5; ++q) {
      for (int k = 0; k < 5; ++k) {
        const double scale = c.scale > 0 ? c.scale : row_max[q];
        EXPECT_EQ(red[q * 5 + k].get<long>(), expected_red(weights[q][k].get<double>(), scale))
            << c.address << ": cell " << q << ", " << k;
      }
    }
    EXPECT_NE(dom.find("<span id=\"legend-max\">" + c.legend + "</span>"), std::string::npos)
        << c.address;
  }
}

class AttentionCrossViewGolden : public AttentionPage {
 protected:
  void SetUp() override {
    AttentionPage::SetUp();
    if (IsSkipped()) return;
    ATTN_REQUIRE_SHARED();
    golden_ = GoldenSet("tiny-marian-random").jsonl("attention.jsonl").at(0);
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
                     html_escape(shown_token(target[3].get<std::string>())) + "\""),
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
    EXPECT_EQ((*it)[2].str(), html_escape(shown_token(target[row].get<std::string>())))
        << "row " << row;
    EXPECT_EQ((*it)[1].matched, row == 3) << "row " << row;
  }
  const std::regex key_label("<div class=\"key-label( active)?\"[^>]*>([^<]*)</div>");
  std::size_t column = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), key_label);
       it != std::sregex_iterator(); ++it, ++column) {
    ASSERT_LT(column, s);
    EXPECT_EQ((*it)[2].str(), html_escape(shown_token(source[column].get<std::string>())))
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
                       "\"a&lt;/script&gt;&lt;b&gt;x␣&amp;␣y\"</p>"),
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
                       html_escape(shown_token(document_["decoder_tokens"][5].get<std::string>())) +
                       "\"</p>"),
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
  const std::string query =
      html_escape(shown_token(document_["decoder_tokens"][5].get<std::string>()));
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
                       html_escape(shown_token(target[4].get<std::string>())) + "\"</p>"),
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
