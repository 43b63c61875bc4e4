"""Attack C, the stolen clock's flood (docs/network.md "Replays and floods"):
with one clock's cfg (its password and key), fresh sealed link sessions --
a hello and a boot event each, every one with an echo a live clock could
give -- published as fast as a laptop on the hall's Wi-Fi can, paced to
``n`` messages in ``seconds``.  Raw MQTT on one socket (paho would be the
bottleneck, not the logger).  Used by tests/test_mqtt_attacks.py and
bench/netattack.py; prints one JSON line: what was offered, and when.

    python tests/mqttflood.py HOST PORT HALL CLOCK CREDENTIALS N SECONDS
"""
import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(HERE), "host"),
                os.path.join(os.path.dirname(HERE), "firmware")]

from hallclock_fw import mqtt, protocol, seal  # noqa: E402
from hallclock_fw.events import EV_BOOT  # noqa: E402
from hallclock_fw.netlink import topic  # noqa: E402


ECHO = hasattr(seal, "_MAX_SID")  # the clock's messages carry its echo


def messages(cred, clock, n):
    """``n`` sealed messages: fresh link sessions, a hello and a boot each."""
    mac = seal.Mac(seal.key_bytes(cred["key"]))
    out = []
    for i in range(0, n, 2):
        sid = os.urandom(4).hex()
        dsid = os.urandom(4).hex()
        # an echo of "now" (a tree whose clocks echo nothing: the session alone)
        link = "%s:%d" % (sid, time.time_ns() // 1_000_000 + i) if ECHO else sid
        out.append(seal.seal(mac, b"U", protocol.hello(dsid, clock, "scrabble", "1"), link, 1))
        out.append(seal.seal(mac, b"U", protocol.event(dsid, 1, 0, EV_BOOT, 0, 0, 0, 0,
                                                       "scrabble:"), link, 2))
    return out[:n]


def publish_packet(topic_name, payload):
    return mqtt._packet(0x30, mqtt._str(topic_name) + payload)


def flood(host, port, hall, clock, cred, n, seconds, started=None):
    """Connect as ``clock`` and publish ``n`` messages paced over ``seconds``;
    (messages offered, seconds taken)."""
    packets = [publish_packet(topic(hall, clock, "up").encode(), m)
               for m in messages(cred, clock, n)]
    s = socket.create_connection((host, port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(mqtt.connect_packet(clock, cred["user"], cred["password"], 60))
    ack = s.recv(4)
    if ack[:1] != b"\x20" or ack[3:4] != b"\x00":
        raise SystemExit("the broker refused the flood's connection: %r" % ack)
    t0 = time.monotonic()
    if started is not None:
        started()
    sent = 0
    batch = max(1, int(n / (seconds * 100)))  # a hundred batches a second
    while sent < n:
        chunk = packets[sent:sent + batch]
        s.sendall(b"".join(chunk))
        sent += len(chunk)
        ahead = t0 + seconds * sent / n - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    took = time.monotonic() - t0
    s.sendall(b"\xe0\x00")  # DISCONNECT
    s.close()
    return sent, took


def main(argv):
    host, port, hall, clock, cred_file, n, seconds = argv
    with open(cred_file, encoding="utf-8") as f:
        cred = json.load(f)[clock]
    sent, took = flood(host, int(port), hall, clock, cred, int(n), float(seconds),
                       started=lambda: print(json.dumps({"started": True}), flush=True))
    print(json.dumps({"sent": sent, "seconds": round(took, 2)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
