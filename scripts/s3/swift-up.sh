#!/usr/bin/env bash
# Starts a throw-away, single-node OpenStack Swift cluster with the s3api
# middleware (a real S3-compatible server) on 127.0.0.1, for integration tests.
#
# Usage:  scripts/s3/swift-up.sh [DIR]
#   DIR   state directory (configs, rings, data, logs, pids). Default: a fresh
#         `mktemp -d /tmp/omniserve-swift.XXXXXX`. Must be on a filesystem with
#         user xattr support (/tmp on ext4/tmpfs is fine).
#
# On success prints exactly ONE line on stdout (everything else goes to stderr):
#   S3_ENDPOINT=http://127.0.0.1:PORT S3_ACCESS_KEY=test:tester S3_SECRET_KEY=testing S3_REGION=us-east-1 SWIFT_DIR=DIR
# so a caller can do:  eval "$(scripts/s3/swift-up.sh)"  (the variables are
# also written, with `export`, to DIR/env). Stop it with:
#   scripts/s3/swift-down.sh "$SWIFT_DIR"
#
# Environment knobs (all optional):
#   S3_START_TIMEOUT      seconds to wait for readiness (default 60)
#   S3_STORAGE_DOMAIN     s3api storage_domain, enables virtual-host style for
#                         Host: BUCKET.<domain> (default "localhost")
#   S3_MIN_SEGMENT_SIZE   s3api min multipart part size (default 5242880, as AWS)
#   S3_LOG_LEVEL          swift log level (default INFO)
set -euo pipefail

