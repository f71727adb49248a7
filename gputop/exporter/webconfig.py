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

Anything that would make every handshake or every login fail later (an unknown key, a missing
file, ``min_version`` above ``max_version``, a hash bcrypt would refuse or could never match) is
one clear error at start, naming the file.

Logins cost one bcrypt per distinct credential, not per request: a verified or refused
credential is remembered (under a keyed digest, never in clear), so a scraper that sends the
same header every 15 s pays once, and a guesser's repeats cost nothing. An unknown user is
checked against a configured hash too, so that the time a refusal takes does not tell which user
names exist.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import re
import secrets
import ssl
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop.core import userfile
from gputop.core.errors import UsageError

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

# bcrypt's modular-crypt form: $2a$/$2b$/$2y$, a two-digit cost 04-31, then 22 characters of
# salt and 31 of hash in bcrypt's own base64 alphabet.
_BCRYPT = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")
_B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
REMEMBERED = 1024  # refused credentials remembered (oldest forgotten first)
QUEUED = 8  # new credentials waiting for the one bcrypt at a time; more are told to retry


class Busy(Exception):
    """Too many new credentials are waiting to be checked: retry later (a 503, not a 401)."""


def bcrypt_problem(hashed: str) -> str | None:
    """Say why ``hashed`` is not a bcrypt hash that some password could match, or None.

    Beyond the shape: the salt's 22 characters carry 128 bits and the hash's 31 carry 184, so
    the last character of each has unused low bits that must be zero. bcrypt refuses a salt
    whose last character sets them ("Invalid salt" on every login) and never matches a hash
    whose last character does (every login fails)."""
    if not _BCRYPT.fullmatch(hashed):
        return "not a bcrypt hash ($2a$, $2b$ or $2y$, a cost 04-31, 53 characters)"
    if _B64.index(hashed[28]) % 16:
        return "not a bcrypt hash (its salt's last character is impossible)"
    if _B64.index(hashed[59]) % 4:
        return "not a bcrypt hash (its last character is impossible: no password matches it)"
    return None


class Credentials:
    """The basic-auth users, each credential verified by bcrypt once.

    A credential (user and password) is remembered under an HMAC with a key made at start, so
    that the memory holds no password and the lookup's timing says nothing an attacker can use.
    Verified credentials are at most one per user and password; refused ones are bounded
    (REMEMBERED, oldest forgotten). One bcrypt runs at a time: password guessers share one core
    instead of taking every core from the scrapes, and two requests with the same new
    credential cost one bcrypt, not two. At most QUEUED new credentials wait for it; the next
    is told to retry (Busy) at once, so that guessers cannot hold every connection the server
    has while a known scraper waits for one."""

    def __init__(self, users: dict[str, bytes]) -> None:
        self.users = users
        # An unknown user's password is checked against a real hash (the first user's), so
        # that refusing it costs what refusing a known user's wrong password costs.
        self._decoy = next(iter(users.values()), b"")
        self._key = secrets.token_bytes(32)
        self._verified: set[bytes] = set()
        self._refused: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()
        self._queue = threading.BoundedSemaphore(QUEUED + 1)  # the one checking, and those waiting

    def check(self, user: str, password: bytes) -> bool:
        """Whether ``user`` exists and ``password`` is theirs; Busy if too many new credentials
        are waiting to be checked."""
        key = hmac.new(self._key, user.encode() + b":" + password, hashlib.sha256).digest()
        known = self._known(key)
        if known is not None:
            return known
        if not self._queue.acquire(blocking=False):
            raise Busy("too many logins are being checked: retry")
        try:
            with self._lock:  # one bcrypt at a time; the holder before us may have settled it
                return self._verify(key, user, password)
        finally:
            self._queue.release()

    def _verify(self, key: bytes, user: str, password: bytes) -> bool:
        known = self._known(key)
        if known is not None:
            return known
        hashed = self.users.get(user)
        ok = _checkpw(password, self._decoy if hashed is None else hashed) and hashed is not None
        if ok:
            self._verified.add(key)
        else:
            self._refused[key] = None
            while len(self._refused) > REMEMBERED:
                self._refused.popitem(last=False)
        return ok

    def _known(self, key: bytes) -> bool | None:
        if key in self._verified:
            return True
        if key in self._refused:
            return False
        return None


def _checkpw(password: bytes, hashed: bytes) -> bool:
    import bcrypt

    try:
        return bcrypt.checkpw(password, hashed)
    except ValueError:  # load() refuses every hash that raises; kept as a last guard
        return False


