//===- Json.cpp - nlohmann::json without exceptions -----------------------===//
#include "frontends/json/Json.h"

#include <limits>

namespace llmc::json {

namespace {
/// nlohmann's DOM builder, except that a syntax error is recorded instead of
/// thrown: parse(..., allow_exceptions=false) only says that parsing failed,
/// and users need to know where.
class RecordingSax : public nlohmann::detail::json_sax_dom_parser<Json> {
public:
  explicit RecordingSax(Json &result)
      : json_sax_dom_parser(result, /*allow_exceptions=*/false) {}
  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &ex) {
    error = ex.what();
    return false;
  }
  std::string error;
};
} // namespace

std::optional<Json> parseText(const std::string &text, std::string &error) {
  Json result;
  RecordingSax sax(result);
  bool ok = Json::sax_parse(text, &sax, nlohmann::detail::input_format_t::json,
                            /*strict=*/true, /*ignore_comments=*/true);
  if (!ok) {
    error = sax.error.empty() ? "invalid JSON" : sax.error;
    return std::nullopt;
  }
  return result;
}

std::string dump(const Json &value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string describe(const Json &value) {
  switch (value.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::array:
    return "a list";
  case Json::value_t::string:
    return "the string " + dump(value);
  case Json::value_t::boolean:
    return value.get<bool>() ? "true" : "false";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float:
    return "the number " + dump(value);
  default:
    return "a value of unsupported type";
  }
}

const Json *member(const Json &object, const char *key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<int64_t> asInt(const Json &value) {
  if (value.is_number_integer() && !value.is_number_unsigned())
    return value.get<int64_t>();
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return static_cast<int64_t>(u);
  }
  return std::nullopt;
}

std::optional<double> asNumber(const Json &value) {
  if (!value.is_number())
    return std::nullopt;
  return value.get<double>();
}

} // namespace llmc::json
