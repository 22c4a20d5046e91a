#include "engine/kv_events.h"

namespace omni {

// Out of line so GCC does not speculatively devirtualize Publish into callers
// (which trips a -Wmaybe-uninitialized false positive in std::variant).
void RecordingKvEventSink::Publish(KvEvent&& event) { events.push_back(std::move(event)); }

}  // namespace omni
