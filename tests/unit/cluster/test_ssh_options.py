"""The allow-list of ssh options a hosts file may carry (gputop.cluster.ssh_options)."""

from __future__ import annotations

import pytest

from gputop.cluster import remote
from gputop.cluster.hosts import HostSpec, load_hosts_file
from gputop.cluster.ssh_options import OPTION_KEYS, validate_ssh_args
from gputop.core.errors import UsageError

ALLOWED = [
    ["-p", "2222"], ["-p2222"], ["-p", "1"], ["-p", "65535"],
    ["-i", "/home/alice/.ssh/id_ed25519"], ["-i~/.ssh/id_ed25519"], ["-i", "%d/.ssh/id_rsa"],
    ["-l", "alice"], ["-lalice"], ["-l", "svc.gpu-01"],
    ["-J", "bastion"], ["-Jbastion"], ["-J", "alice@bastion:2222"],
    ["-J", "ssh://alice@bastion:22,10.0.0.1,[fe80::1%eth0]:22,[::1]"],
    ["-4"], ["-6"], ["-C"],
    ["-o", "ConnectTimeout=5"], ["-oConnectTimeout=5"], ["-o", "ConnectTimeout 5"],
    ["-o ConnectTimeout = 5"], ["-oconnecttimeout=5"], ["-o", "CONNECTTIMEOUT=5"],
    ["-o", "Port=2222"], ["-o", "User=alice"], ["-o", "HostName=10.0.0.7"],
    ["-o", "IdentityFile=~/.ssh/id_ed25519"], ["-o", "IdentitiesOnly=yes"],
    ["-o", "ProxyJump=alice@bastion"], ["-o", "ConnectionAttempts=3"],
    ["-o", "ServerAliveInterval=15"], ["-o", "ServerAliveCountMax=4"], ["-o", "TCPKeepAlive=no"],
    ["-o", "Compression=yes"], ["-o", "AddressFamily=inet6"], ["-o", "HostKeyAlias=gpu07"],
    ["-o", "StrictHostKeyChecking=yes"], ["-oStrictHostKeyChecking yes"],
    ["-p", "2222", "-i", "/k", "-l", "bob", "-4", "-C", "-o", "Compression=no", "-J", "jump"],
    [],
]


@pytest.mark.parametrize("args", ALLOWED, ids=lambda a: " ".join(a) or "empty")
def test_allowed_options_in_every_spelling_pass_unchanged(args):
    assert validate_ssh_args(args) == tuple(args)


def test_every_allowed_key_is_tested():
    values = [a.removeprefix("-o").strip() for args in ALLOWED for a in args
              if a.startswith("-o") and a != "-o"]
    values += [args[i + 1] for args in ALLOWED for i, a in enumerate(args) if a == "-o"]
    tested = {v.replace("=", " ").split()[0].lower() for v in values}
    assert tested == {k.lower() for k in OPTION_KEYS}


# Each refused argument list, and words the one-line error must hold.
REFUSED = [
    # the cases: a config whose ProxyCommand runs, a log file written
    (["-F/tmp/evil.cfg"], "'-F/tmp/evil.cfg': it loads another ssh config"),
    (["-F", "/tmp/evil.cfg"], "'-F': it loads another ssh config"),
    (["-E/tmp/ssh.log"], "'-E/tmp/ssh.log': it writes a local log file"),
    (["-E", "/tmp/ssh.log"], "it writes a local log file"),
    # options that run a local command, in every -o spelling
    (["-oProxyCommand=touch /tmp/x"], "it runs a local command"),
    (["-o", "ProxyCommand=nc x 22"], "it runs a local command"),
    (["-o", "ProxyCommand nc x 22"], "it runs a local command"),
    (["-o", "proxycommand=nc x 22"], "it runs a local command"),
    (["-o", "LocalCommand=id", "-o", "PermitLocalCommand=yes"], "it runs a local command"),
    (["-o", "PermitLocalCommand=yes"], "it runs a local command"),
    (["-oKnownHostsCommand=/bin/id"], "it runs a local command"),
    (["-o", "Match exec \"touch /tmp/x\""], "it runs a local command"),
    (["-o", "Include /tmp/evil.cfg"], "it loads another ssh config"),
    (["-o", "PKCS11Provider=/tmp/evil.so"], "it loads a local library"),
    (["-o", "SecurityKeyProvider=/tmp/evil.so"], "it loads a local library"),
    (["-I", "/tmp/evil.so"], "PKCS#11"),
    (["-o", "RemoteCommand=id"], "refusing"),
    # files written: control sockets, known_hosts
    (["-S", "/tmp/ctl"], "control socket"), (["-M"], "control socket"),
    (["-o", "ControlMaster=yes"], "control socket"), (["-oControlPath=/tmp/c"], "control socket"),
    (["-o", "ControlPersist=10m"], "control socket"),
    (["-o", "UserKnownHostsFile=/tmp/kh"], "known_hosts"),
    (["-o", "GlobalKnownHostsFile=/dev/null"], "known_hosts"),
    (["-o", "UpdateHostKeys=yes"], "writes known_hosts"),
    (["-o", "CheckHostIP=yes"], "writes known_hosts"),
    # host-key checking weakened (or known_hosts written by accept-new)
    (["-o", "StrictHostKeyChecking=no"], "StrictHostKeyChecking takes yes"),
    (["-oStrictHostKeyChecking=accept-new"], "StrictHostKeyChecking takes yes"),
    (["-o", "StrictHostKeyChecking=off"], "StrictHostKeyChecking takes yes"),
    # listeners, tunnels, background, other sessions
    (["-L", "8080:localhost:80"], "local listener"), (["-L8080:localhost:80"], "local listener"),
    (["-D", "1080"], "local listener"), (["-R", "9000:localhost:22"], "forwards connections"),
    (["-w", "0:0"], "tunnel"), (["-W", "host:22"], "forwarded connection"),
    (["-f"], "background"), (["-N"], "no remote command"), (["-s"], "not on gputop's list"),
    (["-y"], "not on gputop's list"), (["-v"], "not on gputop's list"),
    (["-A"], "not on gputop's list"), (["-X"], "not on gputop's list"),
    (["-o", "ForwardAgent=yes"], "not on gputop's list"),
    (["-o", "LocalForward=8080 localhost:80"], "local listener"),
    (["-o", "SendEnv=AWS_SECRET"], "not on gputop's list"),
    # values of allowed options that are not what they claim
    (["-J", "-oProxyCommand=touch /tmp/x"], "-J takes"), (["-J-oProxyCommand=x"], "-J takes"),
    (["-J", "a b"], "-J takes"), (["-J", "host;id"], "-J takes"), (["-J", "h:99999"], "-J takes"),
    (["-J", "$(id)@h"], "-J takes"), (["-o", "ProxyJump=-F/tmp/x"], "ProxyJump takes"),
    (["-p", "0"], "-p takes a port"), (["-p", "65536"], "-p takes a port"),
    (["-p", "22; id"], "-p takes a port"), (["-p", "ssh"], "-p takes a port"),
    (["-p", "２２"], "-p takes a port"),
    (["-i", "-oProxyCommand=x"], "-i takes a file path"), (["-i", "/a b"], "-i takes"),
    (["-i", "$HOME/k"], "-i takes"), (["-l", "-x"], "-l takes"), (["-l", "a;b"], "-l takes"),
    (["-o", "Port=22 33"], "Port takes"), (["-o", "User=a b"], "User takes"),
    (["-oHostName=$(id)"], "HostName takes"), (["-o", "ConnectTimeout=-1"], "ConnectTimeout takes"),
    (["-o", "Compression=maybe"], "Compression takes"), (["-o", "IdentityFile=\"/a\""], "takes"),
    (["-o", "AddressFamily=unix"], "AddressFamily takes"),
    # not options, or not whole ones
    (["host2"], "only ssh options"), (["--"], "only ssh options"), (["-"], "only ssh options"),
    (["--help"], "only ssh options"), ([""], "only ssh options"),
    (["-4C"], "give each flag on its own"), (["-Cp22"], "give each flag on its own"),
    (["-p"], "'-p' needs a value"), (["-o"], "'-o' needs a value"),
    (["-o", "=yes"], "refusing"), (["-o", "Port"], "refusing"),
    (["-p", "2222\n-oProxyCommand=x"], "-p takes"), (["-o", "Port=22\0"], "Port takes"),
]


