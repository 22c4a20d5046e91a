#!/usr/bin/env bash
# Smoke test for the Swift/s3api test server: starts it (swift-up.sh), talks S3
# to it with curl's built-in SigV4 (and boto3 + plain curl for presigned URLs
# and multipart, when python3-boto3 is available), then stops it
# (swift-down.sh). Exits non-zero on the first mismatch.
#
# Usage:  scripts/s3/smoke.sh
#   S3_SMOKE_NO_BOTO=1   skip the boto3 part (and do not install python3-boto3)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
log() { echo "[smoke] $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
ok() { log "ok: $*"; }

# ---------------------------------------------------------- optional boto3 --
HAVE_BOTO=0
if [[ ${S3_SMOKE_NO_BOTO:-0} != 1 ]]; then
  if ! /usr/bin/python3 -c 'import boto3' 2>/dev/null; then
    if [[ $(id -u) -eq 0 ]] && apt-cache show python3-boto3 >/dev/null 2>&1; then
      log "installing python3-boto3"
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-boto3 >&2 ||
        { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-boto3 >&2; } || true
    fi
  fi
  /usr/bin/python3 -c 'import boto3' 2>/dev/null && HAVE_BOTO=1
  ((HAVE_BOTO)) || log "python3-boto3 not available: skipping presigned-URL checks (multipart is still tested with curl)"
fi

# ------------------------------------------------------------------- start --
t0=$(date +%s.%N)
LINE=$("$HERE/swift-up.sh")
t1=$(date +%s.%N)
[[ $(printf '%s\n' "$LINE" | wc -l) -eq 1 ]] || fail "swift-up.sh printed more than one line on stdout"
for kv in $LINE; do
  # shellcheck disable=SC2163  # export "$kv" exports NAME=VALUE, as intended
  case ${kv%%=*} in
    S3_ENDPOINT | S3_ACCESS_KEY | S3_SECRET_KEY | S3_REGION | SWIFT_DIR) export "$kv" ;;
    *) fail "unexpected field in swift-up.sh output: $kv" ;;
  esac
done
[[ -n ${S3_ENDPOINT:-} && -n ${SWIFT_DIR:-} ]] || fail "bad swift-up.sh output: $LINE"
trap '"$HERE/swift-down.sh" "$SWIFT_DIR" || true' EXIT
log "swift-up.sh took $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s: $LINE"

