#include "net/multipart.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "corpus_replay.h"

namespace omni {
namespace {

using namespace std::string_literals;

constexpr std::string_view kFormType = "multipart/form-data; boundary=AaB03x";

// Lines joined by CRLF, as every form client sends them.
std::string Lines(std::initializer_list<std::string_view> lines) {
  std::string out;
  for (std::string_view line : lines) {
    if (!out.empty()) out += "\r\n";
    out += line;
  }
  return out;
}

// The error message of a parse that must fail with InvalidArgument.
std::string Refusal(std::string_view content_type, std::string_view body, const MultipartLimits& limits = {}) {
  auto parts = ParseMultipartFormData(content_type, body, limits);
  EXPECT_FALSE(parts.ok()) << "parsed " << parts->size() << " parts";
  if (parts.ok()) return "";
  EXPECT_EQ(parts.status().code(), StatusCode::kInvalidArgument);
  return parts.status().message();
}

// RFC 7578 section 4 / the HTML form example: a text field and a file.
TEST(MultipartTest, ParsesRfc7578Example) {
  const std::string body = Lines({
      "--AaB03x",
      "Content-Disposition: form-data; name=\"submit-name\"",
      "",
      "Larry",
      "--AaB03x",
      "Content-Disposition: form-data; name=\"files\"; filename=\"file1.txt\"",
      "Content-Type: text/plain",
      "",
      "... contents of file1.txt ...",
      "--AaB03x--",
      "",
  });
  auto parts = ParseMultipartFormData(kFormType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "submit-name");
  EXPECT_EQ((*parts)[0].data, "Larry");
  EXPECT_EQ((*parts)[0].filename, "");
  EXPECT_EQ((*parts)[0].content_type, "");
  EXPECT_FALSE((*parts)[0].is_file());
  EXPECT_EQ((*parts)[1].name, "files");
  EXPECT_EQ((*parts)[1].filename, "file1.txt");
  EXPECT_EQ((*parts)[1].content_type, "text/plain");
  EXPECT_EQ((*parts)[1].data, "... contents of file1.txt ...");
  EXPECT_TRUE((*parts)[1].is_file());
}

// What the OpenAI SDK sends to /v1/images/edits: a PNG whose bytes hold CR,
// LF, "--", "\r\n--" and even "\r\n--AaB03" (a prefix of the delimiter).
TEST(MultipartTest, ImagesEditWithBinaryFile) {
  const std::string png = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR--\r\n--\r\n--AaB03\n\r--AaB03x\r\r\n\xff\r"s;
  const std::string body = Lines({
                               "--AaB03x",
                               "Content-Disposition: form-data; name=\"image\"; filename=\"cat.png\"",
                               "Content-Type: image/png",
                               "",
                           }) +
                           "\r\n" + png + "\r\n" +
                           Lines({
                               "--AaB03x",
                               "Content-Disposition: form-data; name=\"prompt\"",
                               "",
                               "a cat wearing a hat",
                               "--AaB03x",
                               "Content-Disposition: form-data; name=\"n\"",
                               "",
                               "2",
                               "--AaB03x",
                               "Content-Disposition: form-data; name=\"size\"",
                               "",
                               "512x512",
                               "--AaB03x",
                               "Content-Disposition: form-data; name=\"response_format\"",
                               "",
                               "b64_json",
                               "--AaB03x--",
                           });
  auto parts = ParseMultipartFormData(kFormType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 5u);
  const MultipartPart* image = FindPart(*parts, "image");
  ASSERT_NE(image, nullptr);
  EXPECT_TRUE(image->is_file());
  EXPECT_EQ(image->filename, "cat.png");
  EXPECT_EQ(image->content_type, "image/png");
  EXPECT_EQ(image->data, png);
  EXPECT_EQ(FindPart(*parts, "prompt")->data, "a cat wearing a hat");
  EXPECT_EQ(FindPart(*parts, "n")->data, "2");
  EXPECT_EQ(FindPart(*parts, "size")->data, "512x512");
  EXPECT_EQ(FindPart(*parts, "response_format")->data, "b64_json");
  EXPECT_EQ(FindPart(*parts, "model"), nullptr);
}

// RFC 2046 section 5.1.1's own example: a quoted boundary with a space,
// a preamble and an epilogue, and one part with no bytes at all.
TEST(MultipartTest, QuotedBoundaryPreambleEpilogueAndEmptyPart) {
  const std::string body = Lines({
      "This is the preamble.  It is to be ignored, though it",
      "is a handy place for composition agents to include an",
      "explanatory note to non-MIME conformant readers.",
      "",
      "--simple boundary",
      "Content-Disposition: form-data; name=\"empty\"",
      "",
      "",
      "--simple boundary",
      "Content-Disposition: form-data; name=\"note\"",
      "",
      "This is explicitly typed plain US-ASCII text.",
      "It DOES end with a linebreak.",
      "",
      "--simple boundary--",
      "",
      "This is the epilogue.  It is also to be ignored.",
      "--simple boundary",
  });
  auto parts = ParseMultipartFormData("multipart/form-data; boundary=\"simple boundary\"", body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "empty");
  EXPECT_EQ((*parts)[0].data, "");
  EXPECT_EQ((*parts)[1].data, "This is explicitly typed plain US-ASCII text.\r\nIt DOES end with a linebreak.\r\n");
}

TEST(MultipartTest, CaseInsensitiveNamesPaddingAndIgnoredHeaders) {
  const std::string body = Lines({
      "--b=/?:()+_,.'  \t",  // transport padding after the delimiter
      "CONTENT-disposition: Form-Data ; NAME=prompt;filename = \"x.png\" ; ",
      "content-TYPE:  image/png  ",
      "Content-Length: 3",
      "Content-Transfer-Encoding: BINARY",
      "",
      "abc",
      "--b=/?:()+_,.'--",
  });
  auto parts = ParseMultipartFormData("  Multipart/Form-Data ; charset=utf-8; Boundary=b=/?:()+_,.' ", body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].name, "prompt");
  EXPECT_EQ((*parts)[0].filename, "x.png");
  EXPECT_EQ((*parts)[0].content_type, "image/png");
  EXPECT_EQ((*parts)[0].data, "abc");
}

TEST(MultipartTest, QuotedStringEscapes) {
  const std::string body = Lines({
      "--AaB03x",
      R"(Content-Disposition: form-data; name="say \"hi\"; ok"; filename="a\\b\".png")",
      "",
      "x",
      "--AaB03x--",
  });
  auto parts = ParseMultipartFormData(kFormType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ((*parts)[0].name, "say \"hi\"; ok");
  EXPECT_EQ((*parts)[0].filename, "a\\b\".png");
}

TEST(MultipartTest, FindPartTakesTheFirstOfAName) {
  const std::string body = Lines({
      "--AaB03x",
      "Content-Disposition: form-data; name=\"image\"; filename=\"\"",
      "Content-Type: application/octet-stream",
      "",
      "first",
      "--AaB03x",
      "Content-Disposition: form-data; name=\"image\"",
      "",
      "second",
      "--AaB03x--",
  });
  auto parts = ParseMultipartFormData(kFormType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ(FindPart(*parts, "image"), &(*parts)[0]);
  EXPECT_FALSE((*parts)[0].is_file());  // an empty file input
  EXPECT_EQ(FindPart(*parts, "Image"), nullptr);
}

TEST(MultipartTest, NoPartsAtAll) {
  auto parts = ParseMultipartFormData(kFormType, "--AaB03x--\r\n");
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_TRUE(parts->empty());
}

TEST(MultipartTest, RefusesContentTypes) {
  const std::string body = "--AaB03x--";
  EXPECT_EQ(Refusal("application/json", body), "Content-Type 'application/json' is not multipart/form-data");
  EXPECT_EQ(Refusal("multipart/mixed; boundary=AaB03x", body),
            "Content-Type 'multipart/mixed' is not multipart/form-data");
  EXPECT_EQ(Refusal("", body), "Content-Type '' is not multipart/form-data");
  EXPECT_EQ(Refusal("multipart/form-data", body), "Content-Type multipart/form-data has no boundary parameter");
  EXPECT_EQ(Refusal("multipart/form-data; charset=utf-8", body),
            "Content-Type multipart/form-data has no boundary parameter");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=\"\"", body), "multipart/form-data boundary is empty");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=", body), "Content-Type: parameter 'boundary' has no value");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=\"abc", body),
            "Content-Type: unterminated quoted string in parameter 'boundary'");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=a; boundary=b", body),
            "Content-Type has more than one boundary parameter");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=a b", body), "Content-Type: expected ';' before 'b'");
  EXPECT_EQ(Refusal("multipart/form-data; =x", body), "Content-Type: malformed parameter '=x'");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=a@b", body),
            "multipart/form-data boundary 'a@b' contains the byte 0x40, which RFC 2046 does not allow");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=\"ab \"", body),
            "multipart/form-data boundary 'ab ' ends with a space");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=\"" + std::string(71, 'x') + "\"", body),
            "multipart/form-data boundary is 71 bytes long; RFC 2046 allows at most 70");
  EXPECT_EQ(Refusal("multipart/form-data; boundary=a\r\n", body), "Content-Type contains the control byte 0x0d");
  auto seventy = ParseMultipartFormData("multipart/form-data; boundary=" + std::string(70, 'x'),
                                        "--" + std::string(70, 'x') + "--");
  EXPECT_TRUE(seventy.ok()) << seventy.status().ToString();
}

