#!/usr/bin/env python3
"""The operator's token issuer for Estuary's integration tests: signs JWTs and
plain HMAC tokens the way a backend would, with the `cryptography` package and
the standard library only (no JWT library shares code with the server's).

    jwt_issuer.py keys --dir DIR
        Makes an RSA-2048 key (kid "rsa-1") and a P-256 key (kid "ec-1") in DIR,
        and writes their public halves as DIR/jwks.json.
    jwt_issuer.py jwt --dir DIR --alg RS256|ES256|HS256 [--secret S] [--kid K]
                      --claims JSON
        Prints a signed JWT. RS256 and ES256 use DIR's keys (kid rsa-1 / ec-1
        unless --kid says otherwise, e.g. a kid the JWKS does not have); HS256
        uses --secret.
    jwt_issuer.py hmac --secret S --action play|publish --stream APP/NAME
                       --expires UNIX
        Prints the plain token: hex HMAC-SHA256(S, "action:app/name:expires").
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def integer(value: int, length: int = 0) -> str:
    size = max(length, (value.bit_length() + 7) // 8)
    return b64url(value.to_bytes(size, "big"))


def make_keys(directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    for name, key in (("rsa.pem", rsa_key), ("ec.pem", ec_key)):
        with open(os.path.join(directory, name), "wb") as out:
            out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    rsa_public = rsa_key.public_key().public_numbers()
    ec_public = ec_key.public_key().public_numbers()
    jwks = {
        "keys": [
            {"kty": "RSA", "kid": "rsa-1", "alg": "RS256", "use": "sig", "n": integer(rsa_public.n), "e": integer(rsa_public.e)},
            {"kty": "EC", "kid": "ec-1", "alg": "ES256", "use": "sig", "crv": "P-256", "x": integer(ec_public.x, 32), "y": integer(ec_public.y, 32)},
        ]
    }
    with open(os.path.join(directory, "jwks.json"), "w", encoding="utf-8") as out:
        json.dump(jwks, out)


def load(directory: str, name: str):
    with open(os.path.join(directory, name), "rb") as source:
        return serialization.load_pem_private_key(source.read(), password=None)


def sign_jwt(args) -> str:
    header = {"alg": args.alg, "typ": "JWT"}
    if args.alg != "HS256":
        header["kid"] = args.kid or ("rsa-1" if args.alg == "RS256" else "ec-1")
    elif args.kid:
        header["kid"] = args.kid
    claims = json.loads(args.claims)
    signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." + b64url(json.dumps(claims, separators=(",", ":")).encode())).encode("ascii")
    if args.alg == "HS256":
        signature = hmac.new(args.secret.encode(), signing_input, hashlib.sha256).digest()
    elif args.alg == "RS256":
        signature = load(args.dir, "rsa.pem").sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    elif args.alg == "ES256":
        der = load(args.dir, "ec.pem").sign(signing_input, ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    else:
        raise SystemExit(f"unknown alg {args.alg}")
    return signing_input.decode("ascii") + "." + b64url(signature)


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    keys = commands.add_parser("keys")
    keys.add_argument("--dir", required=True)
    jwt = commands.add_parser("jwt")
    jwt.add_argument("--dir", required=True)
    jwt.add_argument("--alg", required=True)
    jwt.add_argument("--secret", default="")
    jwt.add_argument("--kid")
    jwt.add_argument("--claims", required=True)
    plain = commands.add_parser("hmac")
    plain.add_argument("--secret", required=True)
    plain.add_argument("--action", required=True)
    plain.add_argument("--stream", required=True)
    plain.add_argument("--expires", required=True, type=int)
    args = parser.parse_args()
    if args.command == "keys":
        make_keys(args.dir)
    elif args.command == "jwt":
        print(sign_jwt(args))
    else:
        message = f"{args.action}:{args.stream}:{args.expires}".encode()
        print(hmac.new(args.secret.encode(), message, hashlib.sha256).hexdigest())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
