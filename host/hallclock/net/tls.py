"""The optional TLS listener's certificates: a CA made for one hall with the
``openssl`` command (Debian's, installed with Mosquitto by mk/mqtt.mk), and a
server certificate for the broker signed by it (docs/network.md).  Clients
trust the hall's CA file (``--tls-ca DIR/tls/ca.crt``)."""
import ipaddress
import os
import shutil
import subprocess

from ..errors import HallclockError

DAYS = 825


def _openssl(*args, cwd):
    exe = shutil.which("openssl")
    if exe is None:
        raise HallclockError("openssl is not installed: run 'make mqtt-setup'")
    r = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise HallclockError("openssl failed: " + (r.stderr.strip().splitlines() or ["?"])[-1])


def make_ca(folder, host):
    """(ca.crt, server.crt, server.key) in ``folder``; the server certificate
    names ``host`` (an IP address or a host name) and localhost."""
    os.makedirs(folder, exist_ok=True)
    try:
        ipaddress.ip_address(host)
        alt = f"IP:{host},DNS:localhost,IP:127.0.0.1"
    except ValueError:
        alt = f"DNS:{host},DNS:localhost,IP:127.0.0.1"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
             "-out", "ca.crt", "-days", str(DAYS), "-subj", "/CN=hallclock hall CA", cwd=folder)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key", "-out",
             "server.csr", "-subj", f"/CN={host}", cwd=folder)
    with open(os.path.join(folder, "ext.cnf"), "w") as f:
        f.write(f"subjectAltName={alt}\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", str(DAYS), "-extfile", "ext.cnf",
             cwd=folder)
    for name in ("ca.key", "server.key"):
        os.chmod(os.path.join(folder, name), 0o600)
    from .broker import _give_to_broker
    _give_to_broker([os.path.join(folder, "server.key"), os.path.join(folder, "server.crt")])
    return tuple(os.path.join(os.path.abspath(folder), n) for n in ("ca.crt", "server.crt", "server.key"))
