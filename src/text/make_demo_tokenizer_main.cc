// make_demo_tokenizer OUT.json [NUM_VISION_CODES NUM_AUDIO_CODES [NUM_MERGES]]
// Writes the demo tokenizer.json; the small code counts make test fixtures.
#include <cstdio>
#include <fstream>
#include <string>

#include "text/demo_tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s OUT.json [NUM_VISION_CODES NUM_AUDIO_CODES [NUM_MERGES]]\n", argv[0]);
    return 2;
  }
  omni::DemoTokenizerSpec spec;
  try {
    if (argc >= 4) {
      spec.num_vision_codes = std::stoi(argv[2]);
      spec.num_audio_codes = std::stoi(argv[3]);
    }
    if (argc == 5) spec.num_merges = std::stoi(argv[4]);
  } catch (const std::exception&) {
    std::fprintf(stderr, "counts must be integers\n");
    return 2;
  }
  omni::StatusOr<std::string> json = omni::MakeDemoTokenizerJson(spec);
  if (!json.ok()) {
    std::fprintf(stderr, "%s\n", json.status().ToString().c_str());
    return 1;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << *json;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