@dataclass(frozen=True)
class WebConfig:
    tls: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # name -> bcrypt hash
    credentials: Credentials = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "credentials", Credentials(self.users))

    def authorized(self, header: str | None) -> bool:
        """Whether an Authorization header names a configured user with the right password
        (Busy: not known yet, and too many others are waiting to be checked)."""
        if not self.users:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            decoded = base64.b64decode(header[6:], validate=True)
        except binascii.Error:
            return False
        user, colon, password = decoded.partition(b":")
        if not colon:
            return False
        try:
            name = user.decode()
        except UnicodeDecodeError:
            return False
        return self.credentials.check(name, password)


def load(path: str) -> WebConfig:
    """Read and check a web-config file; UsageError (one line naming the file) if it is wrong."""
    import yaml

    file = Path(path)
    try:
        text = userfile.read_text(file)
        data = userfile.parse(text, _yaml_loads(), "YAML", (yaml.YAMLError,))
    except FileNotFoundError:
        raise UsageError(f"web config {path}: no such file") from None
    except userfile.FileProblem as exc:
        raise UsageError(f"web config {path}: {exc}") from None
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


@functools.cache
def _yaml_loads() -> Any:
    """Return yaml.safe_load without aliases: a web config has no use for them, and a few
    nested aliases make a document whose walk takes exponential time."""
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed here", self.peek_event().start_mark)
            return super().compose_node(parent, index)

    return lambda text: yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader


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
    cert, private = _pem(base, section, "cert_file", where), _pem(base, section, "key_file", where)
    try:
        context.load_cert_chain(cert, private)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"{where}: cannot load cert_file/key_file: "
                         f"{userfile.one_line(str(exc))}") from None
    auth = section.get("client_auth_type", "NoClientCert")
    if auth not in CLIENT_AUTH:
        raise UsageError(f"{where}: client_auth_type {auth!r} is not one of "
                         f"{', '.join(CLIENT_AUTH)}")
    context.verify_mode = CLIENT_AUTH[auth]
    if section.get("client_ca_file") is not None:
        ca = _pem(base, section, "client_ca_file", where)
        try:
            context.load_verify_locations(ca)
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"{where}: cannot load client_ca_file: "
                             f"{userfile.one_line(str(exc))}") from None
    elif context.verify_mode != ssl.CERT_NONE:
        raise UsageError(f"{where}: client_auth_type {auth} needs client_ca_file")
    _versions(context, section, where)
    return context


def _pem(base: Path, section: dict, key: str, where: str) -> Path:
    """Return the path of a certificate or key file, once it is known to be a small regular
    file: OpenSSL would read a FIFO or /dev/zero without end."""
    path = base / str(section[key])
    try:
        userfile.read_bytes(path)
    except FileNotFoundError:
        raise UsageError(f"{where}: cannot load {key} {path}: no such file") from None
    except userfile.FileProblem as exc:
        raise UsageError(f"{where}: cannot load {key} {path}: {exc}") from None
    return path


def _versions(context: ssl.SSLContext, section: dict, where: str) -> None:
    """Set min_version/max_version, refusing a range no handshake could fall in."""
    chosen = {}
    for key, attr in (("min_version", "minimum_version"), ("max_version", "maximum_version")):
        version = section.get(key)
        if version is None:
            continue
        if version not in TLS_VERSIONS:
            raise UsageError(f"{where}: {key} {version!r} is not one of "
                             f"{', '.join(TLS_VERSIONS)}")
        chosen[key] = version
        setattr(context, attr, TLS_VERSIONS[version])
    low, high = chosen.get("min_version"), chosen.get("max_version")
    if low and high and TLS_VERSIONS[low] > TLS_VERSIONS[high]:
        raise UsageError(f"{where}: min_version {low} is above max_version {high}: "
                         "no handshake could succeed")


def _users(section: object, path: str) -> dict[str, bytes]:
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise UsageError(f"web config {path}: basic_auth_users: expected user: bcrypt-hash pairs")
    users = {}
    for user, hashed in section.items():
        name = str(user)
        if ":" in name:
            raise UsageError(f"web config {path}: basic_auth_users: {name!r}: a user name "
                             "cannot hold ':' (basic auth splits there)")
        problem = bcrypt_problem(hashed) if isinstance(hashed, str) else "not a bcrypt hash"
        if problem:
            raise UsageError(f"web config {path}: basic_auth_users: {name}: {problem}")
        users[name] = hashed.encode()
    return users
