"""The clock's Wi-Fi: the only module that imports ``network``.

``link(net, clock, ticks_ms)`` builds the hall-network link from the
``hallclock.cfg`` keys (``net``: wifi_ssid, wifi_password, broker, hall, user,
password; see hw/config.py): the pure :class:`~hallclock_fw.netlink.NetLink`
with an ``opener`` that joins the Wi-Fi (``WLAN.connect`` returns at once; we
only look at ``isconnected()`` and retry with backoff) and opens a
non-blocking socket to the broker, plus the loop's sleep on that socket.

Nothing here waits for the network: ``connect`` starts the association and
returns, the socket is non-blocking and its ``connect`` returns EINPROGRESS.
The broker is best given as an IP address (the laptop's fixed address on the
hall network): a host name would need a DNS lookup, which blocks.
"""
import select
import socket

import network
from micropython import const

try:  # for the type checker's annotations only (MicroPython has no typing)
    from typing import Any
except ImportError:
    pass

from ..core.timing import ticks_add, ticks_diff
from ..netlink import NetLink, shed

_JOIN_RETRY_MS = const(10000)  # ask the access point again this often while not joined
_SLICE_MS = const(5)


class WifiLink(NetLink):
    """The NetLink on the ESP32's Wi-Fi: its ``opener`` joins the access point
    (without waiting: ``WLAN.connect`` returns at once, ``isconnected`` is
    looked at, the join asked again every _JOIN_RETRY_MS) and opens a
    non-blocking socket to the broker; ``wait`` sleeps on that socket."""

    # the attributes _build sets (for the type checker; no code on the board)
    wlan: "Any"
    join: tuple
    host: tuple
    poller: "Any"
    ipoll: "Any"

    def __init__(self, *args, **kw):
        # the work is _build's: a module function, which link() drops once built
        _build(self, *args, **kw)

    def _open(self, now):
        """A socket connecting to the broker, or None while not joined."""
        wlan = self.wlan
        if not wlan.isconnected():
            if ticks_diff(now, self.next_join) >= 0:
                self.next_join = ticks_add(now, _JOIN_RETRY_MS)
                try:
                    wlan.disconnect()
                except OSError:
                    pass
                wlan.connect(self.join[0], self.join[1])
            return None
        if self.addr is None:
            self.addr = socket.getaddrinfo(self.host[0], self.host[1])[0][-1]
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(self.addr)
        except OSError as e:
            if e.args[0] != 115 and e.args[0] != 119 and e.args[0] != 11:  # EINPROGRESS
                s.close()
                raise
        return s

    def service(self, now):
        """The NetLink's work, and: the Wi-Fi dropped under an open socket
        -> close it and reconnect with backoff (a TCP socket would only notice
        at the keepalive, 15 s later)."""
        if self.client.sock is not None and not self.wlan.isconnected():
            self.drop(now)
        NetLink.service(self, now)

    def _watch(self, sock):
        if sock is not self.polled:
            if self.polled is not None:
                try:
                    self.poller.unregister(self.polled)
                except (OSError, KeyError):
                    pass
            self.polled = sock
            if sock is not None:
                self.poller.register(sock, select.POLLIN)

    def _readable(self, sock):
        self._watch(sock)
        for _ in self.ipoll(0):
            return True
        return False

    def wait(self, ms):
        """Sleep up to ``ms``; True as soon as the broker sent something."""
        sock = self.client.sock
        self._watch(sock)
        if sock is None:
            self.poller.poll(ms if ms < _SLICE_MS else _SLICE_MS)
            return False
        for _ in self.ipoll(ms):
            return True
        return False


def link(net, clock, ticks_ms, opener=None):
    """The board's link on Wi-Fi (``ESP32.use_network``; ``opener``: TLS's
    wrapper of the link's opener, tlslink.opener's); once built, the
    serial link's class and the code that only built this link are dropped
    (here, so a serial clock does not carry that code: docs/micropython.md
    "Boot-only code")."""
    from ..forget import forget
    from . import cfgsave
    saved = cfgsave.load_counter(cfgsave.BoardFiles())  # no START older than the last taken
    del cfgsave
    forget("hallclock_fw.hw.cfgsave", always=True)
    wifi = WifiLink(net, clock, ticks_ms, saved, _keep_signal)
    if opener is not None:  # TLS to the broker (hw/esp32rare.use_network)
        wifi.opener = opener(wifi.opener)
    forget("hallclock_fw.hw.esp32", "StdioLink")
    # the one link is built: the code that built it goes (netlink.shed)
    forget(__name__, "link", "_build")
    shed()
    return wifi


def _keep_signal(ctr):
    """The referee's signal counter the link took, into flash (a few a round),
    with the cfg's power-cut-safe save; the module only for the save."""
    from ..forget import forget
    from . import cfgsave
    cfgsave.save_counter(cfgsave.BoardFiles(), ctr)
    del cfgsave
    forget("hallclock_fw.hw.cfgsave", always=True)


def _build(self, net, clock, ticks, all_ctr=0, keep=None):
    """``WifiLink(...)``'s work (see the class; ``net``: hw/config.py's keys)."""
    NetLink.__init__(self, net["hall"], clock, net["user"], net["password"], self._open, ticks,
                     key=net["key"], hall_key=net["hall_key"], all_ctr=all_ctr, keep=keep)
    self.wlan = network.WLAN(network.STA_IF)
    self.wlan.active(True)
    self.join = (net["wifi_ssid"], net["wifi_password"])
    self.next_join = ticks()
    host, _, port = net["broker"].rpartition(":")
    self.host = (host, int(port))
    self.addr = None
    self.poller = select.poll()
    # ipoll: allocation-free on MicroPython (CPython, in the tests, has only poll)
    self.ipoll = getattr(self.poller, "ipoll", self.poller.poll)
    self.polled = None
    # no recv (and no EAGAIN) when nothing came
    self.client.readable = self._readable  # pyright: ignore[reportAttributeAccessIssue]