TEST(MultipartTest, RefusesAMissingClosingDelimiter) {
  const std::string head = Lines({"--AaB03x", "Content-Disposition: form-data; name=\"prompt\"", "", "a cat"});
  EXPECT_EQ(Refusal(kFormType, head),
            "invalid multipart/form-data body: the body ends inside part 1 ('prompt'); the closing delimiter is "
            "missing");
  EXPECT_EQ(Refusal(kFormType, head + "\r\n--AaB03x"),
            "invalid multipart/form-data body: the body ends after a delimiter; the closing delimiter is missing");
  EXPECT_EQ(Refusal(kFormType, head + "\r\n--AaB03x  \r"),
            "invalid multipart/form-data body: the body ends after a delimiter; the closing delimiter is missing");
  EXPECT_EQ(Refusal(kFormType, head + "\r\n--AaB03x\r\nContent-Disposition: form-data; name=\"n\"\r\n"),
            "invalid multipart/form-data body: the body ends inside the header block of part 2; the closing "
            "delimiter is missing");
  EXPECT_EQ(Refusal(kFormType, ""),
            "invalid multipart/form-data body: no delimiter line '--' + boundary 'AaB03x' found");
  EXPECT_EQ(Refusal(kFormType, "preamble --AaB03x\r\n"),
            "invalid multipart/form-data body: no delimiter line '--' + boundary 'AaB03x' found");
}

