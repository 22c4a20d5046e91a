#include "storage/s3/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <ctime>
#include <map>

#include "core/check.h"
#include "storage/content_hash.h"

namespace omni {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// SigV4's Trimall: strip leading and trailing whitespace and turn each run of
// inner whitespace into one space (the AWS SDKs do the same).
std::string TrimAll(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  bool pending_space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

std::string CredentialScope(std::string_view date, const SigV4Scope& scope) {
  std::string s(date);
  s += '/';
  s += scope.region;
  s += '/';
  s += scope.service;
  s += "/aws4_request";
  return s;
}

std::string StringToSign(std::string_view amz_date, std::string_view credential_scope,
                         std::string_view canonical_request) {
  std::string s(kAlgorithm);
  s += '\n';
  s += amz_date;
  s += '\n';
  s += credential_scope;
  s += '\n';
  s += Sha256Hex(canonical_request);
  return s;
}

// Canonical headers ("name:value\n" each, sorted) and the signed-header list.
struct CanonicalHeaders {
  std::string block;
  std::string names;
};

CanonicalHeaders Canonicalize(const SignedHeaderList& headers) {
  std::map<std::string, std::string> merged;  // sorted by lower-case name
  for (const auto& [name, value] : headers) {
    std::string key = Lower(TrimAll(name));
    std::string v = TrimAll(value);
    auto [it, inserted] = merged.emplace(key, v);
    if (!inserted) it->second += "," + v;  // repeated headers are signed comma-joined
  }
  CanonicalHeaders out;
  for (const auto& [name, value] : merged) {
    out.block += name + ":" + value + "\n";
    if (!out.names.empty()) out.names += ';';
    out.names += name;
  }
  return out;
}

std::string CanonicalRequest(const SigV4Request& r, const QueryParams& query, const CanonicalHeaders& headers,
                             std::string_view payload_hash) {
  std::string cr = r.method;
  cr += '\n';
  cr += UriEncodePath(r.path.empty() ? "/" : r.path);
  cr += '\n';
  cr += CanonicalQueryString(query);
  cr += '\n';
  cr += headers.block;
  cr += '\n';
  cr += headers.names;
  cr += '\n';
  cr += payload_hash;
  return cr;
}

std::string SignString(const S3Credentials& creds, std::string_view date, const SigV4Scope& scope,
                       std::string_view string_to_sign) {
  return HexEncode(HmacSha256(SigV4SigningKey(creds.secret_access_key, date, scope), string_to_sign));
}

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string CanonicalQueryString(const QueryParams& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) encoded.emplace_back(UriEncode(name, false), UriEncode(value, false));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

std::string FormatAmzDate(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string SigV4SigningKey(std::string_view secret, std::string_view date, const SigV4Scope& scope) {
  std::string key = HmacSha256("AWS4" + std::string(secret), date);
  key = HmacSha256(key, scope.region);
  key = HmacSha256(key, scope.service);
  return HmacSha256(key, "aws4_request");
}

SigV4Signed SignRequest(const SigV4Request& request, const S3Credentials& creds, const SigV4Scope& scope,
                        std::chrono::system_clock::time_point now) {
  SigV4Signed out;
  out.amz_date = FormatAmzDate(now);
  const std::string date = out.amz_date.substr(0, 8);

  out.headers_to_send.emplace_back("x-amz-date", out.amz_date);
  out.headers_to_send.emplace_back("x-amz-content-sha256", request.payload_sha256);
  if (!creds.session_token.empty()) out.headers_to_send.emplace_back("x-amz-security-token", creds.session_token);

  SignedHeaderList to_sign = request.headers;
  to_sign.emplace_back("host", request.host);
  to_sign.insert(to_sign.end(), out.headers_to_send.begin(), out.headers_to_send.end());
  CanonicalHeaders canonical = Canonicalize(to_sign);

  out.canonical_request = CanonicalRequest(request, request.query, canonical, request.payload_sha256);
  const std::string scope_str = CredentialScope(date, scope);
  out.string_to_sign = StringToSign(out.amz_date, scope_str, out.canonical_request);
  out.signature = SignString(creds, date, scope, out.string_to_sign);
  out.signed_headers = canonical.names;
  out.authorization = std::string(kAlgorithm) + " Credential=" + creds.access_key_id + "/" + scope_str +
                      ", SignedHeaders=" + canonical.names + ", Signature=" + out.signature;
  out.headers_to_send.emplace_back("authorization", out.authorization);
  return out;
}

SigV4Presigned PresignRequest(const SigV4Request& request, const S3Credentials& creds, const SigV4Scope& scope,
                              std::chrono::system_clock::time_point now, std::chrono::seconds ttl) {
  const std::string amz_date = FormatAmzDate(now);
  const std::string date = amz_date.substr(0, 8);
  const std::string scope_str = CredentialScope(date, scope);

  QueryParams query = request.query;
  query.emplace_back("X-Amz-Algorithm", std::string(kAlgorithm));
  query.emplace_back("X-Amz-Credential", creds.access_key_id + "/" + scope_str);
  query.emplace_back("X-Amz-Date", amz_date);
  query.emplace_back("X-Amz-Expires", std::to_string(ttl.count()));
  if (!creds.session_token.empty()) query.emplace_back("X-Amz-Security-Token", creds.session_token);
  query.emplace_back("X-Amz-SignedHeaders", "host");

  CanonicalHeaders canonical = Canonicalize({{"host", request.host}});
  SigV4Presigned out;
  out.canonical_request = CanonicalRequest(request, query, canonical, kUnsignedPayload);
  out.string_to_sign = StringToSign(amz_date, scope_str, out.canonical_request);
  out.signature = SignString(creds, date, scope, out.string_to_sign);
  query.emplace_back("X-Amz-Signature", out.signature);
  out.query = CanonicalQueryString(query);
  return out;
}

}  // namespace omni
