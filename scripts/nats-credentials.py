#!/usr/bin/env python3
"""NATS decentralized (operator/JWT) credentials without `nsc`.

    scripts/nats-credentials.py init DIR [--port 4222] [--host 0.0.0.0] [--operator NAME] [--account NAME] [--user NAME]
    scripts/nats-credentials.py user DIR NAME [--expires SECONDS]

`init` creates an operator, one account and one user, and writes into DIR:
  operator.jwt   the operator JWT (self-signed)
  account.jwt    the account JWT (signed by the operator); the operator also names a
                 system account (`SYS`, preloaded in server.conf) for the server itself
  operator.nk    the operator's seed, account.nk the account's seed (keep them secret)
  server.conf    a nats-server configuration: `operator`, `resolver: MEMORY` with the
                 account preloaded, `port` (run `nats-server -c DIR/server.conf`)
  NAME.creds     the user's credentials file: the user JWT and its NKey seed, for
                 Estuary's `credentialsFile` (or any NATS client)
`user` issues another user of the account in DIR (signed with DIR/account.nk) and writes
DIR/NAME.creds; `--expires` makes the JWT expire that many seconds from now.

Formats follow nats-io/nkeys (strkey.go, crc16.go) and nats-io/jwt v2 (claims.go,
creds_utils.go). Needs Python 3 and the `cryptography` package (Ed25519): `make deps`
(scripts/install-deps.sh) pip-installs it into the project virtualenv .venv/, and the script
re-runs itself with .venv/bin/python3 when that exists, whichever python3 started it.
"""

import argparse
import base64
import json
import os
import sys
import time

