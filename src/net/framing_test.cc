// The RFC 9112 framing rules (internal/framing.h) without sockets; the
// socket-level regression tests are in tests/http/.
#include "net/internal/framing.h"

#include <gtest/gtest.h>

namespace omni::net_internal {
namespace {

constexpr size_t kHead = 8 * 1024;
constexpr size_t kBody = 1024;

StatusCode CodeOf(std::string_view bytes) {
  auto r = ParseRequestBytes(bytes, kHead, kBody);
  return r.ok() ? StatusCode::kOk : r.status().code();
}

TEST(Framing, HeadLengthWaitsForTheEmptyLine) {
  EXPECT_EQ(HeadLength("GET / HTTP/1.1\r\nHost: x\r\n\r\nrest"), 27u);
  EXPECT_EQ(HeadLength("\r\n\r\nGET / HTTP/1.1\r\n\r\n"), 4u);
  EXPECT_FALSE(HeadLength("GET / HTTP/1.1\r\nHost: x\r\n").has_value());
  // Resumed after a scan that ended inside the CRLFCRLF, or right before a bare LF.
  EXPECT_EQ(HeadLength("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 25), 27u);
  EXPECT_EQ(HeadLength("GET / HTTP/1.1\r\nHost: x\n", 23), 24u);
}

TEST(Framing, HeadBlockRefusesFoldingBareLineEndsAndNul) {
  EXPECT_TRUE(CheckHeaderBlock("GET / HTTP/1.1\r\nHost: x\r\n\r\n").ok());
  for (std::string_view bad :
       {std::string_view("GET / HTTP/1.1\r\nA: 1\r\n b\r\n\r\n"), std::string_view("GET / HTTP/1.1\r\nA: 1\r\n\tb\r\n\r\n"),
        std::string_view("GET / HTTP/1.1\r\n A: 1\r\n\r\n"), std::string_view("GET / HTTP/1.1\nA: 1\r\n\r\n"),
        std::string_view("GET / HTTP/1.1\r\nA: 1\rB: 2\r\n\r\n"), std::string_view("GET / HTTP/1.1\r\nA: \0\r\n\r\n", 25)}) {
    Status s = CheckHeaderBlock(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(Framing, OnlyALoneChunkedCodingIsAccepted) {
  auto chunked = ParseRequestBytes("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nNEXT", kHead, kBody);
  ASSERT_TRUE(chunked.ok()) << chunked.status().ToString();
  EXPECT_EQ(chunked->message.body(), "abc");
  EXPECT_EQ(chunked->consumed, 69u);  // all but NEXT
  EXPECT_EQ(CodeOf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n"), StatusCode::kOk);
  for (std::string_view te : {"identity", "xchunked", "chunked, identity", "gzip, chunked", "chunked,", ", chunked",
                              "chunked;x=1", ""}) {
    std::string req = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + std::string(te) + "\r\n\r\n0\r\n\r\n";
    EXPECT_EQ(CodeOf(req), StatusCode::kUnimplemented) << te;
  }
  EXPECT_EQ(CodeOf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            StatusCode::kInvalidArgument);  // Beast: a duplicate
  EXPECT_EQ(CodeOf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            StatusCode::kUnimplemented);
}

TEST(Framing, TransferEncodingWithLengthOrInHttp10IsRefused) {
  EXPECT_EQ(CodeOf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nab"),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nab"),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), StatusCode::kInvalidArgument);
}

TEST(Framing, HostIsRequiredOnceInHttp11) {
  EXPECT_EQ(CodeOf("GET / HTTP/1.1\r\n\r\n"), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("GET / HTTP/1.0\r\n\r\n"), StatusCode::kOk);
  EXPECT_EQ(CodeOf("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n"), StatusCode::kInvalidArgument);
}

// A head with bare LF line ends is refused as soon as the LF arrives, not
// after waiting for a CRLFCRLF that such a client never sends.
TEST(Framing, BareLfEndsTheHeadSearchAtOnce) {
  EXPECT_EQ(HeadLength("GET / HTTP/1.1\nHost: x\n"), 15u);
  EXPECT_FALSE(CheckHeaderBlock("GET / HTTP/1.1\n").ok());
  EXPECT_EQ(CodeOf("GET / HTTP/1.1\nHost: x\n\n"), StatusCode::kInvalidArgument);
}

TEST(Framing, LimitsAndIncompleteInput) {
  EXPECT_EQ(CodeOf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"), StatusCode::kPayloadTooLarge);
  EXPECT_EQ(CodeOf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab"), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(kHead, 'a') + "\r\n\r\n"), StatusCode::kInvalidArgument);
}

TEST(Framing, ResponsesFollowTheSameRules) {
  auto ok = ParseResponseBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", kBody);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->body, "hi");
  auto close_delimited = ParseResponseBytes("HTTP/1.1 200 OK\r\n\r\nuntil close", kBody);
  ASSERT_TRUE(close_delimited.ok());
  EXPECT_EQ(close_delimited->body, "until close");
  for (std::string_view bad : {"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nx",
                               "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n0\r\n\r\n",
                               "HTTP/1.1 200 OK\r\nA: 1\r\n b\r\n\r\n"}) {
    auto r = ParseResponseBytes(bad, kBody);
    EXPECT_EQ(r.ok() ? StatusCode::kOk : r.status().code(), StatusCode::kInternal) << bad;
  }
}

}  // namespace
}  // namespace omni::net_internal