# ---------------------------------------------------------------- helpers --
# curl's --user splits at the FIRST colon, and the tempauth access key is
# "account:user" ("test:tester"), so credentials go into the URL userinfo,
# percent-encoded. The x-amz-content-sha256 header is mandatory for s3api and
# curl 7.88 does not send it; curl does use our header value when signing.
# curl 7.88 also neither sorts query parameters nor adds "=" to bare ones when
# building the canonical query string, so URLs below use sorted "k=v" queries.
HOSTPORT=${S3_ENDPOINT#http://}
enc() { /usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
AK_ENC=$(enc "$S3_ACCESS_KEY")
SK_ENC=$(enc "$S3_SECRET_KEY")
EMPTY_SHA=$(printf '' | sha256sum | cut -d' ' -f1)
WORK=$(mktemp -d /tmp/omniserve-s3smoke.XXXXXX)
trap '"$HERE/swift-down.sh" "$SWIFT_DIR" || true; rm -rf "$WORK"' EXIT

# s3 METHOD PATH[?QUERY] [extra curl args...] -> sets CODE, body in $WORK/body, headers in $WORK/hdr
# Signs with the secret in $SK_ENC (override per call with SK_ENC=...), payload hash $SHA (default: empty body).
s3() {
  local method=$1 path=$2; shift 2
  CODE=$(curl -sS -o "$WORK/body" -D "$WORK/hdr" -w '%{http_code}' --max-time 60 \
    --aws-sigv4 "aws:amz:${REGION_OVERRIDE:-$S3_REGION}:s3" \
    -H "x-amz-content-sha256: ${SHA:-$EMPTY_SHA}" -X "$method" "$@" \
    "http://$AK_ENC:$SK_ENC@$HOSTPORT$path")
}
body() { cat "$WORK/body"; }
hdr() { grep -i "^$1:" "$WORK/hdr" | head -1 | cut -d' ' -f2- | tr -d '\r'; }
expect() {  # CODE-wanted description [body-substring]
  [[ $CODE == "$1" ]] || fail "$2: want HTTP $1, got $CODE: $(head -c 600 "$WORK/body")"
  if [[ $# -ge 3 ]]; then grep -q -- "$3" "$WORK/body" || fail "$2: body lacks '$3': $(head -c 600 "$WORK/body")"; fi
  ok "$2"
}

B=smoke-$(date +%s)-$RANDOM

# ------------------------------------------------------------- basic CRUD --
s3 GET /
expect 200 "ListBuckets (SigV4 header auth)" "<ListAllMyBucketsResult"

s3 PUT "/$B"
expect 200 "CreateBucket $B"
s3 PUT "/$B"
expect 409 "CreateBucket again -> 409 BucketAlreadyOwnedByYou" BucketAlreadyOwnedByYou

printf 'hello world' >"$WORK/hello"
SHA=$(sha256sum "$WORK/hello" | cut -d' ' -f1) s3 PUT "/$B/hello.txt" -T "$WORK/hello" -H 'Content-Type: text/plain'
expect 200 "PutObject hello.txt (signed payload hash)"
[[ $(hdr ETag) == "\"$(md5sum "$WORK/hello" | cut -d' ' -f1)\"" ]] || fail "ETag $(hdr ETag) != md5"
ok "PutObject ETag = \"md5\""

s3 GET "/$B/hello.txt"
expect 200 "GetObject"
[[ $(body) == 'hello world' ]] || fail "GetObject body: $(body)"
ok "GetObject body matches"

s3 HEAD "/$B/hello.txt" -I
expect 200 "HeadObject"
[[ $(hdr Content-Length) == 11 ]] || fail "HeadObject Content-Length $(hdr Content-Length)"
[[ $(hdr Content-Type) == text/plain* ]] || fail "HeadObject Content-Type $(hdr Content-Type)"
ok "HeadObject Content-Length 11, Content-Type text/plain"

s3 GET "/$B/hello.txt" -H 'Range: bytes=2-5'
expect 206 "Range GET bytes=2-5 -> 206"
[[ $(body) == 'llo ' && $(hdr Content-Range) == 'bytes 2-5/11' ]] || fail "range body '$(body)' Content-Range '$(hdr Content-Range)'"
ok "Range GET body 'llo ', Content-Range bytes 2-5/11"
s3 GET "/$B/hello.txt" -H 'Range: bytes=-3'
expect 206 "suffix Range bytes=-3"
[[ $(body) == 'rld' ]] || fail "suffix range body '$(body)'"
s3 GET "/$B/hello.txt" -H 'Range: bytes=6-'
expect 206 "open Range bytes=6-"
[[ $(body) == 'world' ]] || fail "open range body '$(body)'"
s3 GET "/$B/hello.txt" -H 'Range: bytes=100-200'
expect 416 "unsatisfiable Range -> 416 InvalidRange" InvalidRange

s3 GET "/$B/nope.txt"
expect 404 "missing key -> 404 NoSuchKey" NoSuchKey
s3 GET "/no-such-bucket-$RANDOM/x"
expect 404 "missing bucket -> 404 NoSuchBucket" NoSuchBucket

# ------------------------------------------------------------ auth checks --
SK_ENC=wrong-secret s3 GET "/$B/hello.txt"
expect 403 "wrong secret -> 403 SignatureDoesNotMatch" SignatureDoesNotMatch
AK_ENC=nobody%3Anobody s3 GET "/$B/hello.txt"
expect 403 "unknown access key -> 403 (tempauth says SignatureDoesNotMatch, not InvalidAccessKeyId)" SignatureDoesNotMatch
REGION_OVERRIDE=eu-west-1 s3 GET "/$B/hello.txt"
expect 400 "credential scope region eu-west-1 -> 400 AuthorizationHeaderMalformed" AuthorizationHeaderMalformed
CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' "$S3_ENDPOINT/$B/hello.txt")
[[ $CODE == 4* ]] || fail "unsigned GET: got $CODE"
ok "unsigned GET -> $CODE (not served; s3api passes it to Swift's native API, which rejects the path)"
CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' --aws-sigv4 "aws:amz:$S3_REGION:s3" "http://$AK_ENC:$SK_ENC@$HOSTPORT/$B/hello.txt")
expect 400 "SigV4 without x-amz-content-sha256 -> 400 InvalidRequest" x-amz-content-sha256

SHA=$EMPTY_SHA s3 PUT "/$B/bad-sha.txt" -T "$WORK/hello"
expect 400 "x-amz-content-sha256 not matching the body -> 400 BadDigest" BadDigest
s3 HEAD "/$B/bad-sha.txt" -I
expect 404 "...and the object was not stored"
SHA=UNSIGNED-PAYLOAD s3 PUT "/$B/unsigned.txt" -T "$WORK/hello"
expect 200 "x-amz-content-sha256: UNSIGNED-PAYLOAD accepted"
SHA=STREAMING-AWS4-HMAC-SHA256-PAYLOAD s3 PUT "/$B/chunked.txt" -T "$WORK/hello"
expect 501 "aws-chunked streaming signature -> 501 NotImplemented" NotImplemented

# ---------------------------------------------------------------- listing --
s3 GET "/$B"
expect 200 "ListObjects (v1)" "<Key>hello.txt</Key>"
s3 GET "/$B?list-type=2&prefix=hel"
expect 200 "ListObjectsV2 prefix=hel" "<Key>hello.txt</Key>"
grep -q unsigned.txt "$WORK/body" && fail "prefix filter ignored"
s3 GET /
expect 200 "ListBuckets shows $B" "<Name>$B</Name>"
s3 GET "/$B?location="
expect 200 "GetBucketLocation" "LocationConstraint"
ok "GetBucketLocation body: $(sed -n 's:.*\(<LocationConstraint.*\):\1:p' "$WORK/body")"

# virtual-host style: Host: BUCKET.localhost (storage_domain=localhost)
PORT=${HOSTPORT##*:}
CODE=$(curl -sS -o "$WORK/body" -w '%{http_code}' --aws-sigv4 "aws:amz:$S3_REGION:s3" -H "x-amz-content-sha256: $EMPTY_SHA" \
  --resolve "$B.localhost:$PORT:127.0.0.1" "http://$AK_ENC:$SK_ENC@$B.localhost:$PORT/hello.txt")
expect 200 "virtual-host style GET http://$B.localhost:$PORT/hello.txt (--resolve to 127.0.0.1)"
[[ $(body) == 'hello world' ]] || fail "vhost body '$(body)'"

# ------------------------------------------------------- multipart (curl) --
head -c $((5 * 1024 * 1024)) /dev/urandom >"$WORK/p1"
head -c $((5 * 1024 * 1024)) /dev/urandom >"$WORK/p2"
head -c 4321 /dev/urandom >"$WORK/p3"
s3 POST "/$B/mp.bin?uploads="
expect 200 "CreateMultipartUpload (POST ?uploads=)" "<UploadId>"
UPLOAD_ID=$(sed -n 's:.*<UploadId>\(.*\)</UploadId>.*:\1:p' "$WORK/body")
[[ -n $UPLOAD_ID ]] || fail "no UploadId"
xml='<CompleteMultipartUpload>'
for n in 1 2 3; do
  SHA=$(sha256sum "$WORK/p$n" | cut -d' ' -f1) s3 PUT "/$B/mp.bin?partNumber=$n&uploadId=$UPLOAD_ID" -T "$WORK/p$n"
  expect 200 "UploadPart $n"
  xml+="<Part><PartNumber>$n</PartNumber><ETag>$(hdr ETag)</ETag></Part>"
done
xml+='</CompleteMultipartUpload>'
printf '%s' "$xml" >"$WORK/complete.xml"
SHA=$(sha256sum "$WORK/complete.xml" | cut -d' ' -f1) s3 POST "/$B/mp.bin?uploadId=$UPLOAD_ID" \
  --data-binary @"$WORK/complete.xml" -H 'Content-Type: application/xml'
expect 200 "CompleteMultipartUpload" "<CompleteMultipartUploadResult"
grep -q -- '-3&quot;</ETag>\|-3"</ETag>' "$WORK/body" || fail "multipart ETag not of form md5-3: $(body)"
cat "$WORK/p1" "$WORK/p2" "$WORK/p3" >"$WORK/all"
s3 GET "/$B/mp.bin"
expect 200 "GetObject multipart object"
cmp -s "$WORK/body" "$WORK/all" || fail "multipart object content differs"
ok "multipart object content = p1+p2+p3 ($(stat -c %s "$WORK/all") bytes)"
s3 GET "/$B/mp.bin" -H "Range: bytes=5242870-5242889"
expect 206 "Range GET across the part boundary"
cmp -s "$WORK/body" <(tail -c +5242871 "$WORK/all" | head -c 20) || fail "cross-part range bytes differ"
ok "cross-part range bytes match"

# ------------------------------------------------------------------ boto3 --
if ((HAVE_BOTO)); then
  /usr/bin/python3 "$HERE/smoke_boto3.py" "$B" || fail "boto3 checks"
fi

# ----------------------------------------------------------------- delete --
s3 GET "/$B?list-type=2"
sed 's:<Key>:\n<Key>:g' "$WORK/body" | sed -n 's:^<Key>\([^<]*\)</Key>.*:\1:p' >"$WORK/keys"
echo >>"$WORK/keys"   # the XML has no final newline; make sure read sees the last key
[[ -s "$WORK/keys" ]] || fail "no keys listed before delete"
while read -r k; do
  [[ -n $k ]] || continue
  s3 DELETE "/$B/$k"
  expect 204 "DeleteObject $k"
done <"$WORK/keys"
s3 DELETE "/$B"
expect 204 "DeleteBucket (with leftover aborted/failed multipart state)"
s3 GET /
expect 200 "ListBuckets after delete"
grep -q "<Name>$B</Name>" "$WORK/body" && fail "bucket still listed"

log "ALL CHECKS PASSED"
