#pragma once

#include <httplib.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/io/json_util.h"

// The JSON of attn serve's requests and answers: a request's fields read with their checks, and
// errors in OpenAI's shape. In attn::serve, apart from the command line's helpers of the same
// kind.
namespace attn::serve {

using Json = nlohmann::ordered_json;

// A request the server answers with an error, in OpenAI's shape:
// {"error": {"message", "type", "param", "code"}}.
struct HttpError {
  int status;
  std::string message;
  std::string param = {};  // the request field at fault, when one is
};

void send_error(httplib::Response& response, const HttpError& error);
void send_json(httplib::Response& response, const Json& body);

// Compares in time that depends on the lengths only, not on where the first difference is.
bool same_key(std::string_view given, std::string_view key);

// The request body as a JSON object (400 otherwise).
Json body_object(const httplib::Request& request);

// Field `name` of `body` as a T, or `fallback` when it is absent or null (400 for another type).
template <class T>
T field(const Json& body, const char* name, T fallback) {
  if (!body.contains(name) || body[name].is_null()) return fallback;
  try {
    return body[name].get<T>();
  } catch (const Json::exception&) {
    throw HttpError{
        400, std::string(name) + ": has the wrong type (" + body[name].type_name() + ")", name};
  }
}

// A text field: a string of valid UTF-8 (400 otherwise).
std::string text_field(const Json& value, const std::string& name);
// Field `name` of `body`, required: a text (400 when absent or another type).
std::string required_text(const Json& body, const char* name);
// `inputs` / `input`: one string or a non-empty list of them.
std::vector<std::string> text_list(const Json& body, const char* name);
// Refuses, by name, the fields of a route attn does not implement.
void refuse_fields(const Json& body, std::initializer_list<const char*> names);
// The floats' bytes (little-endian float32) in base64, as OpenAI's encoding_format "base64".
std::string base64(std::span<const float> values);

}  // namespace attn::serve
