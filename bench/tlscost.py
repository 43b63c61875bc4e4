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
sys.path.insert(0, os.path.join(ROOT, "tests"))

from mqttrig import mp_opener  # noqa: E402

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


# The clock's own link (firmware netlink.py + mqtt.py, and tlslink.py on a TLS
# clock) in the unix port, connected to the broker: its live GC heap once up,
# the most its heap held (garbage included) while connecting, the handshake's
# passes and its longest one (the CPU time a pass of the loop is held for).
CLOCK = r"""
import gc, socket, time, micropython
def names():
    micropython.qstr_info()
from hallclock_fw import netlink
gc.collect()
names()
tls = %(tls)r
if tls:
    from hallclock_fw import tlslink
%(opener)s
link = netlink.NetLink(%(hall)r, "t0", "t0", %(pw)r, raw, time.ticks_ms, key=%(key)r,
                       hall_key=%(hall_key)r)
if tls:
    class Cfg:
        pass
    cfg = Cfg()
    cfg.net = {"tls_ca_file": %(ca)r, "broker": "127.0.0.1:%(port)d"}
    link.opener = tlslink.opener(cfg)(link.opener)
netlink.shed()
gc.collect()
base = gc.mem_alloc()
peak = base
passes = 0
longest = 0
t0 = time.ticks_ms()
while not link.connected() and time.ticks_diff(time.ticks_ms(), t0) < 20000:
    a = time.ticks_us()
    link.service(time.ticks_ms())
    d = time.ticks_diff(time.ticks_us(), a)
    longest = d if d > longest else longest
    m = gc.mem_alloc()
    peak = m if m > peak else peak
    passes += 1
    time.sleep_ms(1)
gc.collect()
print("CLOCK", int(link.connected()), gc.mem_alloc(), peak, passes, longest)
names()
link.close()
"""


def _qstrs(text):
    """n_qstr of each ``micropython.qstr_info()`` in ``text``, in order."""
    import re
    return [int(m) for m in re.findall(r"n_qstr=(\d+)", text)]


def clock_rows(folder, creds, hall, port, tls_port, der, runs=3):
    """The clock's link, plain MQTT and TLS, in the unix port (64-bit sizes;
    the 32-bit figure by the unix calibration's Wi-Fi ratio, heap32's)."""
    from hallclock.vboard import unixport as mpunix
    env = dict(os.environ, MICROPYPATH=".frozen:" + str(mpunix.device_tree()))
    c = creds["t0"]
    rows = {}
    for name, p, use_tls in (("plain", port, False), ("tls", tls_port, True)):
        got = []
        for _ in range(runs):
            code = CLOCK % {"tls": use_tls, "port": p, "opener": mp_opener(p), "hall": hall, "pw": c["password"],
                            "key": c["key"], "hall_key": c["hall_key"], "ca": der}
            out = subprocess.run([mpunix.binary(), "-X", "heapsize=1048576", "-c", code],
                                 capture_output=True, text=True, timeout=120, env=env)
            line = [x for x in out.stdout.splitlines() if x.startswith("CLOCK ")]
            q = _qstrs(out.stdout)
            if out.returncode != 0 or not line or line[0].split()[1] != "1" or len(q) < 2:
                rows[name] = {"FAILED": (out.stderr or out.stdout).strip()[-300:]}
                break
            _c, _up, live, peak, passes, longest = line[0].split()
            got.append((int(live), int(peak), int(passes), int(longest), q[1] - q[0]))
        if name in rows:
            continue
        rows[name] = {"live_after_connect_64": max(g[0] for g in got),
                      "peak_while_connecting_64": max(g[1] for g in got),
                      "passes_to_connect": max(g[2] for g in got),
                      "longest_pass_us": [g[3] for g in got],
                      "names_interned": max(g[4] for g in got)}
    return rows


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
        res["clock"] = clock_rows(folder, creds, "bench", port, tls_port, der)
    finally:
        b.stop()
    _clock_figures(res)
    if "FAILED" not in res.get("tls", {}) and "FAILED" not in res.get("plain", {}):
        res["tls_over_plain_c_heap_bytes"] = (res["tls"]["c_heap_bytes_per_connection"] -
                                              res["plain"]["c_heap_bytes_per_connection"])
        res["tls_over_plain_gc_bytes"] = (res["tls"]["gc_bytes_per_connection"] -
                                          res["plain"]["gc_bytes_per_connection"])
    return res


def _clock_figures(res):
    """The TLS clock against the 56 000-byte area: what TLS adds to the
    clock's live heap and its connect peak (64-bit, then 32-bit by the
    unix calibration's Wi-Fi ratio) on top of each Wi-Fi clock's peak in
    bench/results.json (heap32, the same tree's last run)."""
    rows = res.get("clock", {})
    if "FAILED" in rows.get("plain", {"FAILED": 1}) or "FAILED" in rows.get("tls", {"FAILED": 1}):
        res["clock_FAILED"] = "no clock row measured"
        return
    plain, tls = rows["plain"], rows["tls"]
    live64 = tls["live_after_connect_64"] - plain["live_after_connect_64"]
    peak64 = (tls["peak_while_connecting_64"] - tls["live_after_connect_64"]) - \
        (plain["peak_while_connecting_64"] - plain["live_after_connect_64"])
    out = {"tls_live_over_plain_64": live64, "tls_connect_garbage_over_plain_64": peak64,
           "tls_names_over_plain": tls["names_interned"] - plain["names_interned"]}
    try:
        with open(os.path.join(ROOT, "bench", "results.json")) as f:
            heap = json.load(f)["heap32"]
    except (OSError, KeyError, ValueError):
        res["clock"].update(out)
        return
    cal = heap.get("unix_calibration", {})
    for run in heap.get("runs", []):
        if run.get("link") != "wifi":
            continue
        mode = run["mode"]
        ratio = cal.get(mode + ":wifi", {}).get("ratio") or 1.38
        live32 = int(live64 / ratio)
        out[mode] = {"plain_peak_32": run["peak"], "tls_live_32": live32,
                     "tls_peak_32": run["peak"] + live32,
                     "tls_margin_32": 56000 - run["peak"] - live32}
    res["clock"].update(out)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    json.dump(measure(n), sys.stdout, indent=1)
    print()
