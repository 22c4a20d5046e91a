#include "cli/fetch_flags.h"

#include <CLI/CLI.hpp>

#include "storage/fetch_policy.h"

namespace omni::cli {

void AddMediaFetchFlags(CLI::App* sub, MediaFetchFlags* f) {
  sub->add_option("--max-media-bytes", f->max_media_bytes, "largest medium fetched or sent inline; larger get 413")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  sub->add_option("--media-root", f->media_root, "file:// media URLs are read only beneath this directory (default: none)");
  sub->add_flag("--fetch-allow-loopback", f->fetch_allow_loopback,
                "let http:// media URLs reach loopback addresses (127/8, ::1); refused by default");
  sub->add_flag("--fetch-allow-private", f->fetch_allow_private,
                "let http:// media URLs reach private addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)");
  sub->add_option("--fetch-allow", f->fetch_allow, "let http:// media URLs reach this CIDR (repeatable)");
  sub->add_option("--fetch-ca-file", f->fetch_ca_file,
                  "https media URLs: CA certificates (PEM) servers are verified against (default: the system's)");
  sub->add_option("--fetch-timeout-ms", f->fetch_timeout_ms, "time limit of one media fetch, redirects included")
      ->capture_default_str()
      ->check(CLI::Range(1, 3'600'000));
}

StatusOr<MediaFetchSetup> MakeMediaFetcher(const MediaFetchFlags& f, media::S3Reader read_s3) {
  FetchPolicy policy{.allow_loopback = f.fetch_allow_loopback, .allow_private = f.fetch_allow_private};
  for (const std::string& cidr : f.fetch_allow) {
    StatusOr<IpCidr> parsed = IpCidr::Parse(cidr);
    if (!parsed.ok()) return InvalidArgument("--fetch-allow: " + parsed.status().message());
    policy.allow.push_back(*parsed);
  }
  MediaFetchSetup s;
  s.http = std::make_unique<HttpClient>(HttpClientOptions{.ca_file = f.fetch_ca_file});
  if (Status tls = s.http->tls_status(); !tls.ok()) return InvalidArgument("--fetch-ca-file: " + tls.message());
  s.fetcher = std::make_unique<media::MediaFetcher>(
      media::MediaFetchOptions{.max_bytes = static_cast<size_t>(f.max_media_bytes),
                               .timeout = std::chrono::milliseconds(f.fetch_timeout_ms),
                               .policy = std::move(policy),
                               .file_root = f.media_root,
                               .read_s3 = std::move(read_s3)},
      s.http.get());
  return s;
}

}  // namespace omni::cli
