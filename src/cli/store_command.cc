#include "cli/store_command.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "storage/open_store.h"
#include "storage/s3/s3_store.h"

namespace omni::cli {
namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "omniserve store: %s\n", s.ToString().c_str());
  return 1;
}

std::string IsoTime(Clock::WallTime t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int Get(ObjectStore& store, const StoreFlags& f) {
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (!f.file.empty() && f.file != "-") {
    file.open(f.file, std::ios::binary | std::ios::trunc);
    if (!file) return Fail(InvalidArgument("cannot write " + f.file));
    out = &file;
  }
  Status s = store.GetStream(f.key, std::nullopt, [&](std::string_view chunk) {
    out->write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    return static_cast<bool>(*out);
  });
  if (!s.ok()) return Fail(s);
  out->flush();
  if (!*out) return Fail(Internal("write failed"));
  return 0;
}

int Run(const std::string& verb, ObjectStore& store, const StoreFlags& f) {
  if (verb == "put") {
    Status s = store.PutFile(f.key, f.file, PutOptions{.content_type = f.content_type});
    return s.ok() ? 0 : Fail(s);
  }
  if (verb == "get") return Get(store, f);
  if (verb == "head") {
    auto info = store.Head(f.key);
    if (!info.ok()) return Fail(info.status());
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& [k, v] : info->metadata) meta[k] = v;
    nlohmann::json j = {{"key", info->key}, {"size", info->size}, {"content_type", info->content_type},
                        {"etag", info->etag}, {"last_modified", IsoTime(info->last_modified)}, {"metadata", meta}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (verb == "ls") {
    auto list = store.List(f.prefix);
    if (!list.ok()) return Fail(list.status());
    for (const auto& o : *list) {
      std::printf("%s\t%llu\t%s\n", IsoTime(o.last_modified).c_str(), static_cast<unsigned long long>(o.size),
                  o.key.c_str());
    }
    return 0;
  }
  if (verb == "rm") {
    Status s = store.Delete(f.key);
    return s.ok() ? 0 : Fail(s);
  }
  if (verb == "presign") {
    PresignMethod m = f.method == "PUT" ? PresignMethod::kPut : PresignMethod::kGet;
    auto url = store.Presign(f.key, m, std::chrono::seconds(f.expires));
    if (!url.ok()) return Fail(url.status());
    std::printf("%s\n", url->c_str());
    return 0;
  }
  return Fail(InvalidArgument("unknown store command " + verb));
}

}  // namespace

CLI::App* AddStoreCommand(CLI::App& app, StoreFlags* flags) {
  StoreFlags& f = *flags;
  CLI::App* store = app.add_subcommand("store", "put/get/head/ls/rm/presign objects in a file:// or s3:// store");
  store->require_subcommand(1);
  store->footer("s3:// stores read AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.");
  auto add = [&](const char* name, const char* help) {
    CLI::App* sub = store->add_subcommand(name, help);
    sub->add_option("--store", f.uri, "file:///abs/dir or s3://bucket/prefix?endpoint=...&region=...")->required();
    return sub;
  };
  CLI::App* put = add("put", "upload FILE as KEY");
  put->add_option("KEY", f.key)->required();
  put->add_option("FILE", f.file)->required()->check(CLI::ExistingFile);
  put->add_option("--content-type", f.content_type)->capture_default_str();
  CLI::App* get = add("get", "download KEY to FILE, or to stdout with - or no FILE");
  get->add_option("KEY", f.key)->required();
  get->add_option("FILE", f.file);
  add("head", "print KEY's size, type, etag, time and metadata as JSON")->add_option("KEY", f.key)->required();
  add("ls", "list objects under PREFIX: time, size, key")->add_option("PREFIX", f.prefix);
  add("rm", "delete KEY")->add_option("KEY", f.key)->required();
  CLI::App* presign = add("presign", "print a presigned URL for KEY");
  presign->add_option("--method", f.method)->check(CLI::IsMember({"GET", "PUT"}))->capture_default_str();
  presign->add_option("--expires", f.expires, "lifetime in seconds")->check(CLI::Range(1, 604800))->capture_default_str();
  presign->add_option("KEY", f.key)->required();
  return store;
}

int RunStoreCommand(CLI::App* store, const StoreFlags& f) {
  auto opened = OpenObjectStore(f.uri, S3CredentialsFromEnv());
  if (!opened.ok()) return Fail(opened.status());
  return Run(store->get_subcommands().front()->get_name(), **opened, f);
}

}  // namespace omni::cli
