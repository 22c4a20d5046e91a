#include "core/log.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace omni::log {
namespace {

TEST(LogTest, TextLineIsOneLogfmtEventWithEscapedMessage) {
  std::string line = FormatLine(Level::kWarn, "llm", "abc123", "two\nlines \"quoted\"", false);
  EXPECT_EQ(line, "level=warn role=llm request_id=abc123 msg=\"two\\nlines \\\"quoted\\\"\"");
}

TEST(LogTest, JsonLineParsesAndCarriesRequestId) {
  auto j = nlohmann::json::parse(FormatLine(Level::kInfo, "gateway", "r1", "tab\there", true));
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["role"], "gateway");
  EXPECT_EQ(j["request_id"], "r1");
  EXPECT_EQ(j["msg"], "tab\there");
  auto k = nlohmann::json::parse(FormatLine(Level::kError, "x", "", "m", true));
  EXPECT_FALSE(k.contains("request_id"));
}

TEST(LogTest, ParseLevelAndFiltering) {
  Level l;
  EXPECT_TRUE(ParseLevel("debug", &l));
  EXPECT_EQ(l, Level::kDebug);
  EXPECT_FALSE(ParseLevel("verbose", &l));
  Init({.level = Level::kWarn, .json = false, .role = "test"});
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kError));
  Init({});
}

TEST(LogTest, RequestIdsAreHexAndDistinct) {
  std::string a = NewRequestId(), b = NewRequestId();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace omni::log