_VENV = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv")
_VENV_PYTHON = os.path.join(_VENV, "bin", "python3")
if (
    os.access(_VENV_PYTHON, os.X_OK)
    and os.path.realpath(sys.prefix) != os.path.realpath(_VENV)
    and "ESTUARY_VENV_REEXEC" not in os.environ
):
    os.environ["ESTUARY_VENV_REEXEC"] = "1"
    os.execv(_VENV_PYTHON, [_VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# NKey prefix bytes (nkeys strkey.go): the first base32 character names the key type.
PREFIX_SEED = 18 << 3  # 'S'
PREFIX_OPERATOR = 14 << 3  # 'O'
PREFIX_ACCOUNT = 0  # 'A'
PREFIX_USER = 20 << 3  # 'U'


def crc16(data: bytes) -> int:
    """CRC-16/XMODEM (polynomial 0x1021, initial value 0), as nkeys crc16.go."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def base32_nopad(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=")


def with_checksum(raw: bytes) -> str:
    """Appends the CRC16 (little-endian) and base32-encodes without padding."""
    return base32_nopad(raw + crc16(raw).to_bytes(2, "little"))


class NKey:
    """An Ed25519 key pair of one NKey type (operator, account or user)."""

    def __init__(self, prefix: int, seed: bytes):
        self.prefix = prefix
        self.raw_seed = seed
        self.private_key = Ed25519PrivateKey.from_private_bytes(seed)

    @classmethod
    def generate(cls, prefix: int) -> "NKey":
        return cls(prefix, os.urandom(32))

    @classmethod
    def from_seed(cls, encoded: str) -> "NKey":
        padded = encoded.strip() + "=" * (-len(encoded.strip()) % 8)
        raw = base64.b32decode(padded)
        body, checksum = raw[:-2], int.from_bytes(raw[-2:], "little")
        if crc16(body) != checksum:
            raise ValueError("nkey seed: invalid checksum")
        if body[0] & 0xF8 != PREFIX_SEED or len(body) != 34:
            raise ValueError("not an nkey seed")
        prefix = ((body[0] & 0x07) << 5) | ((body[1] & 0xF8) >> 3)
        return cls(prefix, body[2:])

    @property
    def public_key(self) -> str:
        # public_bytes(Raw, Raw) rather than public_bytes_raw(): Debian 12's cryptography is 38.
        public = self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return with_checksum(bytes([self.prefix]) + public)

    @property
    def seed(self) -> str:
        # Two prefix bytes: the seed prefix and the key type, packed so that base32 shows
        # 'S' followed by the type's letter (nkeys EncodeSeed).
        first = PREFIX_SEED | (self.prefix >> 5)
        second = (self.prefix & 31) << 3
        return with_checksum(bytes([first, second]) + self.raw_seed)

    def sign(self, data: bytes) -> bytes:
        return self.private_key.sign(data)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def compact_json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def encode_jwt(issuer: NKey, subject: str, name: str, nats: dict, expires: int = 0) -> str:
    """A JWT as nats-io/jwt v2 writes it: jti is the base32 SHA-512/256 of the standard
    claims (without jti), signed with the issuer's Ed25519 key over `header.payload`."""
    claims = {}
    if expires:
        claims["exp"] = expires
    claims["iat"] = int(time.time())
    claims["iss"] = issuer.public_key
    claims["name"] = name
    claims["sub"] = subject
    digest = hashes.Hash(hashes.SHA512_256())
    digest.update(compact_json(claims))
    claims = {"jti": base32_nopad(digest.finalize()), **claims, "nats": nats}
    header = b64url(compact_json({"typ": "JWT", "alg": "ed25519-nkey"}))
    signing_input = f"{header}.{b64url(compact_json(claims))}"
    return f"{signing_input}.{b64url(issuer.sign(signing_input.encode('ascii')))}"


UNLIMITED_ACCOUNT = {
    "subs": -1, "data": -1, "payload": -1,
    "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1,
}


def operator_jwt(operator: NKey, name: str, system_account: NKey) -> str:
    nats = {"system_account": system_account.public_key, "type": "operator", "version": 2}
    return encode_jwt(operator, operator.public_key, name, nats)


def account_jwt(operator: NKey, account: NKey, name: str) -> str:
    nats = {
        "limits": UNLIMITED_ACCOUNT,
        "default_permissions": {"pub": {}, "sub": {}},
        "type": "account",
        "version": 2,
    }
    return encode_jwt(operator, account.public_key, name, nats)


def user_jwt(account: NKey, user: NKey, name: str, expires: int = 0) -> str:
    nats = {"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1, "type": "user", "version": 2}
    return encode_jwt(account, user.public_key, name, nats, expires)


def creds(jwt: str, user: NKey) -> str:
    """The decorated credentials file (jwt creds_utils.go FormatUserConfig)."""
    return (
        "-----BEGIN NATS USER JWT-----\n"
        f"{jwt}\n"
        "------END NATS USER JWT------\n"
        "\n"
        "************************* IMPORTANT *************************\n"
        "NKEY Seed printed below can be used to sign and prove identity.\n"
        "NKEYs are sensitive and should be treated as secrets.\n"
        "\n"
        "-----BEGIN USER NKEY SEED-----\n"
        f"{user.seed}\n"
        "------END USER NKEY SEED------\n"
        "\n"
        "*************************************************************\n"
    )


def write(path: str, text: str, secret: bool = False) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


def issue_user(directory: str, account: NKey, name: str, expires_in: int = 0) -> str:
    user = NKey.generate(PREFIX_USER)
    expires = int(time.time()) + expires_in if expires_in else 0
    path = os.path.join(directory, f"{name}.creds")
    write(path, creds(user_jwt(account, user, name, expires), user), secret=True)
    return path


def command_init(arguments) -> None:
    directory = os.path.abspath(arguments.directory)
    os.makedirs(directory, exist_ok=True)
    operator = NKey.generate(PREFIX_OPERATOR)
    account = NKey.generate(PREFIX_ACCOUNT)
    # The server's own account (monitoring, events), as nsc sets one up.
    system = NKey.generate(PREFIX_ACCOUNT)
    operator_path = os.path.join(directory, "operator.jwt")
    write(operator_path, operator_jwt(operator, arguments.operator, system) + "\n")
    account_token = account_jwt(operator, account, arguments.account)
    write(os.path.join(directory, "account.jwt"), account_token + "\n")
    write(os.path.join(directory, "operator.nk"), operator.seed + "\n", secret=True)
    write(os.path.join(directory, "account.nk"), account.seed + "\n", secret=True)
    write(
        os.path.join(directory, "server.conf"),
        "# Written by scripts/nats-credentials.py: operator (JWT) mode, accounts in memory.\n"
        f"host: {json.dumps(arguments.host)}\n"
        f"port: {arguments.port}\n"
        f"operator: {json.dumps(operator_path)}\n"
        "resolver: MEMORY\n"
        "resolver_preload: {\n"
        f"  {account.public_key}: {json.dumps(account_token)}\n"
        f"  {system.public_key}: {json.dumps(account_jwt(operator, system, 'SYS'))}\n"
        "}\n",
    )
    creds_path = issue_user(directory, account, arguments.user)
    print(f"operator {operator.public_key}\naccount  {account.public_key}\nconfig   {os.path.join(directory, 'server.conf')}\ncreds    {creds_path}")


def command_user(arguments) -> None:
    directory = os.path.abspath(arguments.directory)
    with open(os.path.join(directory, "account.nk")) as handle:
        account = NKey.from_seed(handle.read())
    if account.prefix != PREFIX_ACCOUNT:
        sys.exit(f"{directory}/account.nk is not an account seed")
    print(issue_user(directory, account, arguments.name, arguments.expires))


def main() -> None:
    parser = argparse.ArgumentParser(description="NATS operator/account/user credentials without nsc.")
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init", help="new operator, account, user and nats-server config")
    init.add_argument("directory")
    init.add_argument("--port", type=int, default=4222)
    init.add_argument("--host", default="0.0.0.0")
    init.add_argument("--operator", default="estuary")
    init.add_argument("--account", default="estuary")
    init.add_argument("--user", default="estuary")
    init.set_defaults(run=command_init)
    user = commands.add_parser("user", help="another user of the account in DIR")
    user.add_argument("directory")
    user.add_argument("name")
    user.add_argument("--expires", type=int, default=0, help="seconds until the JWT expires (default: never)")
    user.set_defaults(run=command_user)
    arguments = parser.parse_args()
    arguments.run(arguments)


if __name__ == "__main__":
    main()
