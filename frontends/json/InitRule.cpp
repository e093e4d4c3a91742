//===- InitRule.cpp - Parameter initialization rules ----------------------===//
#include "frontends/json/InitRule.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace llmc::json {

static const char *kAccepted =
    "expected \"normal(STD)\" with STD > 0, \"zeros\" or \"ones\"";

std::string shortestDouble(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

std::string InitRule::str() const {
  switch (kind) {
  case Kind::Normal:
    return "normal(" + shortestDouble(stddev) + ")";
  case Kind::Zeros:
    return "zeros";
  case Kind::Ones:
    return "ones";
  }
  return "zeros";
}

static std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::optional<InitRule> parseInitRule(const std::string &text,
                                      std::string &error) {
  std::string s = trim(text);
  if (s == "zeros")
    return InitRule::zeros();
  if (s == "ones")
    return InitRule::ones();
  size_t open = s.find('(');
  if (open == std::string::npos || s.back() != ')' ||
      trim(s.substr(0, open)) != "normal") {
    error = "unknown init rule '" + text + "': " + kAccepted;
    return std::nullopt;
  }
  std::string arg = trim(s.substr(open + 1, s.size() - open - 2));
  char *end = nullptr;
  errno = 0;
  double stddev = arg.empty() ? 0.0 : std::strtod(arg.c_str(), &end);
  if (arg.empty() || *end != '\0' || errno == ERANGE) {
    error =
        "init rule '" + text + "': '" + arg + "' is not a number; " + kAccepted;
    return std::nullopt;
  }
  if (!std::isfinite(stddev) || stddev <= 0) {
    error = "init rule '" + text +
            "': the standard deviation must be positive and finite";
    return std::nullopt;
  }
  return InitRule::normal(stddev);
}

} // namespace llmc::json
