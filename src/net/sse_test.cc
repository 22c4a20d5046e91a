#include "net/sse.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

SseEvent Ev(std::string data, std::string event = "", std::string id = "") {
  return SseEvent{std::move(event), std::move(data), std::move(id)};
}

TEST(SseParserTest, SimpleEvents) {
  SseParser p;
  auto events = p.Feed("data: hello\n\ndata: world\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], Ev("hello"));
  EXPECT_EQ(events[1], Ev("world"));
}

TEST(SseParserTest, MultiLineDataEventAndId) {
  SseParser p;
  auto events = p.Feed("event: delta\nid: 7\ndata: a\ndata:b\ndata:  c\n\n");
  ASSERT_EQ(events.size(), 1u);
  // Only one leading space is stripped.
  EXPECT_EQ(events[0], Ev("a\nb\n c", "delta", "7"));
}

TEST(SseParserTest, CrLfAndBareCr) {
  SseParser p;
  auto events = p.Feed("data: one\r\n\r\ndata: two\r\rdata: three\n\n");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].data, "one");
  EXPECT_EQ(events[1].data, "two");
  EXPECT_EQ(events[2].data, "three");
}

TEST(SseParserTest, CommentsAndUnknownFieldsIgnored) {
  SseParser p;
  auto events = p.Feed(": keep-alive\n\nfoo: bar\ndata\ndata: x\nretry: 1500\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "\nx");  // "data" alone is an empty data line
  EXPECT_EQ(p.retry_ms(), 1500);
}

TEST(SseParserTest, EventWithoutDataIsNotDispatched) {
  SseParser p;
  EXPECT_TRUE(p.Feed("event: ping\n\n").empty());
  auto events = p.Feed("data: after\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "");  // the dropped event's type does not leak
}

TEST(SseParserTest, IdPersistsAcrossEvents) {
  SseParser p;
  auto events = p.Feed("id: 1\ndata: a\n\ndata: b\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].id, "1");
}

TEST(SseParserTest, SplitAtEveryByte) {
  const std::string stream = "event: e\r\ndata: {\"x\":1}\r\ndata: [DONE]\r\n\r\n: c\n\ndata: z\r\r";
  SseParser whole;
  std::vector<SseEvent> expected = whole.Feed(stream);
  ASSERT_EQ(expected.size(), 2u);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser p;
    std::vector<SseEvent> got = p.Feed(stream.substr(0, cut));
    for (auto& e : p.Feed(stream.substr(cut))) got.push_back(std::move(e));
    EXPECT_EQ(got, expected) << "cut at " << cut;
  }
  SseParser bytewise;
  std::vector<SseEvent> got;
  for (char c : stream) {
    for (auto& e : bytewise.Feed(std::string_view(&c, 1))) got.push_back(std::move(e));
  }
  EXPECT_EQ(got, expected);
}

TEST(SseParserTest, IncompleteEventWaits) {
  SseParser p;
  EXPECT_TRUE(p.Feed("data: part").empty());
  EXPECT_TRUE(p.Feed("ial\n").empty());
  auto events = p.Feed("\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "partial");
}

TEST(SseEncoderTest, Format) {
  EXPECT_EQ(EncodeSseEvent("[DONE]"), "data: [DONE]\n\n");
  EXPECT_EQ(EncodeSseEvent("x", "delta", "3"), "event: delta\nid: 3\ndata: x\n\n");
  EXPECT_EQ(EncodeSseEvent("a\nb\r\nc"), "data: a\ndata: b\ndata: c\n\n");
  EXPECT_EQ(EncodeSseEvent(""), "data: \n\n");
  EXPECT_EQ(EncodeSseComment("ping\n"), ": ping \n\n");
}

TEST(SseEncoderTest, RoundTrip) {
  for (std::string data : {"plain", "multi\nline\ndata", "", "trailing\n", "{\"json\": true}"}) {
    SseParser p;
    auto events = p.Feed(EncodeSseEvent(data, "ev"));
    ASSERT_EQ(events.size(), 1u) << data;
    EXPECT_EQ(events[0].data, data);
    EXPECT_EQ(events[0].event, "ev");
  }
}

}  // namespace
}  // namespace omni
