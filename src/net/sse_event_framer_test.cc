// SseEventFramer: whole events go out, partial ones are held, and an event
// a proxy adds after a cut is always its own event, whatever the chunking
// and line endings. The client side is the net layer's SseParser.
#include "net/sse_event_framer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "net/sse.h"

namespace omni {
namespace {

// Mixed line endings, a comment, a multi-line event, blank lines between
// events and an "event:" field, as the WHATWG rules allow.
const char kStream[] =
    "data: {\"a\":1}\n\n"
    ": keep-alive\r\n\r\n"
    "event: delta\r\ndata: two\r\ndata: lines\r\n\r\n"
    "\n"
    "data: cr only\r\r"
    "data: {\"b\":2}\n\n"
    "data: [DONE]\n\n";

struct Seen {
  std::string event;
  std::string data;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> Parse(std::string_view bytes) {
  SseParser parser;
  std::vector<Seen> out;
  for (SseEvent& e : parser.Feed(bytes)) out.push_back({e.event, e.data});
  return out;
}

// Feeds `bytes` to `framer` in random chunks; returns what it forwarded.
std::string FeedInChunks(SseEventFramer& framer, std::string_view bytes, std::mt19937& rng) {
  std::string forwarded;
  size_t at = 0;
  while (at < bytes.size()) {
    size_t n = std::uniform_int_distribution<size_t>(1, 7)(rng);
    n = std::min(n, bytes.size() - at);
    forwarded += framer.Feed(bytes.substr(at, n));
    at += n;
  }
  return forwarded;
}

TEST(SseEventFramer, ForwardsWholeEventsAndHoldsTheRest) {
  SseEventFramer f;
  EXPECT_EQ(f.Feed("data: one\n\ndata: tw"), "data: one\n\n");
  EXPECT_EQ(f.held_bytes(), 8u);
  EXPECT_EQ(f.Feed("o\n"), "");
  EXPECT_EQ(f.Feed("\ndata: x"), "data: two\n\n");
  EXPECT_EQ(f.TakeHeld(), "data: x");
  EXPECT_EQ(f.held_bytes(), 0u);
}

TEST(SseEventFramer, ACutDropsThePartialEventAndNeedsNoPrefix) {
  SseEventFramer f;
  EXPECT_EQ(f.Feed("data: one\n\ndata: {\"half"), "data: one\n\n");
  EXPECT_EQ(f.CloseEventPrefix(), "");
  EXPECT_EQ(f.held_bytes(), 0u);
}

TEST(SseEventFramer, CrLfSplitBetweenChunksIsOneLineEnd) {
  SseEventFramer f;
  EXPECT_EQ(f.Feed("data: a\r"), "");
  EXPECT_EQ(f.Feed("\n"), "");  // "\r\n" ends the data line only
  EXPECT_EQ(f.Feed("\r"), "data: a\r\n\r");
  EXPECT_EQ(f.Feed("\n"), "\n");  // the rest of the blank line's "\r\n"
  EXPECT_EQ(f.CloseEventPrefix(), "");
}

TEST(SseEventFramer, AnOversizedEventGoesOutAndACutInsideItClosesItFirst) {
  SseEventFramer f(/*max_held_bytes=*/8);
  EXPECT_EQ(f.Feed("data: 0123456789"), "data: 0123456789");
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_EQ(f.Feed("abc"), "abc");  // the rest of an event already going out is not held
  EXPECT_EQ(f.CloseEventPrefix(), "\n\n");
  // Once an event ends, the stream is back on a boundary.
  SseEventFramer g(8);
  EXPECT_EQ(g.Feed("data: 0123456789"), "data: 0123456789");
  EXPECT_EQ(g.Feed("\n\ndata: x"), "\n\n");
  EXPECT_EQ(g.CloseEventPrefix(), "");
}

TEST(SseEventFramer, TheWholeStreamRoundTripsInAnyChunking) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    SseEventFramer f;
    std::string forwarded = FeedInChunks(f, kStream, rng);
    forwarded += f.TakeHeld();
    ASSERT_EQ(forwarded, kStream);
  }
}

// For every cut point, what the client sees is the events completed before
// the cut, then the proxy's event, intact; with a tiny hold limit (events
// forwarded before their end) the proxy's event is still never merged
// into a partial one.
TEST(SseEventFramer, AnEventAddedAfterACutIsAlwaysItsOwn) {
  std::mt19937 rng(11);
  const std::string stream = kStream;
  const std::string added = EncodeSseEvent("{\"error\":{}}");
  for (size_t max_held : {SseEventFramer::kDefaultMaxHeldBytes, size_t{4}}) {
    for (size_t cut = 0; cut <= stream.size(); ++cut) {
      SseEventFramer f(max_held);
      std::string client = FeedInChunks(f, std::string_view(stream).substr(0, cut), rng);
      client += f.CloseEventPrefix();
      client += added;
      std::vector<Seen> seen = Parse(client);
      ASSERT_FALSE(seen.empty()) << "cut " << cut;
      EXPECT_EQ(seen.back(), (Seen{"", "{\"error\":{}}"})) << "cut " << cut << ": " << client;
      if (max_held == SseEventFramer::kDefaultMaxHeldBytes) {
        std::vector<Seen> expected = Parse(stream.substr(0, cut));
        expected.push_back({"", "{\"error\":{}}"});
        EXPECT_EQ(seen, expected) << "cut " << cut << ": " << client;
      }
    }
  }
}

}  // namespace
}  // namespace omni
