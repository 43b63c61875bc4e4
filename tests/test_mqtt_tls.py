"""The optional TLS listener: broker-config --tls-port makes a CA for the hall
with openssl and a server certificate signed by it; the host side (logger,
and a virtual clock over a TLS socket) works through it with the hall's CA,
and a client that does not trust that CA is refused."""
import os
import ssl
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, clock_records, game, reference  # noqa: E402

from hallclock.net import mqtt as mqtthost  # noqa: E402
from hallclock.errors import HallclockError  # noqa: E402


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    h = Hall(tmp_path_factory.mktemp("tls"), clocks=("t1",), tls=True)
    yield h
    h.close()


def test_broker_config_writes_a_tls_listener(tmp_path):
    out = tmp_path / "h"
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h", "--clocks", "t1", "--out",
                                    str(out), "--tls-port", "18883", "--bind", "127.0.0.1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    conf = (out / "mosquitto.conf").read_text()
    assert "listener 18883 127.0.0.1" in conf and f"cafile {out / 'tls' / 'ca.crt'}" in conf
    v = subprocess.run(["openssl", "verify", "-CAfile", str(out / "tls" / "ca.crt"),
                        str(out / "tls" / "server.crt")], capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    assert oct(os.stat(out / "tls" / "ca.key").st_mode & 0o777) == "0o600"


def test_logger_and_clock_over_tls(hall, tmp_path):
    text = game(moves=8)
    log = tmp_path / "tls.jsonl"
    tls_addr = f"127.0.0.1:{hall.tls_port}"
    lg = subprocess.Popen(HALLCLOCK + ["log", "--broker", tls_addr, "--hall", HALL,
                                       "--credentials", hall.cred_file, "--out", str(log),
                                       "--exit-on-end", "--plain", "--tls-ca", hall.ca],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hall.loggers.append(lg)  # stopped by the fixture if the test fails
    lg.stdout.readline()  # connected and subscribed
    dev = subprocess.run(HALLCLOCK + ["device", "--broker", tls_addr, "--hall", HALL,
                                      "--clock", "t1", "--credentials", hall.cred_file,
                                      "--script", _write(tmp_path, text), "--session",
                                      "0000cafe", "--tls-ca", hall.ca],
                         capture_output=True, text=True, timeout=60)
    assert dev.returncode == 0, dev.stderr
    out, err = lg.communicate(timeout=60)
    assert lg.returncode == 0, err
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text)


def _write(folder, text):
    p = folder / "g.txt"
    p.write_text(text)
    return str(p)


def test_a_client_without_the_halls_ca_is_refused(hall, tmp_path):
    other = tmp_path / "other.crt"
    from hallclock.net import tls as tlsca
    other_ca = tlsca.make_ca(str(tmp_path / "other"), "127.0.0.1")[0]
    os.replace(other_ca, other)
    net = mqtthost.BrokerClient(("127.0.0.1", hall.tls_port), hall.creds["logger"],
                                tls=str(other))
    with pytest.raises((HallclockError, ssl.SSLError)):
        net.start()
    net.stop()