@pytest.mark.parametrize("args,words", REFUSED, ids=lambda a: repr(a)[:40])
def test_refused_options_name_the_argument_in_one_line(args, words):
    with pytest.raises(UsageError) as info:
        validate_ssh_args(args, "hosts.toml: host #1 (gpu01) ssh_args")
    message = str(info.value)
    assert message.startswith("hosts.toml: host #1 (gpu01) ssh_args: ")
    assert words in message
    assert "\n" not in message and message.isprintable()


@pytest.mark.parametrize("args", ["-p 22", ("-p", 22), None, {"-p": "22"}])
def test_ssh_args_must_be_a_list_of_strings(args):
    with pytest.raises(UsageError, match="must be a list of strings"):
        validate_ssh_args(args)


def test_hosts_file_fields_are_all_checked(tmp_path):
    f = tmp_path / "hosts.toml"
    for text, words in (
        ('[[host]]\nname = "a"\nssh_args = ["-F/tmp/evil.cfg"]\n', "host #1 (a) ssh_args: "
                                                                   "refusing '-F/tmp/evil.cfg'"),
        ('[[host]]\nname = "a"\nssh_args = ["-E", "/tmp/log"]\n', "refusing '-E'"),
        ('[[host]]\nname = "node1\\n"\n', "no host name has"),
        ('[[host]]\nname = "node1 -oProxyCommand=x"\n', "no host name has"),
        ('[[host]]\nname = "-F/tmp/x"\n', "starts with '-'"),
        ('[[host]]\nname = "a"\nremote_command = "gputop\\u001b[2J agent"\n', "control characters"),
        ('[[host]]\nname = "a"\nremote_command = "gputop\\u0000"\n', "single line"),
        ('[[host]]\nname = "a"\nremote_command = "\\u0007"\n', "control characters"),
        ('[[host]]\nname = "a"\n"ssh\\u001bargs" = 1\n', "unknown key(s) 'ssh\\x1bargs'"),
    ):
        f.write_text(text)
        with pytest.raises(UsageError, match=None) as info:
            load_hosts_file(f)
        assert words in str(info.value), str(info.value)
        assert str(info.value).isprintable()
    f.write_text('[[host]]\nname = "a"\nremote_command = "cd /x &&\\tgputop agent"\n'
                 'ssh_args = ["-p2222", "-o", "ConnectTimeout 5"]\n')
    assert load_hosts_file(f) == [HostSpec("a", "cd /x &&\tgputop agent",
                                           ("-p2222", "-o", "ConnectTimeout 5"))]


def test_ssh_argv_checks_the_args_again_whatever_built_the_spec():
    with pytest.raises(UsageError, match="it loads another ssh config"):
        remote.ssh_argv(HostSpec("node1", None, ("-F/tmp/evil.cfg",)), "true")
    argv = remote.ssh_argv(HostSpec("node1", None, ("-p2222", "-o", "ConnectTimeout 5")), "true")
    assert argv[-6:] == ["-p2222", "-o", "ConnectTimeout 5", "--", "node1", "true"]
