// Put+get of one object on an S3 server through S3Store, against curl 7.88's
// own SigV4 (`--aws-sigv4`) doing the same PUT and GET of the same bytes.
// Each round is one PUT and one GET; curl rounds include starting curl (that
// is what a script pays). Prints the median and total of each and the ratio.
//
//   s3_vs_curl ENDPOINT ACCESS_KEY SECRET REGION [ROUNDS] [BYTES]
// run.sh starts a Swift server and passes its env line.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "storage/s3/s3_store.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// curl's user:password cannot hold the colon of Swift's "test:tester", so the
// credentials go into the URL, percent-encoded (docs/S3_TEST_SERVER.md).
std::string PctColon(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == ':') ? std::string("%3A") : std::string(1, c);
  return out;
}

int Run(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s ENDPOINT ACCESS_KEY SECRET REGION [ROUNDS] [BYTES]\n", argv[0]);
    return 2;
  }
  const std::string endpoint = argv[1], access = argv[2], secret = argv[3], region = argv[4];
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 20;
  const size_t bytes = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : (4u << 20);
  const std::string bucket = "omni-bench-" + std::to_string(getpid());

  std::string data(bytes, '\0');
  std::mt19937 rng(1);
  for (char& c : data) c = static_cast<char>(rng());
  const std::string file = "/tmp/omni-s3-bench-" + std::to_string(getpid()) + ".bin";
  const std::string out_file = file + ".out";
  std::ofstream(file, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));

  auto opened = omni::S3Store::Open("s3://" + bucket + "?endpoint=" + endpoint + "&region=" + region,
                                    omni::S3Credentials{access, secret, ""}, {});
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    return 1;
  }
  auto& store = *opened;
  if (auto st = store->CreateBucket(); !st.ok()) {
    std::fprintf(stderr, "create bucket: %s\n", st.ToString().c_str());
    return 1;
  }

  // curl gets the payload hash precomputed (curl 7.88 does not compute one).
  const std::string sha = omni::Sha256Hex(data);
  const std::string host = endpoint.substr(endpoint.find("://") + 3);
  const std::string auth_url = "http://" + PctColon(access) + ":" + secret + "@" + host + "/" + bucket + "/curl-obj";
  const std::string sigv4 = " --aws-sigv4 'aws:amz:" + region + ":s3' ";
  const std::string curl_put = "/usr/bin/curl -sf -o /dev/null -X PUT -T " + file + sigv4 +
                               "-H 'x-amz-content-sha256: " + sha + "' '" + auth_url + "'";
  const std::string curl_get = "/usr/bin/curl -sf -o " + out_file + sigv4 +
                               "-H 'x-amz-content-sha256: " + std::string(omni::kEmptyPayloadSha256) + "' '" +
                               auth_url + "'";

  std::vector<double> ours, theirs;
  for (int i = -1; i < rounds; ++i) {  // round -1 warms both up and is not counted
    auto t0 = Clock::now();
    if (!store->Put("omni-obj", data).ok()) return std::fprintf(stderr, "S3Store put failed\n"), 1;
    auto got = store->Get("omni-obj");
    if (!got.ok() || *got != data) return std::fprintf(stderr, "S3Store get failed\n"), 1;
    auto t1 = Clock::now();
    if (Run(curl_put) != 0 || Run(curl_get) != 0) return std::fprintf(stderr, "curl failed: %s\n", curl_put.c_str()), 1;
    auto t2 = Clock::now();
    std::ifstream in(out_file, std::ios::binary);
    std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (back != data) return std::fprintf(stderr, "curl GET returned other bytes\n"), 1;
    if (i >= 0) {
      ours.push_back(Ms(t1 - t0));
      theirs.push_back(Ms(t2 - t1));
    }
  }
  std::remove(file.c_str());
  std::remove(out_file.c_str());
  (void)store->DeleteBucketAndContents();

  std::printf("object %zu bytes, %d rounds of PUT+GET (interleaved)\n", bytes, rounds);
  std::printf("S3Store   median %8.2f ms  total %9.1f ms\n", Median(ours), Sum(ours));
  std::printf("curl      median %8.2f ms  total %9.1f ms\n", Median(theirs), Sum(theirs));
  std::printf("ratio S3Store/curl: median %.3f  total %.3f  (target <= 1.3)\n", Median(ours) / Median(theirs),
              Sum(ours) / Sum(theirs));
  return 0;
}
