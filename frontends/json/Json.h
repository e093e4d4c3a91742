//===- Json.h - nlohmann::json without exceptions ---------------*- C++ -*-===//
//
// LLVM code builds with -fno-exceptions, so nlohmann::json must never throw:
// JSON_NOEXCEPTION turns its throw sites into std::abort(). Every file of the
// JSON frontend includes nlohmann through this header so that the macro is
// set the same way everywhere (a mismatch would break the ODR), and reads
// values only through the checked accessors below, never .at() or get<>()
// on a value whose type it has not tested.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_JSON_H
#define LLMC_FRONTENDS_JSON_JSON_H

#ifndef JSON_NOEXCEPTION
#define JSON_NOEXCEPTION
#endif
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace llmc::json {

using Json = nlohmann::json;

/// Parses `text`, allowing `//` and `/* */` comments (the graph files carry
/// their lit RUN lines as comments, as onnx-mlir's JSON tests do). On a
/// syntax error returns nullopt and sets `error` to nlohmann's message, which
/// names the line and column.
std::optional<Json> parseText(const std::string &text, std::string &error);

/// Serializes without throwing on invalid UTF-8 (it is replaced).
std::string dump(const Json &value, int indent = -1);

/// A short description of a value's JSON type for messages: "a string",
/// "an integer", "a list", ...
std::string describe(const Json &value);

/// The member `key` of an object, or nullptr when it is absent (or `object`
/// is not an object). Unlike operator[] this never inserts or aborts.
const Json *member(const Json &object, const char *key);

/// An integer that fits in int64_t (floats such as 2.0 are not integers).
std::optional<int64_t> asInt(const Json &value);

/// Any JSON number as a double.
std::optional<double> asNumber(const Json &value);

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_JSON_H
