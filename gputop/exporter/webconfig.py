"""TLS and basic auth from a web-config file in the Prometheus exporter-toolkit format, the file
node_exporter and dcgm-exporter take with ``--web.config.file``:

    tls_server_config:
      cert_file: server.crt          # paths relative to the config file
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
      client_ca_file: ca.crt
      min_version: TLS12
    basic_auth_users:
      alice: $2y$10$…                # bcrypt hashes, as htpasswd -B writes them

Anything else (an unknown key, a missing file, a hash that is not bcrypt) is one clear error.
"""

from __future__ import annotations

import base64
import binascii
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from gputop.errors import UsageError

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_OPTIONAL,
    "RequireAnyClientCert": ssl.CERT_REQUIRED,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_TOP_KEYS = {"tls_server_config", "basic_auth_users", "http_server_config"}
_TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
             "max_version", "cipher_suites", "prefer_server_cipher_suites", "curve_preferences"}


@dataclass(frozen=True)
class WebConfig:
    tls: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # name -> bcrypt hash

    def authorized(self, header: str | None) -> bool:
        """Whether an Authorization header names a configured user with the right password."""
        if not self.users:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        hashed = self.users.get(user)
        if hashed is None:
            return False
        import bcrypt

        try:
            return bcrypt.checkpw(password.encode(), hashed)
        except ValueError:
            return False


def load(path: str) -> WebConfig:
    import yaml

    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"web config {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"web config {path}: not YAML: {str(exc).splitlines()[0]}") from None
    if data is None:
        return WebConfig()
    if not isinstance(data, dict):
        raise UsageError(f"web config {path}: expected a mapping of settings")
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise UsageError(f"web config {path}: unknown setting {unknown[0]!r}")
    tls = _tls(data.get("tls_server_config"), file)
    users = _users(data.get("basic_auth_users"), path)
    return WebConfig(tls=tls, users=users)


def _tls(section: object, file: Path) -> ssl.SSLContext | None:
    if section is None:
        return None
    where = f"web config {file}: tls_server_config"
    if not isinstance(section, dict):
        raise UsageError(f"{where}: expected a mapping")
    unknown = sorted(set(map(str, section)) - _TLS_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown setting {unknown[0]!r}")
    for key in ("cert_file", "key_file"):
        if not isinstance(section.get(key), str):
            raise UsageError(f"{where}: {key} is required")
    base = file.parent
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(base / section["cert_file"], base / section["key_file"])
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"{where}: cannot load cert_file/key_file: {exc}") from None
    auth = section.get("client_auth_type", "NoClientCert")
    if auth not in CLIENT_AUTH:
        raise UsageError(f"{where}: client_auth_type {auth!r} is not one of "
                         f"{', '.join(CLIENT_AUTH)}")
    context.verify_mode = CLIENT_AUTH[auth]
    ca = section.get("client_ca_file")
    if ca is not None:
        try:
            context.load_verify_locations(base / str(ca))
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"{where}: cannot load client_ca_file: {exc}") from None
    elif context.verify_mode != ssl.CERT_NONE:
        raise UsageError(f"{where}: client_auth_type {auth} needs client_ca_file")
    for key, attr in (("min_version", "minimum_version"), ("max_version", "maximum_version")):
        version = section.get(key)
        if version is not None:
            if version not in TLS_VERSIONS:
                raise UsageError(f"{where}: {key} {version!r} is not one of "
                                 f"{', '.join(TLS_VERSIONS)}")
            setattr(context, attr, TLS_VERSIONS[version])
    return context


def _users(section: object, path: str) -> dict[str, bytes]:
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise UsageError(f"web config {path}: basic_auth_users: expected user: bcrypt-hash pairs")
    users = {}
    for user, hashed in section.items():
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise UsageError(f"web config {path}: basic_auth_users: {user}: not a bcrypt hash")
        users[str(user)] = hashed.encode()
    return users
