#include "storage/fetch_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace omni {
namespace {

IpAddress Ip(std::string_view text) {
  std::optional<IpAddress> a = IpAddress::Parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(IpAddress{});
}

TEST(FetchPolicy, ClassifiesAddresses) {
  const std::map<std::string, AddressKind> cases = {
      {"8.8.8.8", AddressKind::kPublic},
      {"2606:4700::1111", AddressKind::kPublic},
      {"127.0.0.1", AddressKind::kLoopback},
      {"127.255.1.2", AddressKind::kLoopback},
      {"::1", AddressKind::kLoopback},
      {"10.1.2.3", AddressKind::kPrivate},
      {"172.16.0.1", AddressKind::kPrivate},
      {"172.31.255.255", AddressKind::kPrivate},
      {"172.32.0.1", AddressKind::kPublic},
      {"192.168.1.1", AddressKind::kPrivate},
      {"100.64.0.1", AddressKind::kSharedCgnat},
      {"100.127.255.255", AddressKind::kSharedCgnat},
      {"100.128.0.1", AddressKind::kPublic},
      {"169.254.169.254", AddressKind::kLinkLocal},
      {"fe80::1", AddressKind::kLinkLocal},
      {"febf::1", AddressKind::kLinkLocal},
      {"fc00::1", AddressKind::kUniqueLocal},
      {"fd12:3456::1", AddressKind::kUniqueLocal},
      {"224.0.0.1", AddressKind::kMulticast},
      {"ff02::1", AddressKind::kMulticast},
      {"0.0.0.0", AddressKind::kUnspecified},
      {"0.1.2.3", AddressKind::kUnspecified},
      {"::", AddressKind::kUnspecified},
      {"255.255.255.255", AddressKind::kBroadcast},
      {"240.0.0.1", AddressKind::kReserved},
      // IPv6 forms that carry an IPv4 address count as that address.
      {"::ffff:127.0.0.1", AddressKind::kLoopback},
      {"::ffff:7f00:1", AddressKind::kLoopback},
      {"::ffff:169.254.169.254", AddressKind::kLinkLocal},
      {"::ffff:10.0.0.1", AddressKind::kPrivate},
      {"::ffff:8.8.8.8", AddressKind::kPublic},
      {"::127.0.0.1", AddressKind::kLoopback},
      {"64:ff9b::a00:1", AddressKind::kPrivate},
      {"2002:7f00:1::", AddressKind::kLoopback},
  };
  for (const auto& [text, kind] : cases) {
    EXPECT_EQ(ClassifyAddress(Ip(text)), kind) << text << " is " << AddressKindName(ClassifyAddress(Ip(text)));
  }
}

TEST(FetchPolicy, ParsesCidrsAndMatchesMappedForms) {
  auto cidr = IpCidr::Parse("10.0.0.0/8");
  ASSERT_TRUE(cidr.ok());
  EXPECT_TRUE(cidr->Contains(Ip("10.200.0.1")));
  EXPECT_TRUE(cidr->Contains(Ip("::ffff:10.200.0.1")));
  EXPECT_FALSE(cidr->Contains(Ip("11.0.0.1")));
  auto one = IpCidr::Parse("169.254.169.254");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->prefix_len, 32);
  EXPECT_FALSE(one->Contains(Ip("169.254.169.253")));
  auto v6 = IpCidr::Parse("fd00::/8");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->Contains(Ip("fd12::1")));
  EXPECT_FALSE(v6->Contains(Ip("10.0.0.1")));
  EXPECT_TRUE(IpCidr::Parse("0.0.0.0/0")->Contains(Ip("1.2.3.4")));
  for (const char* bad : {"", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "10/8", "host/8", "::/129", "10.0.0.0/-1"}) {
    EXPECT_EQ(IpCidr::Parse(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(FetchPolicy, RefusesInternalAddressesUnlessAllowed) {
  FetchPolicy strict;
  for (const char* text : {"127.0.0.1", "::1", "10.0.0.1", "172.20.0.1", "192.168.0.1", "100.64.0.1",
                           "169.254.169.254", "fe80::1", "fd00::1", "224.0.0.1", "0.0.0.0", "::",
                           "255.255.255.255", "::ffff:127.0.0.1", "::ffff:169.254.169.254"}) {
    EXPECT_TRUE(RefusalReason(Ip(text), strict).has_value()) << text;
  }
  EXPECT_FALSE(RefusalReason(Ip("8.8.8.8"), strict).has_value());
  EXPECT_EQ(*RefusalReason(Ip("127.0.0.1"), strict),
            "the address 127.0.0.1 is loopback (allow it with --fetch-allow-loopback)");

  FetchPolicy loopback{.allow_loopback = true};
  EXPECT_FALSE(RefusalReason(Ip("127.0.0.1"), loopback).has_value());
  EXPECT_FALSE(RefusalReason(Ip("::ffff:127.0.0.1"), loopback).has_value());
  EXPECT_TRUE(RefusalReason(Ip("10.0.0.1"), loopback).has_value());

  FetchPolicy private_ok{.allow_private = true};
  EXPECT_FALSE(RefusalReason(Ip("10.0.0.1"), private_ok).has_value());
  EXPECT_FALSE(RefusalReason(Ip("100.64.0.1"), private_ok).has_value());
  EXPECT_FALSE(RefusalReason(Ip("fd00::1"), private_ok).has_value());
  EXPECT_TRUE(RefusalReason(Ip("127.0.0.1"), private_ok).has_value());
  EXPECT_TRUE(RefusalReason(Ip("169.254.169.254"), private_ok).has_value());  // never by a flag

  FetchPolicy cidr{.allow = {*IpCidr::Parse("169.254.10.0/24")}};
  EXPECT_FALSE(RefusalReason(Ip("169.254.10.7"), cidr).has_value());
  EXPECT_TRUE(RefusalReason(Ip("169.254.169.254"), cidr).has_value());
}

// A resolver with fixed answers; names it does not know do not resolve.
HostResolver FakeDns(std::map<std::string, std::vector<std::string>> answers) {
  return [answers](const std::string& host, std::chrono::milliseconds) -> StatusOr<std::vector<IpAddress>> {
    auto it = answers.find(host);
    if (it == answers.end()) return Unavailable("cannot resolve " + host);
    std::vector<IpAddress> out;
    for (const std::string& a : it->second) out.push_back(*IpAddress::Parse(a));
    return out;
  };
}

TEST(FetchPolicy, ChecksEveryResolvedAddressAndPinsTheFirst) {
  FetchPolicy policy{.resolver = FakeDns({{"public.test", {"93.184.216.34", "2606:2800:220:1::1"}},
                                          {"internal.test", {"10.1.2.3"}},
                                          {"mixed.test", {"93.184.216.34", "127.0.0.1"}}})};
  auto ok = CheckFetchTarget("http://public.test:8080/a?sig=1", policy);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->address.ToString(), "93.184.216.34");
  EXPECT_EQ(ok->url.HostPort(), "public.test:8080");

  auto internal = CheckFetchTarget("http://internal.test/a?sig=secret", policy);
  auto mixed = CheckFetchTarget("http://mixed.test/a", policy);
  auto unknown = CheckFetchTarget("http://nxdomain.test/a", policy);
  for (const auto* r : {&internal, &mixed, &unknown}) {
    EXPECT_EQ(r->status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r->status().message().find("does not resolve to an address the server may fetch from"),
              std::string::npos)
        << r->status().message();
    EXPECT_EQ(r->status().message().find("10.1.2.3"), std::string::npos);  // internal DNS stays private
  }
  EXPECT_EQ(internal.status().message().find("secret"), std::string::npos);  // no query in messages

  policy.allow_private = true;
  EXPECT_EQ(CheckFetchTarget("http://internal.test/a", policy)->address.ToString(), "10.1.2.3");
}

TEST(FetchPolicy, RefusesLiteralsSchemesAndInjection) {
  FetchPolicy policy{.resolver = FakeDns({})};
  auto loop = CheckFetchTarget("http://127.0.0.1:8001/v1/x?y", policy);
  EXPECT_EQ(loop.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(loop.status().message(),
            "fetching http://127.0.0.1:8001/v1/x?... is not allowed: the address 127.0.0.1 is loopback (allow it "
            "with --fetch-allow-loopback)");
  auto mapped = CheckFetchTarget("http://[::ffff:169.254.169.254]/latest/meta-data", policy);
  EXPECT_NE(mapped.status().message().find("is link-local"), std::string::npos) << mapped.status().message();
  EXPECT_EQ(CheckFetchTarget("http://[::1]:80/", policy).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckFetchTarget("http://0.0.0.0/", policy).status().code(), StatusCode::kInvalidArgument);
  auto https = CheckFetchTarget("https://8.8.8.8/", policy);
  ASSERT_TRUE(https.ok()) << https.status().ToString();
  EXPECT_EQ(https->url.port, 443);
  EXPECT_EQ(CheckFetchTarget("https://10.0.0.1/", policy).status().code(), StatusCode::kInvalidArgument);
  for (const char* bad : {"file:///etc/passwd", "gopher://8.8.8.8/", "ftp://8.8.8.8/", "http:///x",
                          "http://8.8.8.8/a b", "http://8.8.8.8/a\r\nHost: x", "http://ex%41mple.test/",
                          "http://[fe80::1%25eth0]/", "http://user@8.8.8.8/"}) {
    EXPECT_EQ(CheckFetchTarget(bad, policy).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // Literal forms getaddrinfo would accept ("127.1", decimal) are host names
  // here: they go through the resolver, whose answers are then checked.
  FetchPolicy system;
  EXPECT_EQ(CheckFetchTarget("http://127.1/", system).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckFetchTarget("http://2130706433/", system).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckFetchTarget("http://localhost/", system).status().code(), StatusCode::kInvalidArgument);
}

TEST(FetchPolicy, SystemResolverAnswersAndIsBounded) {
  auto local = ResolveHost("localhost", std::chrono::seconds(5));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  for (const IpAddress& a : *local) EXPECT_EQ(ClassifyAddress(a), AddressKind::kLoopback) << a.ToString();
  auto literal = ResolveHost("127.0.0.1", std::chrono::seconds(5));
  ASSERT_TRUE(literal.ok());
  EXPECT_EQ(literal->front().ToString(), "127.0.0.1");
}

}  // namespace
}  // namespace omni
