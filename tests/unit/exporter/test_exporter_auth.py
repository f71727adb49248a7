"""Basic auth and the web config: a credential costs one bcrypt however often it is sent, an
unknown user costs what a wrong password does, and a web config that would make every login or
handshake fail later is refused at start with one line naming the file."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import bcrypt
import pytest

from gputop.core.errors import UsageError
from gputop.exporter import webconfig
from tests.support.hostile_serving import self_signed, serving, wait_until
from tests.support.prom_harness import ROOT, get

# ---------------------------------------------------------------------------- basic auth

def auth(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def counted_bcrypt(monkeypatch) -> list[tuple[bytes, bytes]]:
    calls: list[tuple[bytes, bytes]] = []
    real = bcrypt.checkpw

    def checkpw(password: bytes, hashed: bytes) -> bool:
        calls.append((password, hashed))
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", checkpw)
    return calls


def web_with(**users: str) -> webconfig.WebConfig:
    return webconfig.WebConfig(users={
        name: bcrypt.hashpw(pw.encode(), bcrypt.gensalt(rounds=4)) for name, pw in users.items()})


def test_bcrypt_runs_once_per_credential(counted_bcrypt):
    web = web_with(alice="s3cret", bob="hunter2")
    assert all(web.authorized(auth("alice", "s3cret")) for _ in range(20))
    assert len(counted_bcrypt) == 1  # the scraper's header, every 15 s: verified once
    assert not any(web.authorized(auth("alice", "guess")) for _ in range(20))
    assert len(counted_bcrypt) == 2  # a repeated guess costs nothing more
    assert web.authorized(auth("bob", "hunter2")) and not web.authorized(auth("bob", "s3cret"))
    assert len(counted_bcrypt) == 4


def test_an_unknown_user_costs_what_a_wrong_password_costs(counted_bcrypt):
    web = web_with(alice="s3cret")
    assert not web.authorized(auth("alice", "guess"))
    assert not web.authorized(auth("mallory", "guess"))
    assert not web.authorized(auth("mallory", "s3cret"))  # alice's password is not mallory's
    # Each refusal ran bcrypt once against alice's hash: the same work, whichever user.
    assert [hashed for _, hashed in counted_bcrypt] == [web.users["alice"]] * 3


def test_concurrent_logins_with_one_new_credential_run_bcrypt_once(counted_bcrypt):
    web = web_with(alice="s3cret")
    barrier = threading.Barrier(8)

    def login() -> None:
        barrier.wait()
        assert web.authorized(auth("alice", "s3cret"))

    threads = [threading.Thread(target=login) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(counted_bcrypt) == 1


def test_refused_credentials_are_remembered_within_a_bound(monkeypatch, counted_bcrypt):
    monkeypatch.setattr(webconfig, "REMEMBERED", 4)
    web = web_with(alice="s3cret")
    for i in range(10):
        assert not web.authorized(auth("alice", f"guess{i}"))
    assert len(web.credentials._refused) == 4
    assert not web.authorized(auth("alice", "guess9"))  # still remembered
    assert len(counted_bcrypt) == 10


def test_basic_auth_over_http_verifies_the_scrapers_header_once(counted_bcrypt):
    web = web_with(alice="s3cret")
    with serving(web=web) as (port, _):
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(5):
            assert get(url, headers={"Authorization": auth("alice", "s3cret")})[0] == 200
            assert get(url, headers={"Authorization": auth("alice", "nope")})[0] == 401
    assert len(counted_bcrypt) == 2


# ---------------------------------------------------------------------------- web configs

def _hash(password: bytes = b"pw") -> str:
    return bcrypt.hashpw(password, bcrypt.gensalt(rounds=4)).decode()


@pytest.mark.parametrize("text, needle", [
    ("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  min_version: TLS13\n"
     "  max_version: TLS12\n", "min_version TLS13 is above max_version TLS12"),
    ("basic_auth_users:\n  alice: $2y$10$short\n", "alice: not a bcrypt hash"),
    ("basic_auth_users:\n  alice: '$2b$03$" + "a" * 53 + "'\n", "a cost 04-31"),
    ("basic_auth_users:\n  a:b: " + _hash() + "\n", "cannot hold ':'"),
    ("a: &x [1]\nb: *x\n", "aliases (*name) are not allowed here"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64 levels"),
    ("a: " + "[" * 70 + "]" * 70 + "\n", "nested deeper than 64 levels"),
    ("a: [\n", "not valid YAML"),
], ids=["min-above-max", "short-hash", "cost-03", "colon-in-user", "alias", "deep-5000",
        "deep-70", "not-yaml"])
def test_a_web_config_that_would_fail_later_is_refused_at_start(tmp_path, tls_pem, text, needle):
    config = tmp_path / "web.yml"
    config.write_text(text.replace("c.pem", str(tls_pem[0])).replace("k.pem", str(tls_pem[1])))
    with pytest.raises(UsageError, match=re.escape(needle)) as err:
        webconfig.load(str(config))
    assert str(config) in str(err.value) and "\n" not in str(err.value)


@pytest.fixture(scope="module")
def tls_pem(tmp_path_factory) -> tuple[Path, Path]:
    folder = self_signed(tmp_path_factory.mktemp("tls")).parent
    return folder / "c.pem", folder / "k.pem"


def test_a_hash_is_refused_exactly_where_bcrypt_would_refuse_it_or_never_match_it():
    """bcrypt_problem agrees with bcrypt itself on the last characters of salt and hash, whose
    unused low bits must be zero."""
    good = _hash(b"pw")
    alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    for ch in alphabet:  # the salt's last character: bcrypt refuses the impossible ones
        hashed = good[:28] + ch + good[29:]
        try:
            bcrypt.checkpw(b"pw", hashed.encode())
            refused = False
        except ValueError:
            refused = True
        assert (webconfig.bcrypt_problem(hashed) is not None) == refused, ch
    # The hash's last character: the same six bits but for the two unused ones decode to the
    # same hash, and only the one with those bits zero is ever matched.
    top = alphabet.index(good[59]) // 4 * 4
    for ch in alphabet[top:top + 4]:
        hashed = good[:59] + ch
        matches = bcrypt.checkpw(b"pw", hashed.encode())
        assert (webconfig.bcrypt_problem(hashed) is None) == matches, ch


@pytest.mark.parametrize("make, needle", [
    (lambda tmp: "/dev/zero", "not a regular file (a device)"),
    (lambda tmp: str(tmp), "not a regular file (a folder)"),
    (lambda tmp: _fifo(tmp / "fifo.yml"), "not a regular file (a FIFO)"),
    (lambda tmp: _write(tmp / "deep.yml", "a: " + "[" * 100000 + "]" * 100000),
     "nested deeper than 64 levels"),
    (lambda tmp: _write(tmp / "bin.yml", "basic_auth_users: \xff\n", "latin-1"), "not UTF-8"),
], ids=["dev-zero", "folder", "fifo", "deep-100000", "latin-1"])
def test_a_bad_web_config_file_is_one_line_and_exit_2(tmp_path, make, needle):
    path = make(tmp_path)
    out = subprocess.run([sys.executable, "-m", "gputop", "exporter", "--backend", "sim",
                          "--listen", "127.0.0.1:0", "--web-config", path], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and needle in out.stderr and path in out.stderr, out.stderr


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return str(path)


def _write(path: Path, text: str, encoding: str = "utf-8") -> str:
    path.write_text(text, encoding=encoding)
    return str(path)


def test_guessers_beyond_the_queue_are_told_to_retry_and_a_known_scraper_stays_fast(
        monkeypatch, counted_bcrypt):
    web = web_with(alice="s3cret")
    assert web.authorized(auth("alice", "s3cret"))  # the scraper's credential, verified
    release = threading.Event()
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda pw, hashed: release.wait(10) and real(pw, hashed))
    outcomes: list[str] = []

    def guess(i: int) -> None:
        try:
            outcomes.append("refused" if not web.authorized(auth("alice", f"g{i}")) else "in")
        except webconfig.Busy:
            outcomes.append("busy")

    guessers = [threading.Thread(target=guess, args=(i,)) for i in range(webconfig.QUEUED + 6)]
    for t in guessers:
        t.start()
    try:
        assert wait_until(lambda: outcomes.count("busy") == 5, 3)  # told at once, not queued
        started = time.monotonic()
        assert web.authorized(auth("alice", "s3cret"))  # no bcrypt, no queue
        assert time.monotonic() - started < 0.05
    finally:
        release.set()
        for t in guessers:
            t.join(10)
    assert outcomes.count("refused") == webconfig.QUEUED + 1
