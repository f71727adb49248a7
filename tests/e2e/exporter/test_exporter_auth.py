"""Basic auth over HTTP verifies a scraper's header once, and a web config that would fail later
(bad hashes, TLS versions, hostile YAML, a device or FIFO for a file) is refused at start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gputop.core.errors import UsageError
from gputop.exporter import webconfig
from tests.support.basic_auth import (
    auth,
    cheap_hash,
    counted_bcrypt_fixture,  # noqa: F401 - `counted_bcrypt`
    web_with,
)
from tests.support.hostile_serving import self_signed, serving
from tests.support.prom_harness import ROOT, get

# ---------------------------------------------------------------------------- basic auth

def test_basic_auth_over_http_verifies_the_scrapers_header_once(counted_bcrypt):
    web = web_with(alice="s3cret")
    with serving(web=web) as (port, _):
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(5):
            assert get(url, headers={"Authorization": auth("alice", "s3cret")})[0] == 200
            assert get(url, headers={"Authorization": auth("alice", "nope")})[0] == 401
    assert len(counted_bcrypt) == 2


# ---------------------------------------------------------------------------- web configs

@pytest.mark.parametrize("text, needle", [
    ("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  min_version: TLS13\n"
     "  max_version: TLS12\n", "min_version TLS13 is above max_version TLS12"),
    ("basic_auth_users:\n  alice: $2y$10$short\n", "alice: not a bcrypt hash"),
    ("basic_auth_users:\n  alice: '$2b$03$" + "a" * 53 + "'\n", "a cost 04-31"),
    ("basic_auth_users:\n  a:b: " + cheap_hash() + "\n", "cannot hold ':'"),
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