// The close delimiter sits just past the end of the view: the parser must
// not see it.
TEST(MultipartTest, NeverReadsPastTheBody) {
  const std::string whole = Lines({"--AaB03x", "Content-Disposition: form-data; name=\"a\"", "", "x", "--AaB03x--"});
  const std::string_view cut = std::string_view(whole).substr(0, whole.size() - 2);
  EXPECT_TRUE(ParseMultipartFormData(kFormType, whole).ok());
  EXPECT_EQ(Refusal(kFormType, cut),
            "invalid multipart/form-data body: the body ends after a delimiter; the closing delimiter is missing");
  EXPECT_EQ(Refusal(kFormType, std::string_view(whole).substr(0, 8)),
            "invalid multipart/form-data body: the body ends after a delimiter; the closing delimiter is missing");
}

TEST(MultipartTest, RefusesADelimiterThatGoesOn) {
  const std::string body = Lines({"--AaB03x", "Content-Disposition: form-data; name=\"a\"", "", "x", "--AaB03xyz",
                                  "more", "--AaB03x--"});
  EXPECT_EQ(Refusal(kFormType, body),
            "invalid multipart/form-data body: a delimiter line goes on with 'yz\\x0d\\x0amore\\x0d\\x0a--AaB0' "
            "(the boundary must not begin a line inside a part)");
  // Bare LF line ends are not CRLF.
  EXPECT_EQ(Refusal(kFormType, "--AaB03x\nContent-Disposition: form-data; name=\"a\"\n\nx\n--AaB03x--\n"),
            "invalid multipart/form-data body: a delimiter line goes on with '\\x0aContent-Disposi' (the boundary must "
            "not begin a line inside a part)");
}

