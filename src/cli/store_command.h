// `omniserve store put|get|head|ls|rm|presign --store URI ...`: the object
// store from the command line, for people and scripts (docs/CLI.md).
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace omni::cli {

struct StoreFlags {
  std::string uri;
  std::string key;
  std::string file;
  std::string prefix;
  std::string content_type = "application/octet-stream";
  std::string method = "GET";
  int64_t expires = 3600;
};

// Adds the `store` subcommand tree to `app`, binding its flags to `*flags`
// (which must outlive parsing); returns it.
CLI::App* AddStoreCommand(CLI::App& app, StoreFlags* flags);
// Runs the chosen store subcommand; returns the process exit code. Errors
// are one line on stderr.
int RunStoreCommand(CLI::App* store, const StoreFlags& flags);

}  // namespace omni::cli