log() { echo "[swift-up] $*" >&2; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
die() { log "ERROR: $*"; exit 1; }

PY=/usr/bin/python3           # Debian's python: the one that has the swift module
PKGS=(swift swift-proxy swift-object swift-container swift-account python3-swift memcached curl)
T0=$(date +%s.%N)

# ---------------------------------------------------------------- packages --
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  [[ $(id -u) -eq 0 ]] || die "missing packages (${missing[*]}); run as root or: sudo apt-get install ${missing[*]}"
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi
[[ -r /etc/swift/swift.conf ]] || die "/etc/swift/swift.conf missing (shipped by the 'swift' package; swift servers always read it for the hash path prefix/suffix)"

# --------------------------------------------------------------- state dir --
if [[ $# -ge 1 && -n "$1" ]]; then
  DIR=$1
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  # Only ever (re)use an empty directory or one swift-up.sh made before.
  if [[ ! -f "$DIR/.omniserve-swift" && -n "$(ls -A "$DIR")" ]]; then
    die "$DIR is not empty and was not created by swift-up.sh; refusing to use it"
  fi
  if [[ -s "$DIR/pids" ]]; then
    while read -r pid _ _; do
      [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && die "$DIR already has a running server (pid $pid); run swift-down.sh $DIR first"
    done <"$DIR/pids"
  fi
  rm -rf "${DIR:?}/etc" "${DIR:?}/node" "${DIR:?}/log" "${DIR:?}/run" "${DIR:?}/pids" "${DIR:?}/env"
else
  DIR=$(mktemp -d /tmp/omniserve-swift.XXXXXX)
fi
# marker so that swift-down.sh refuses to rm -rf a directory we did not create
echo "omniserve swift s3 test server state dir" >"$DIR/.omniserve-swift"
ETC=$DIR/etc LOGD=$DIR/log DEV=$DIR/node
mkdir -p "$ETC" "$LOGD" "$DEV/d1" "$DIR/run"
RUN_USER=$(id -un)

# eventlet's green DNS pulls in dnspython+requests (~0.5 s CPU per process);
# we only ever use IP literals, so turn it off for every python below.
export EVENTLET_NO_GREENDNS=yes

# One python process (interpreter start-up is the main cost here) does:
#  1. xattr probe: swift stores object metadata in user xattrs;
#  2. asks the kernel for 5 distinct free loopback ports (all bound at once,
#     then released; tiny race window before the servers bind them);
#  3. builds the account/container/object rings (2^6 partitions, 1 replica,
#     one device 'd1' on 127.0.0.1) -- same result as swift-ring-builder
#     create/add/rebalance, without 9 interpreter start-ups.
PORTS=$("$PY" - "$DEV/d1" "$ETC" <<'EOF'
import os, socket, sys
dev, etc = sys.argv[1], sys.argv[2]
p = os.path.join(dev, ".xattr-probe")
open(p, "w").close()
try:
    os.setxattr(p, "user.swift.probe", b"1")
except OSError as e:
    sys.exit("no user xattr support in %s (%s); swift needs it: pick a DIR on ext4/xfs/tmpfs" % (dev, e))
finally:
    os.unlink(p)

socks = []
for _ in range(5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()

from swift.common.ring import RingBuilder
for kind, port in zip(("account", "container", "object"), ports[1:4]):
    b = RingBuilder(6, 1, 1)
    b.add_dev({"id": 0, "region": 1, "zone": 1, "ip": "127.0.0.1", "port": port,
               "replication_ip": "127.0.0.1", "replication_port": port,
               "device": "d1", "weight": 100.0, "meta": ""})
    b.rebalance()
    b.save(os.path.join(etc, kind + ".builder"))
    b.get_ring().save(os.path.join(etc, kind + ".ring.gz"))
print(" ".join(map(str, ports)))
EOF
) || die "preparing $DIR failed"
read -r P_PROXY P_ACCOUNT P_CONTAINER P_OBJECT P_MEMCACHE <<<"$PORTS"
log "+$(elapsed) s: dir=$DIR proxy=$P_PROXY account=$P_ACCOUNT container=$P_CONTAINER object=$P_OBJECT memcached=$P_MEMCACHE"

# ----------------------------------------------------------------- configs --
LOG_LEVEL=${S3_LOG_LEVEL:-INFO}
common_default() {  # $1 = port
  cat <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $1
workers = 0
user = $RUN_USER
swift_dir = $ETC
devices = $DEV
mount_check = false
log_level = $LOG_LEVEL
# No syslog here: the servers run with -v, so logs go to stderr -> DIR/log/*.log.
# log_address points at a non-socket so the syslog handler falls back to UDP
# on localhost, which is harmless.
log_address = /dev/null
EOF
}

for kind in account container object; do
  case $kind in
    account) port=$P_ACCOUNT ;;
    container) port=$P_CONTAINER ;;
    object) port=$P_OBJECT ;;
  esac
  {
    common_default "$port"
    cat <<EOF

[pipeline:main]
pipeline = healthcheck $kind-server

[app:$kind-server]
use = egg:swift#$kind
# Generous backend timeouts: the box may be busy compiling; a timed-out
# container/account update would become an "async pending" that only the
# (not running) updater daemons would ever apply -> stale listings.
conn_timeout = 5
node_timeout = 30
EOF
    if [[ $kind == object ]]; then
      cat <<EOF
# Wait for the container listing update before answering a PUT/DELETE
# (default 1 s, after which it continues in the background): makes listings,
# bucket object counts and DeleteBucket deterministic for tests.
container_update_timeout = 30
EOF
    fi
    cat <<EOF

[filter:healthcheck]
use = egg:swift#healthcheck
EOF
  } >"$ETC/$kind-server.conf"
done

STORAGE_DOMAIN=${S3_STORAGE_DOMAIN-localhost}
MIN_SEG=${S3_MIN_SEGMENT_SIZE:-5242880}
{
  common_default "$P_PROXY"
  cat <<EOF

[pipeline:main]
# s3api must sit right before the auth filter (tempauth); slo must come after
# s3api or multipart upload is silently disabled; copy is needed for
# PUT Object - Copy / UploadPartCopy.
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk tempurl s3api tempauth copy slo dlo versioned_writes symlink proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
allow_account_management = false
conn_timeout = 5
node_timeout = 30

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$P_MEMCACHE

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:bulk]
use = egg:swift#bulk

[filter:tempurl]
use = egg:swift#tempurl

[filter:s3api]
use = egg:swift#s3api
location = us-east-1
storage_domain = $STORAGE_DOMAIN
dns_compliant_bucket_names = true
allow_multipart_uploads = true
min_segment_size = $MIN_SEG
allowable_clock_skew = 900
s3_acl = false

[filter:tempauth]
use = egg:swift#tempauth
reseller_prefix = AUTH_
# S3 access key = "test:tester", secret = "testing"
user_test_tester = testing .admin
user_test2_tester2 = testing2 .admin

[filter:copy]
use = egg:swift#copy

[filter:slo]
use = egg:swift#slo

[filter:dlo]
use = egg:swift#dlo

[filter:versioned_writes]
use = egg:swift#versioned_writes
allow_versioned_writes = true

[filter:symlink]
use = egg:swift#symlink
EOF
} >"$ETC/proxy-server.conf"

# --------------------------------------------------------------- processes --
STARTED=()
cleanup_on_fail() {
  local rc=$?
  if ((rc != 0)) && ((${#STARTED[@]})); then
    log "start failed; stopping the processes this script started: ${STARTED[*]}"
    kill -TERM "${STARTED[@]}" 2>/dev/null || true
    sleep 1
    kill -KILL "${STARTED[@]}" 2>/dev/null || true
    log "state (configs, logs) kept in $DIR"
  fi
}
trap cleanup_on_fail EXIT

start_bg() {  # name cmd...
  local name=$1; shift
  "$@" </dev/null >"$LOGD/$name.log" 2>&1 &
  local pid=$!
  STARTED+=("$pid")
  # PID + process start time (field 22 of /proc/PID/stat) so that
  # swift-down.sh never signals a recycled PID.
  local st
  st=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $20}')
  echo "$pid $name $st" >>"$DIR/pids"
}

if [[ $RUN_USER == root ]]; then MC_USER=(-u root); else MC_USER=(); fi
start_bg memcached /usr/bin/memcached -l 127.0.0.1 -p "$P_MEMCACHE" -U 0 -m 64 -t 1 "${MC_USER[@]}"
start_bg account-server   "$PY" /usr/bin/swift-account-server   "$ETC/account-server.conf"   -v
start_bg container-server "$PY" /usr/bin/swift-container-server "$ETC/container-server.conf" -v
start_bg object-server    "$PY" /usr/bin/swift-object-server    "$ETC/object-server.conf"    -v
start_bg proxy-server     "$PY" /usr/bin/swift-proxy-server     "$ETC/proxy-server.conf"     -v

# --------------------------------------------------------------- readiness --
ENDPOINT=http://127.0.0.1:$P_PROXY
TIMEOUT=${S3_START_TIMEOUT:-60}
deadline=$(($(date +%s) + TIMEOUT))
fail() {
  log "ERROR: $*"
  for f in "$LOGD"/*.log; do
    echo "----- tail $f -----" >&2
    tail -n 25 "$f" >&2 || true
  done
  exit 1
}
check_alive() {
  local pid name
  while read -r pid name _; do
    kill -0 "$pid" 2>/dev/null || fail "$name (pid $pid) exited during startup"
  done <"$DIR/pids"
}

for port in "$P_ACCOUNT" "$P_CONTAINER" "$P_OBJECT" "$P_PROXY"; do
  until curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthcheck"; do
    check_alive
    (($(date +%s) < deadline)) || fail "timeout (${TIMEOUT}s) waiting for /healthcheck on 127.0.0.1:$port"
    sleep 0.2
  done
  log "  127.0.0.1:$port healthy at +$(elapsed) s"
done

# An authenticated S3 request (ListBuckets, SigV4) must succeed: proves
# s3api + tempauth + memcached + account server work together.
# Note: s3api insists on an x-amz-content-sha256 header for header-signed V4
# requests, and curl 7.88 does not add one by itself.
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
while :; do
  code=$(curl -s -o "$DIR/run/ready.xml" -w '%{http_code}' --max-time 5 \
    -H "x-amz-content-sha256: $EMPTY_SHA256" \
    --aws-sigv4 "aws:amz:us-east-1:s3" "http://test%3Atester:testing@127.0.0.1:$P_PROXY/" || true)
  [[ $code == 200 ]] && break
  # 4xx is a config/auth problem, not a slow start: fail at once.
  [[ $code == 4* ]] && fail "signed ListBuckets returned HTTP $code: $(head -c 400 "$DIR/run/ready.xml")"
  check_alive
  (($(date +%s) < deadline)) || fail "timeout (${TIMEOUT}s): signed ListBuckets returned HTTP $code: $(head -c 400 "$DIR/run/ready.xml" 2>/dev/null)"
  sleep 0.2
done

trap - EXIT
LINE="S3_ENDPOINT=$ENDPOINT S3_ACCESS_KEY=test:tester S3_SECRET_KEY=testing S3_REGION=us-east-1 SWIFT_DIR=$DIR"
cat >"$DIR/env" <<EOF
export S3_ENDPOINT=$ENDPOINT
export S3_ACCESS_KEY=test:tester
export S3_SECRET_KEY=testing
export S3_REGION=us-east-1
export SWIFT_DIR=$DIR
EOF
log "ready in $(elapsed) s; logs in $LOGD; stop with: $(cd "$(dirname "$0")" && pwd)/swift-down.sh $DIR"
echo "$LINE"
