#!/usr/bin/python3
"""boto3 part of scripts/s3/smoke.sh (run with Debian's /usr/bin/python3).

Needs S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION in the environment
and the bucket name as argv[1] (the bucket must already exist).

Checks, with plain curl fetching boto3-generated presigned URLs (so the
server, not boto3, is what is being tested):
  - presigned GET works; expired one (ExpiresIn=1, sleep 2) is rejected;
    tampered signature / tampered key / other method are rejected;
  - X-Amz-Expires above 7 days (604800 s) is rejected;
  - presigned PUT works (curl -T), and the object reads back;
  - header-signed request with a clock 20 min off -> RequestTimeTooSkewed;
  - multipart upload: 2 x 5 MiB + 1 small part, complete, full GET and a
    range GET across the part boundary, ETag of the form "<md5-of-md5s>-3";
  - a part smaller than 5 MiB (not last) makes Complete fail (EntityTooSmall);
  - abort multipart upload.
Exits non-zero on the first mismatch.
"""
import datetime
import hashlib
import os
import subprocess
import sys
import time
import urllib.parse

import boto3
import botocore
import botocore.auth
import botocore.awsrequest
import botocore.credentials
from botocore.config import Config

EP = os.environ["S3_ENDPOINT"]
AK = os.environ["S3_ACCESS_KEY"]
SK = os.environ["S3_SECRET_KEY"]
REGION = os.environ.get("S3_REGION", "us-east-1")
BUCKET = sys.argv[1]
MiB = 1024 * 1024


def log(msg):
    print("[smoke/boto3] " + msg, file=sys.stderr, flush=True)


def check(cond, msg):
    if not cond:
        log("FAIL: " + msg)
        sys.exit(1)
    log("ok: " + msg)


def curl(url, *args):
    """Plain curl (no AWS signing of its own). Returns (status, body bytes)."""
    out = subprocess.run(
        ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30", *args, url],
        check=True, stdout=subprocess.PIPE).stdout
    body, _, code = out.rpartition(b"\n")
    return int(code), body


s3 = boto3.client(
    "s3", endpoint_url=EP, region_name=REGION,
    aws_access_key_id=AK, aws_secret_access_key=SK,
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                  retries={"max_attempts": 1}))

# ------------------------------------------------------------ presigned GET --
data = b"presigned hello\n" * 10
s3.put_object(Bucket=BUCKET, Key="presign.txt", Body=data)
url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "presign.txt"},
                                ExpiresIn=60)
code, body = curl(url)
check(code == 200 and body == data, "presigned GET (curl) -> 200 and same bytes (got %d)" % code)

code, body = curl(url, "-r", "5-9")
check(code == 206 and body == data[5:10], "presigned GET + Range -> 206 (got %d)" % code)

code, body = curl(url, "-I")
check(code == 403, "presigned GET URL used for HEAD -> 403 (got %d)" % code)

# tamper with the signature (flip last hex digit)
u = urllib.parse.urlsplit(url)
q = urllib.parse.parse_qsl(u.query)
q2 = [(k, (v[:-1] + ("0" if v[-1] != "0" else "1")) if k == "X-Amz-Signature" else v) for k, v in q]
bad = urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q2)))
code, body = curl(bad)
check(code == 403 and b"SignatureDoesNotMatch" in body, "tampered X-Amz-Signature -> 403 SignatureDoesNotMatch (got %d)" % code)

# same signature, different key
bad = urllib.parse.urlunsplit(u._replace(path=u.path.replace("presign.txt", "other.txt")))
code, body = curl(bad)
check(code == 403, "presigned URL with a changed key -> 403 (got %d)" % code)

# tampered expiry (extend X-Amz-Expires without re-signing)
q3 = [(k, "120" if k == "X-Amz-Expires" else v) for k, v in q]
bad = urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q3)))
code, body = curl(bad)
check(code == 403, "presigned URL with changed X-Amz-Expires -> 403 (got %d)" % code)

