"""What one TLS connection to the hall's broker costs a MicroPython clock
(docs/network.md "TLS (optional)", "Does TLS fit the clock?").

The hall's Mosquitto with broker-config's TLS listener (EC P-256 CA), and
the MicroPython unix port (its mbedTLS, MicroPython's own configuration: a
16 KiB in and a 4 KiB out record buffer, as the ESP32 image's ESP-IDF
configuration) opening ``N`` TLS connections that each pin the hall's CA
and finish the handshake, then an MQTT CONNECT over each.  Measured per
connection: the GC heap it holds (``gc.mem_alloc``) and the C heap it holds
(the process's resident memory: the unix port's mbedTLS allocates with the
C library, as the ESP32's does on the IDF heap).  Baseline, same run: the
same N connections in plain TCP.

    .venv/bin/python bench/tlscost.py [N]
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

DRIVER = """
import gc, socket, sys
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
tls = %(tls)r
if tls:
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = ssl.CERT_REQUIRED
    with open(%(ca)r, "rb") as f:
        ctx.load_verify_locations(cadata=f.read())
addr = socket.getaddrinfo("127.0.0.1", %(port)d)[0][-1]
connect = %(connect)r
socks = []
gc.collect()
g0, r0 = gc.mem_alloc(), rss()
for i in range(%(n)d):
    s = socket.socket()
    s.connect(addr)
    if tls:
        s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    s.write(connect)
    got = s.read(4)
    assert got[:1] == b"\\x20", got
    socks.append(s)
gc.collect()
g1, r1 = gc.mem_alloc(), rss()
print("FIG", %(n)d, g1 - g0, r1 - r0)
for s in socks:
    s.close()
"""


def measure(n=20):
    from hallclock.net import broker, tls as tlsca
    from hallclock.vboard import unixport as mpunix
    from hallclock_fw import mqtt
    folder = tempfile.mkdtemp(prefix="hallclock-bench-")
    os.chmod(folder, 0o711)
    conf = os.path.join(folder, "conf")
    port, local, tls_port = broker.free_port(), broker.free_port(), broker.free_port()
    tls = (tls_port,) + tlsca.make_ca(os.path.join(conf, "tls"), "127.0.0.1")
    import ssl
    der = os.path.join(conf, "tls", "ca.der")  # what a clock would keep: the CA in DER
    with open(tls[1]) as f, open(der, "wb") as g:
        g.write(ssl.PEM_cert_to_DER_cert(f.read()))
    clocks = ["t%d" % i for i in range(n)]
    creds = broker.write_config(conf, "bench", clocks, port=port, bind="127.0.0.1", tls=tls,
                                local_port=local)
    extra = ["user root"] if broker.reachable_by_broker(conf) else []
    b = broker.Broker(conf, extra=extra).start()
    res = {"connections": n, "ca_der_bytes": os.path.getsize(der)}
    try:
        deadline = time.monotonic() + 30  # start() saw one listener; wait for the TLS one
        while True:
            try:
                socket.create_connection(("127.0.0.1", tls_port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    return dict(res, FAILED="the broker's TLS listener never answered")
                time.sleep(0.05)
        for name, p, use_tls in (("plain", port, False), ("tls", tls_port, True)):
            # one client id and login per connection: the hall's rule (id = user)
            connects = [mqtt.connect_packet(c, c, creds[c]["password"], 60) for c in clocks]
            code = DRIVER % {"tls": use_tls, "ca": der, "port": p, "n": 1,
                             "connect": connects[0]}
            # the N connections, each its own login: the driver takes a list
            code = code.replace("connect = %r" % (connects[0],), "connects = %r" % (connects,))
            code = code.replace("s.write(connect)", "s.write(connects[i])")
            code = code.replace("range(1)", "range(%d)" % n).replace('"FIG", 1,', '"FIG", %d,' % n)
            out = subprocess.run([mpunix.binary(), "-X", "heapsize=4194304", "-c", code],
                                 capture_output=True, text=True, timeout=300,
                                 env={k: v for k, v in os.environ.items() if k != "MICROPYPATH"})
            line = [x for x in out.stdout.splitlines() if x.startswith("FIG ")]
            if out.returncode != 0 or not line:
                res[name] = {"FAILED": (out.stderr or out.stdout).strip()[-300:]}
                continue
            _f, k, gc_b, rss_b = line[0].split()
            res[name] = {"gc_bytes_per_connection": int(gc_b) // int(k),
                         "c_heap_bytes_per_connection": int(rss_b) // int(k)}
    finally:
        b.stop()
    if "FAILED" not in res.get("tls", {}) and "FAILED" not in res.get("plain", {}):
        res["tls_over_plain_c_heap_bytes"] = (res["tls"]["c_heap_bytes_per_connection"] -
                                              res["plain"]["c_heap_bytes_per_connection"])
        res["tls_over_plain_gc_bytes"] = (res["tls"]["gc_bytes_per_connection"] -
                                          res["plain"]["gc_bytes_per_connection"])
    return res


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    json.dump(measure(n), sys.stdout, indent=1)
    print()
