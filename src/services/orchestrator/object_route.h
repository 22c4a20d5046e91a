// GET /v1/objects/<key>?expires=..&signature=..: the orchestrator serves the
// objects it hands to clients (generated images, later audio) at signed,
// expiring URLs on its client port, since a local store's file:// URL is
// useless to a client on another machine (storage/signed_url.h). The check is
// S3's: a missing, tampered or expired signature is 403; a signed key with
// no object is 404.
//
// Thread-safety: thread-safe (the store and the signer are).
#pragma once

#include "core/clock.h"
#include "net/http.h"
#include "storage/object_store.h"
#include "storage/signed_url.h"

namespace omni::orchestrator {

HttpResponse ServeSignedObject(const HttpRequest& request, ObjectStore& store, const ObjectUrlSigner& signer,
                               const Clock& clock);

}  // namespace omni::orchestrator