# expiry
short = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "presign.txt"},
                                  ExpiresIn=1)
time.sleep(2.2)
code, body = curl(short)
check(code == 403 and b"AccessDenied" in body and b"expired" in body,
      "expired presigned URL (ExpiresIn=1, slept 2 s) -> 403 AccessDenied 'Request has expired' (got %d %r)" % (code, body[:160]))

# > 7 days
too_long = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "presign.txt"},
                                     ExpiresIn=604801)
code, body = curl(too_long)
check(code in (400, 403) and b"604800" in body,
      "X-Amz-Expires=604801 rejected, max is 604800 (got %d %r)" % (code, body[:200]))
week = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "presign.txt"},
                                 ExpiresIn=604800)
code, body = curl(week)
check(code == 200, "X-Amz-Expires=604800 accepted (got %d)" % code)

# wrong secret in a presigned URL
bad_client = boto3.client(
    "s3", endpoint_url=EP, region_name=REGION, aws_access_key_id=AK,
    aws_secret_access_key=SK + "x",
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
code, body = curl(bad_client.generate_presigned_url(
    "get_object", Params={"Bucket": BUCKET, "Key": "presign.txt"}, ExpiresIn=60))
check(code == 403, "presigned URL signed with a wrong secret -> 403 (got %d)" % code)

# ------------------------------------------------------------ presigned PUT --
put_url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "uploaded.bin"},
                                    ExpiresIn=60)
payload = os.urandom(100_000)
tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "smoke-presign-put-%d.bin" % os.getpid())
with open(tmp, "wb") as f:
    f.write(payload)
try:
    code, body = curl(put_url, "-T", tmp)
finally:
    os.unlink(tmp)
check(code == 200, "presigned PUT (curl -T) -> 200 (got %d %r)" % (code, body[:200]))
got = s3.get_object(Bucket=BUCKET, Key="uploaded.bin")["Body"].read()
check(got == payload, "object uploaded via presigned PUT reads back identical")

# -------------------------------------------------------------- clock skew --
def signed_get_with_skew(seconds):
    creds = botocore.credentials.Credentials(AK, SK)
    req = botocore.awsrequest.AWSRequest(method="GET", url="%s/%s/presign.txt" % (EP, BUCKET))
    req.headers["x-amz-content-sha256"] = hashlib.sha256(b"").hexdigest()
    real = datetime.datetime

    class Skewed(real):
        @classmethod
        def utcnow(cls):
            return real.utcnow() + datetime.timedelta(seconds=seconds)

    botocore.auth.datetime.datetime = Skewed
    try:
        botocore.auth.S3SigV4Auth(creds, "s3", REGION).add_auth(req)
    finally:
        botocore.auth.datetime.datetime = real
    hdrs = []
    for k, v in req.headers.items():
        hdrs += ["-H", "%s: %s" % (k, v)]
    return curl(req.url, *hdrs)


code, body = signed_get_with_skew(0)
check(code == 200, "manually signed header-auth GET with correct clock -> 200 (got %d)" % code)
code, body = signed_get_with_skew(-20 * 60)
check(code == 403 and b"RequestTimeTooSkewed" in body,
      "header-auth GET with clock 20 min behind -> 403 RequestTimeTooSkewed (got %d)" % code)
code, body = signed_get_with_skew(10 * 60)
check(code == 200, "header-auth GET with clock 10 min ahead -> 200 (900 s skew allowed) (got %d)" % code)

# ---------------------------------------------------------------- multipart --
parts_data = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(123_457)]
whole = b"".join(parts_data)
mpu = s3.create_multipart_upload(Bucket=BUCKET, Key="big.bin", ContentType="application/x-test")
uid = mpu["UploadId"]
parts = []
for i, chunk in enumerate(parts_data, 1):
    r = s3.upload_part(Bucket=BUCKET, Key="big.bin", UploadId=uid, PartNumber=i, Body=chunk)
    check(r["ETag"].strip('"') == hashlib.md5(chunk).hexdigest(), "UploadPart %d ETag = md5 of part" % i)
    parts.append({"PartNumber": i, "ETag": r["ETag"]})
