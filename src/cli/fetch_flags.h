// The outbound media-fetch flags every role that reads media URLs shares
// (the encoder's media, the audio decoder's reference clips), and the
// MediaFetcher they make (media/media_fetch.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "media/media_fetch.h"
#include "net/http_client.h"

namespace CLI {
class App;
}

namespace omni::cli {

struct MediaFetchFlags {
  int64_t max_media_bytes = 64ll << 20;
  std::string media_root;  // file:// media are read only beneath it; empty: none
  bool fetch_allow_loopback = false;
  bool fetch_allow_private = false;
  std::vector<std::string> fetch_allow;
  int fetch_timeout_ms = 30'000;
  std::string fetch_ca_file;
};

// --max-media-bytes, --media-root, --fetch-allow-loopback,
// --fetch-allow-private, --fetch-allow, --fetch-ca-file, --fetch-timeout-ms.
void AddMediaFetchFlags(CLI::App* sub, MediaFetchFlags* f);

// The HTTP client and the fetcher over it; s3:// URLs through `read_s3`.
// InvalidArgument naming the flag for a bad CIDR or CA file.
struct MediaFetchSetup {
  std::unique_ptr<HttpClient> http;
  std::unique_ptr<media::MediaFetcher> fetcher;
};
StatusOr<MediaFetchSetup> MakeMediaFetcher(const MediaFetchFlags& f, media::S3Reader read_s3);

}  // namespace omni::cli
