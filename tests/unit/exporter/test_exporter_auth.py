"""Basic auth in process: a credential costs one bcrypt however often it is sent, an unknown user
costs what a wrong password does, and a hash is refused exactly where bcrypt would refuse it."""

from __future__ import annotations

import threading
import time

import bcrypt

from gputop.exporter import webconfig
from tests.support.basic_auth import (
    auth,
    cheap_hash,
    counted_bcrypt_fixture,  # noqa: F401 - `counted_bcrypt`
    web_with,
)
from tests.support.hostile_serving import wait_until

# ---------------------------------------------------------------------------- basic auth

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


def test_a_hash_is_refused_exactly_where_bcrypt_would_refuse_it_or_never_match_it():
    """bcrypt_problem agrees with bcrypt itself on the last characters of salt and hash, whose
    unused low bits must be zero."""
    good = cheap_hash(b"pw")
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
