// `omniserve store ...` against a file:// store, through the real binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "child_process.h"

namespace omni {
namespace {

using testing::Child;
namespace fs = std::filesystem;

struct Result {
  int exit_code;
  std::string output;
};

Result RunCli(std::vector<std::string> args) {
  Child c(std::move(args));
  int status = c.Wait();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, c.output()};
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class StoreCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("omni-store-cli-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
    uri_ = "file://" + (dir_ / "store").string();
    payload_ = std::string("binary\0bytes\n", 13) + std::string(100000, 'x');
    std::ofstream(dir_ / "in" / "blob.bin", std::ios::binary) << payload_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string uri_;
  std::string payload_;
};

TEST_F(StoreCliTest, PutListHeadGetPresignRemove) {
  std::string in = (dir_ / "in" / "blob.bin").string();
  ASSERT_EQ(RunCli({"store", "put", "--store", uri_, "--content-type", "application/x-test", "emb/m/abc.bin", in}).exit_code, 0);

  Result ls = RunCli({"store", "ls", "--store", uri_, "emb/"});
  ASSERT_EQ(ls.exit_code, 0) << ls.output;
  EXPECT_NE(ls.output.find("\t100013\temb/m/abc.bin\n"), std::string::npos) << ls.output;
  EXPECT_EQ(RunCli({"store", "ls", "--store", uri_, "other/"}).output, "");

  Result head = RunCli({"store", "head", "--store", uri_, "emb/m/abc.bin"});
  ASSERT_EQ(head.exit_code, 0) << head.output;
  auto j = nlohmann::json::parse(head.output);
  EXPECT_EQ(j["size"], 100013);
  EXPECT_EQ(j["content_type"], "application/x-test");

  fs::path out = dir_ / "out.bin";
  ASSERT_EQ(RunCli({"store", "get", "--store", uri_, "emb/m/abc.bin", out.string()}).exit_code, 0);
  EXPECT_EQ(ReadFile(out), payload_);
  Result to_stdout = RunCli({"store", "get", "--store", uri_, "emb/m/abc.bin", "-"});
  EXPECT_EQ(to_stdout.output, payload_);

  Result url = RunCli({"store", "presign", "--store", uri_, "--expires", "60", "emb/m/abc.bin"});
  ASSERT_EQ(url.exit_code, 0) << url.output;
  ASSERT_EQ(url.output.rfind("file://", 0), 0u) << url.output;
  std::string path = url.output.substr(7, url.output.size() - 8);  // strip scheme and newline
  EXPECT_EQ(ReadFile(path), payload_);

  ASSERT_EQ(RunCli({"store", "rm", "--store", uri_, "emb/m/abc.bin"}).exit_code, 0);
  Result gone = RunCli({"store", "get", "--store", uri_, "emb/m/abc.bin"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.output.find("not_found"), std::string::npos) << gone.output;
}

TEST_F(StoreCliTest, ErrorsAreOneLineWithNonZeroExit) {
  std::string in = (dir_ / "in" / "blob.bin").string();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"store", "put", "--store", uri_, "../escape", in},
           {"store", "get", "--store", uri_, "missing/key"},
           {"store", "head", "--store", "ftp://host/x", "k"},
           {"store", "presign", "--store", uri_, "--method", "POST", "k"},
       }) {
    Result r = RunCli(args);
    EXPECT_NE(r.exit_code, 0) << args[1];
    EXPECT_FALSE(r.output.empty()) << args[1];
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "more than one line: " << r.output;
  }
  EXPECT_NE(RunCli({"store", "put", "--store", uri_, "../escape", in}).output.find("invalid object key"), std::string::npos);
}

}  // namespace
}  // namespace omni
