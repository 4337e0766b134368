#include "src/serve/http_json.h"

#include "src/base/unicode.h"

namespace attn::serve {
namespace {

std::string error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 503:
      return "server_overloaded";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

void send_error(httplib::Response& response, const HttpError& error) {
  response.status = error.status;
  const Json body = {{"error",
                      {{"message", error.message},
                       {"type", error_type(error.status)},
                       {"param", error.param.empty() ? Json(nullptr) : Json(error.param)},
                       {"code", error.status}}}};
  response.set_content(json_text(body), "application/json");
}

void send_json(httplib::Response& response, const Json& body) {
  response.set_content(json_text(body), "application/json");
}

bool same_key(std::string_view given, std::string_view key) {
  unsigned char difference = given.size() == key.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) {
    difference |= static_cast<unsigned char>(given[i] ^ key[i % (key.empty() ? 1 : key.size())]);
  }
  return difference == 0 && !key.empty();
}

Json body_object(const httplib::Request& request) {
  Json body;
  try {
    body = Json::parse(request.body);
  } catch (const Json::exception& e) {
    throw HttpError{400, std::string("the body is not valid JSON: ") + e.what()};
  }
  if (!body.is_object()) throw HttpError{400, "the body must be a JSON object"};
  return body;
}

std::string text_field(const Json& value, const std::string& name) {
  if (!value.is_string()) {
    throw HttpError{400, name + ": must be a string, got " + value.type_name(), name};
  }
  std::string text = value.get<std::string>();
  if (!is_valid_utf8(text)) throw HttpError{400, name + ": is not valid UTF-8", name};
  return text;
}

std::string required_text(const Json& body, const char* name) {
  if (!body.contains(name)) throw HttpError{400, std::string(name) + ": is required", name};
  return text_field(body[name], name);
}

std::vector<std::string> text_list(const Json& body, const char* name) {
  if (!body.contains(name)) throw HttpError{400, std::string(name) + ": is required", name};
  const Json& value = body[name];
  if (value.is_string()) return {text_field(value, name)};
  if (!value.is_array() || value.empty()) {
    throw HttpError{400, std::string(name) + ": must be a string or a non-empty list of strings",
                    name};
  }
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < value.size(); ++i) {
    texts.push_back(text_field(value[i], std::string(name) + "[" + std::to_string(i) + "]"));
  }
  return texts;
}

void refuse_fields(const Json& body, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (body.contains(name) && !body[name].is_null()) {
      throw HttpError{400, std::string(name) + ": not supported by attn serve", name};
    }
  }
}

std::string base64(std::span<const float> values) {
  static const char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  const std::size_t n = values.size() * sizeof(float);
  std::string out;
  for (std::size_t i = 0; i < n; i += 3) {
    const unsigned chunk =
        bytes[i] << 16 | (i + 1 < n ? bytes[i + 1] << 8 : 0) | (i + 2 < n ? bytes[i + 2] : 0);
    out += kDigits[chunk >> 18 & 63];
    out += kDigits[chunk >> 12 & 63];
    out += i + 1 < n ? kDigits[chunk >> 6 & 63] : '=';
    out += i + 2 < n ? kDigits[chunk & 63] : '=';
  }
  return out;
}

}  // namespace attn::serve