lp = s3.list_parts(Bucket=BUCKET, Key="big.bin", UploadId=uid)
check([p["PartNumber"] for p in lp["Parts"]] == [1, 2, 3], "ListParts shows parts 1,2,3")
ups = s3.list_multipart_uploads(Bucket=BUCKET)
check(any(u["UploadId"] == uid for u in ups.get("Uploads", [])), "ListMultipartUploads shows the upload")
r = s3.complete_multipart_upload(Bucket=BUCKET, Key="big.bin", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
want_etag = hashlib.md5(b"".join(bytes.fromhex(p["ETag"].strip('"')) for p in parts)).hexdigest() + "-3"
check(r["ETag"].strip('"') == want_etag, "CompleteMultipartUpload ETag = md5(md5s)-3 (%s)" % r["ETag"])
h = s3.head_object(Bucket=BUCKET, Key="big.bin")
check(h["ContentLength"] == len(whole), "HEAD size %d" % h["ContentLength"])
got = s3.get_object(Bucket=BUCKET, Key="big.bin")["Body"].read()
check(hashlib.sha256(got).digest() == hashlib.sha256(whole).digest(), "multipart object GET = concatenated parts")
rg = s3.get_object(Bucket=BUCKET, Key="big.bin", Range="bytes=%d-%d" % (5 * MiB - 10, 5 * MiB + 9))
check(rg["Body"].read() == whole[5 * MiB - 10:5 * MiB + 10] and rg["ContentRange"].startswith("bytes %d-" % (5 * MiB - 10)),
      "range GET across part boundary -> right bytes, Content-Range %s" % rg["ContentRange"])
code, body = curl(s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "big.bin"}, ExpiresIn=60),
                  "-r", "-100")
check(code == 206 and body == whole[-100:], "presigned suffix range GET (bytes=-100) on multipart object -> 206")

# presigned UploadPart (what a client that hands out upload URLs would do)
mpu2 = s3.create_multipart_upload(Bucket=BUCKET, Key="big2.bin")
purl = s3.generate_presigned_url("upload_part", Params={
    "Bucket": BUCKET, "Key": "big2.bin", "UploadId": mpu2["UploadId"], "PartNumber": 1}, ExpiresIn=60)
tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "smoke-part-%d.bin" % os.getpid())
with open(tmp, "wb") as f:
    f.write(parts_data[2])
try:
    code, body = curl(purl, "-T", tmp)
finally:
    os.unlink(tmp)
check(code == 200, "presigned UploadPart (curl -T) -> 200 (got %d)" % code)
s3.abort_multipart_upload(Bucket=BUCKET, Key="big2.bin", UploadId=mpu2["UploadId"])
ups = s3.list_multipart_uploads(Bucket=BUCKET)
check(not any(u["UploadId"] == mpu2["UploadId"] for u in ups.get("Uploads", [])), "AbortMultipartUpload removes the upload")

# too-small non-last part
mpu3 = s3.create_multipart_upload(Bucket=BUCKET, Key="small.bin")
p1 = s3.upload_part(Bucket=BUCKET, Key="small.bin", UploadId=mpu3["UploadId"], PartNumber=1, Body=b"a" * 1000)
p2 = s3.upload_part(Bucket=BUCKET, Key="small.bin", UploadId=mpu3["UploadId"], PartNumber=2, Body=b"b" * 1000)
try:
    s3.complete_multipart_upload(Bucket=BUCKET, Key="small.bin", UploadId=mpu3["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
    check(False, "Complete with a 1000-byte non-last part should fail")
except botocore.exceptions.ClientError as e:
    check(e.response["Error"]["Code"] == "EntityTooSmall", "Complete with a 1000-byte non-last part -> EntityTooSmall")
s3.abort_multipart_upload(Bucket=BUCKET, Key="small.bin", UploadId=mpu3["UploadId"])

log("all boto3 checks passed")
