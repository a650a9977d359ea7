#!/usr/bin/env python3
"""Verifies AWS Signature Version 4 as an S3 server does, with botocore (Debian's python3-botocore):
an implementation independent of the AWS SDK for JavaScript that signed. The server's side of SigV4
is to rebuild the request it received, sign it again with the secret key at the request's own
X-Amz-Date, and compare; so does this, with botocore's signer for S3.

One JSON object per line on stdin, one answer per line on stdout:
  {"kind": "query", "method": "GET", "url": "<presigned URL>", "credentials": [id, secret], "region": "..."}
  {"kind": "header", "method": "PUT", "url": "http://<Host header><raw path>", "headers": {...},
   "body": "<base64>", "credentials": [...], "region": "..."}
  -> {"valid": bool, "problem": "...", "expected": "<signature>", "got": "<signature>"}
"""
import base64
import datetime
import json
import sys
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def sign_at(auth, request, amz_date):
    """botocore's add_auth, at the request's own X-Amz-Date instead of the clock (the same steps
    from botocore 1.29, Debian bookworm's, to today's)."""
    datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")  # a malformed date is refused here
    request.context["timestamp"] = amz_date
    auth._modify_request_before_signing(request)
    canonical_request = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical_request)
    auth._inject_signature_to_request(request, auth.signature(string_to_sign, request))


def verify_query(req, credentials):
    parts = urlsplit(req["url"])
    params = parse_qsl(parts.query, keep_blank_values=True)
    amz = dict(params)
    for name in ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"):
        if name not in amz:
            return {"valid": False, "problem": f"no {name}"}
    if amz["X-Amz-SignedHeaders"] != "host":
        return {"valid": False, "problem": f"signs {amz['X-Amz-SignedHeaders']}: a plain GET sends only host"}
    # The request without the parameters botocore's signer adds back as it signs; any other
    # (X-Amz-Content-Sha256, x-id) stays in the canonical query string, as a server keeps it.
    added = {"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"}
    rest = [(k, v) for k, v in params if k not in added]
    url = parts._replace(query=urlencode(rest, quote_via=quote)).geturl()
    request = AWSRequest(method=req["method"], url=url, headers={})
    auth = botocore.auth.S3SigV4QueryAuth(credentials, "s3", req["region"], expires=int(amz["X-Amz-Expires"]))
    sign_at(auth, request, amz["X-Amz-Date"])
    resigned = dict(parse_qsl(urlsplit(request.url).query, keep_blank_values=True))
    problem = None
    if resigned["X-Amz-Credential"] != amz["X-Amz-Credential"]:
        problem = f"credential scope {amz['X-Amz-Credential']}, expected {resigned['X-Amz-Credential']}"
    expected, got = resigned["X-Amz-Signature"], amz["X-Amz-Signature"]
    if not problem and expected != got:
        problem = "SignatureDoesNotMatch"
    return {"valid": problem is None, "problem": problem, "expected": expected, "got": got}


def verify_header(req, credentials):
    headers = {k.lower(): v for k, v in req["headers"].items()}
    authorization = headers.get("authorization", "")
    prefix = "AWS4-HMAC-SHA256 "
    if not authorization.startswith(prefix):
        return {"valid": False, "problem": f"Authorization is not SigV4: {authorization[:40]}"}
    fields = dict(part.strip().split("=", 1) for part in authorization[len(prefix):].split(","))
    signed = fields["SignedHeaders"].split(";")
    # The headers the client signed, as the server received them (host comes from the URL).
    request = AWSRequest(
        method=req["method"],
        url=req["url"],
        headers={name: headers[name] for name in signed if name != "host"},
        data=base64.b64decode(req.get("body", "")),
    )
    auth = botocore.auth.S3SigV4Auth(credentials, "s3", req["region"])
    sign_at(auth, request, headers["x-amz-date"])
    resigned = dict(
        part.strip().split("=", 1) for part in request.headers["Authorization"][len(prefix):].split(",")
    )
    problem = None
    if resigned["SignedHeaders"] != fields["SignedHeaders"]:
        problem = f"signed headers {fields['SignedHeaders']}, botocore signs {resigned['SignedHeaders']}"
    elif resigned["Credential"] != fields["Credential"]:
        problem = f"credential scope {fields['Credential']}, expected {resigned['Credential']}"
    elif resigned["Signature"] != fields["Signature"]:
        problem = "SignatureDoesNotMatch"
    return {"valid": problem is None, "problem": problem, "expected": resigned["Signature"], "got": fields["Signature"]}


for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    credentials = Credentials(*req["credentials"])
    verify = verify_query if req["kind"] == "query" else verify_header
    try:
        answer = verify(req, credentials)
    except Exception as error:  # a malformed request is an invalid one, named
        answer = {"valid": False, "problem": f"{type(error).__name__}: {error}"}
    print(json.dumps(answer), flush=True)