TEST(MultipartTest, RefusesBadContentDisposition) {
  auto refusal = [](std::initializer_list<std::string_view> headers) {
    std::string body = "--AaB03x\r\n";
    for (std::string_view h : headers) body += std::string(h) + "\r\n";
    return Refusal(kFormType, body + "\r\nx\r\n--AaB03x--");
  };
  const std::string prefix = "invalid multipart/form-data body: ";
  EXPECT_EQ(refusal({}), prefix + "part 1 has no Content-Disposition header");
  EXPECT_EQ(refusal({"Content-Type: text/plain"}), prefix + "part 1 has no Content-Disposition header");
  EXPECT_EQ(refusal({"Content-Disposition: attachment; name=\"a\""}),
            prefix + "part 1 Content-Disposition type 'attachment' is not form-data");
  EXPECT_EQ(refusal({"Content-Disposition: form-data"}), prefix + "part 1 Content-Disposition has no name parameter");
  EXPECT_EQ(refusal({"Content-Disposition: form-data; filename=\"a.png\""}),
            prefix + "part 1 Content-Disposition has no name parameter");
  EXPECT_EQ(refusal({"Content-Disposition: form-data; name=\"\""}),
            prefix + "part 1 Content-Disposition has an empty name");
  EXPECT_EQ(refusal({"Content-Disposition: form-data; name=a; name=b"}),
            prefix + "part 1 Content-Disposition has more than one name parameter");
  EXPECT_EQ(refusal({"Content-Disposition: form-data; name=a; filename=b; filename=c"}),
            prefix + "part 1 Content-Disposition has more than one filename parameter");
  EXPECT_EQ(refusal({"Content-Disposition: form-data; name=\"a"}),
            prefix + "part 1 Content-Disposition: unterminated quoted string in parameter 'name'");
  EXPECT_EQ(refusal({"Content-Disposition: form-data; name=\"a\"", "Content-Disposition: form-data; name=\"b\""}),
            prefix + "part 1 has more than one Content-Disposition header");
  EXPECT_EQ(refusal({"Content-Disposition: form-data; name=\"a\"", "Content-Type: a/b", "Content-Type: c/d"}),
            prefix + "part 1 has more than one Content-Type header");
}

TEST(MultipartTest, RefusesBadHeaderLines) {
  auto refusal = [](std::string_view header) {
    return Refusal(kFormType, "--AaB03x\r\nContent-Disposition: form-data; name=\"a\"\r\n" + std::string(header) +
                                  "\r\n\r\nx\r\n--AaB03x--");
  };
  const std::string prefix = "invalid multipart/form-data body: part 1 ";
  EXPECT_EQ(refusal("no colon here"), prefix + "has a malformed header line 'no colon here'");
  EXPECT_EQ(refusal(": empty name"), prefix + "has a malformed header line ': empty name'");
  EXPECT_EQ(refusal("Bad Name: x"), prefix + "has a malformed header line 'Bad Name: x'");
  EXPECT_EQ(refusal(" folded"), prefix + "uses obsolete header line folding");
  EXPECT_EQ(refusal("X-A: a\nb"), prefix + "header 'X-A' contains the control byte 0x0a");
  EXPECT_EQ(refusal("X-A: a\0b"s), prefix + "header 'X-A' contains the control byte 0x00");
  EXPECT_EQ(refusal("Content-Transfer-Encoding: base64"),
            prefix + "has Content-Transfer-Encoding 'base64'; only 7bit, 8bit and binary are supported");
  // The part ends where its blank line should be.
  EXPECT_EQ(Refusal(kFormType, "--AaB03x\r\nContent-Disposition: form-data; name=\"a\"\r\n--AaB03x--\r\n"),
            prefix + "ends before the blank line that closes its header block");
}

