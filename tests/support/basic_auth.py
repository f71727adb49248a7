"""Basic-auth credentials for the exporter's tests: headers, hashed users, and bcrypt counted."""

import base64

import bcrypt
import pytest

from gputop.exporter import webconfig


def auth(user: str, password: str) -> str:
    """Return the Authorization header a scraper sends for ``user``."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(name="counted_bcrypt")
def counted_bcrypt_fixture(monkeypatch) -> list[tuple[bytes, bytes]]:
    """Record every bcrypt check the test makes, the real check still made."""
    calls: list[tuple[bytes, bytes]] = []
    real = bcrypt.checkpw

    def checkpw(password: bytes, hashed: bytes) -> bool:
        calls.append((password, hashed))
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", checkpw)
    return calls


def web_with(**users: str) -> webconfig.WebConfig:
    """Return a web config whose users have these passwords (cheap hashes: cost 4)."""
    return webconfig.WebConfig(users={
        name: bcrypt.hashpw(pw.encode(), bcrypt.gensalt(rounds=4)) for name, pw in users.items()})


def cheap_hash(password: bytes = b"pw") -> str:
    """Return a cheap bcrypt hash of ``password`` as a web config holds it."""
    return bcrypt.hashpw(password, bcrypt.gensalt(rounds=4)).decode()