TEST(MultipartTest, LimitsParts) {
  std::string body;
  for (int i = 0; i < 3; ++i) body += "--AaB03x\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n";
  body += "--AaB03x--";
  EXPECT_EQ(Refusal(kFormType, body, {.max_parts = 2}), "invalid multipart/form-data body: more than 2 parts");
  auto three = ParseMultipartFormData(kFormType, body, {.max_parts = 3});
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(three->size(), 3u);
}

TEST(MultipartTest, LimitsHeaderBlock) {
  const std::string headers = "Content-Disposition: form-data; name=\"a\"\r\n\r\n";
  const std::string body = "--AaB03x\r\n" + headers + "x\r\n--AaB03x--";
  EXPECT_TRUE(ParseMultipartFormData(kFormType, body, {.max_header_bytes = headers.size()}).ok());
  EXPECT_EQ(Refusal(kFormType, body, {.max_header_bytes = headers.size() - 1}),
            "invalid multipart/form-data body: part 1 header block is over " + std::to_string(headers.size() - 1) +
                " bytes");
  // A megabyte of header line with no end is refused after max_header_bytes.
  const std::string endless = "--AaB03x\r\nX-Filler: " + std::string(1 << 20, 'a');
  EXPECT_EQ(Refusal(kFormType, endless), "invalid multipart/form-data body: part 1 header block is over 8192 bytes");
}

// Client text quoted in a message is cut and escaped.
TEST(MultipartTest, MessagesQuoteClientTextSafely) {
  const std::string long_type = "text/" + std::string(10000, 'x') + "\x1b[31m";
  const std::string message = Refusal(long_type, "");
  EXPECT_EQ(message, "Content-Type contains the control byte 0x1b");
  const std::string huge = Refusal("application/" + std::string(10000, 'y'), "");
  EXPECT_LT(huge.size(), 160u);
  EXPECT_NE(huge.find("... (10012 bytes)"), std::string::npos) << huge;
  const std::string type = Refusal(kFormType, "--AaB03x\r\nContent-Disposition: \xff\x1b\r\n\r\n\r\n--AaB03x--");
  EXPECT_EQ(type,
            "invalid multipart/form-data body: part 1 header 'Content-Disposition' contains the control byte 0x1b");
  const std::string latin = Refusal(kFormType, "--AaB03x\r\nContent-Disposition: caf\xe9'\\\r\n\r\n\r\n--AaB03x--");
  EXPECT_EQ(latin,
            "invalid multipart/form-data body: part 1 Content-Disposition type 'caf\\xe9\\x27\\x5c' is not "
            "form-data");
}

// Many near-miss delimiters and a large file part stay linear: a quadratic
// search would not finish inside the test's timeout.
TEST(MultipartTest, LargeBodyWithNearMisses) {
  std::string data;
  while (data.size() < (8u << 20)) data += "\r\n--AaB03\r\n-";
  const std::string body = Lines({"--AaB03x", "Content-Disposition: form-data; name=\"image\"; filename=\"a\"", ""}) +
                           "\r\n" + data + "\r\n--AaB03x--";
  auto parts = ParseMultipartFormData(kFormType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ((*parts)[0].data, data);
}

// fuzz/corpus/multipart through the fuzz target (fuzz/corpus_replay.h): the
// first line of each file is the Content-Type, the rest the body.
TEST(MultipartTest, CorpusParsesOrFailsCleanly) {
  auto replay = testing::ReplayCorpus(OMNI_FUZZ_CORPUS, [](const std::string& input) {
    const size_t newline = input.find('\n');
    if (newline == std::string::npos) return false;
    const std::string_view bytes = input;
    return ParseMultipartFormData(bytes.substr(0, newline), bytes.substr(newline + 1),
                                  {.max_parts = 8, .max_header_bytes = 256})
        .ok();
  });
  EXPECT_GE(replay.files, 8);
  EXPECT_EQ(replay.accepted, 4);
}

}  // namespace
}  // namespace omni
