"""TLS to the hall's broker, for a clock whose hallclock.cfg asks for it
(``tls_ca_file = hallclock.ca``, docs/network.md "TLS on the clock").

Imported only on such a clock, by its dotted name in a string
(hw/esp32rare.use_network; the unix port's network clock, vdev/netpump.py): a plain Wi-Fi clock loads
none of this code and interns none of its names (docs/micropython.md).

``opener(cfg)`` reads the hall's CA (DER: ``deploy`` puts it on the board
as hallclock.ca) and pins it in one SSLContext of MicroPython's ``tls``
(the module its ``ssl`` wraps; PROTOCOL_TLS_CLIENT, CERT_REQUIRED); a file
missing or not a certificate refuses the cfg (CFG10).  It returns ``wrap(open_raw)``: the NetLink's opener (a non-blocking TCP
socket connecting to the broker) wrapped so that each socket it opens comes
back as a :class:`Tls`, whose handshake checks that the broker's
certificate is signed by that CA and names the broker's address
(``server_hostname``).

The handshake never waits for the network: mbedTLS is handed the socket
only once its TCP connect has finished (a poll with 0 ms), without a
handshake on connect; from then on each ``send``/``recv`` of the MQTT
client (a pass of the loop, when the broker's bytes came) takes the
handshake as far as the bytes that came allow and says EAGAIN until it is
done.  What one such call still holds the loop for is the arithmetic of
the step the bytes allow (the certificate checked, the key exchange: no
restartable ECC in MicroPython's mbedTLS), about a second on a board
(docs/network.md "TLS on the clock").  So a (re)connect waits for a calm
moment of the clock (``_minded_clock``): no deadline of the core, no
signal edge and no button settling within _QUIET_MS, and, while a
player's time runs (Scrabble, backgammon), only just after a press (the
next one is a move away); until then the opener says False (not now: no
failure, no backoff).
"""
import io
import select
import sys

try:  # MicroPython: the module its ssl wraps (that Python layer: 1 KB of heap saved)
    import tls as ssl
except ImportError:  # CPython (the host's tests): its own ssl
    import ssl

from micropython import const

from .core.timing import earliest, ticks_diff
from .events import NULL

_EAGAIN = const(11)
_QUIET_MS = const(2000)  # a board's handshake pass (about 1 s, docs/network.md) fits twice
_PRESSED_MS = const(1000)  # while a player's time runs, a handshake starts only this soon after a press
_POLL = const(3)  # MP_STREAM_POLL: the ioctl select.poll asks
# why a TLS connection ended, as an errno no socket gives (the link's ``why``
# detail: whytext.py has the words): the broker's certificate refused (not
# signed by the pinned CA, or not naming the broker's address); TLS failed
_E_REFUSED = const(1001)
_E_TLS = const(1002)
_C_TLS = const(10)  # hallclock.cfg refused: no CA to pin (hw/config.py's codes)
_TLS_CA = const("tls_ca_file")  # hallclock.cfg's key (hw/config.py)


# (app_of, ticks): the clock whose deadlines a handshake step must not hold up, its
# App (``app_of()``) and tick source; set by hw/boot.py (the unix port: vdev/netpump.py)
_minded_clock = None


def _calm(start):
    """True when a handshake step may hold the loop now (see the module);
    ``start``: its first (the opener), which waits for a press as well."""
    if _minded_clock is None:  # no clock minded (a test of the link alone)
        return True
    app = _minded_clock[0]()
    now = _minded_clock[1]()
    core = app.core
    buttons = app.panel.buttons
    due = earliest(now, earliest(now, core.next_deadline(now), app.panel.next_deadline(now)),
                   buttons.next_deadline(now))
    if due is not None and ticks_diff(due, now) < _QUIET_MS:
        return False
    # a player's time runs: the next press may come any moment but just after one (a
    # countdown no player's press ends, the duplicate's, has only its deadlines)
    return not (start and core.running() and core.player != NULL) or \
        ticks_diff(now, buttons.when) < _PRESSED_MS


def opener(cfg):
    """``wrap(open_raw)`` for the broker of ``cfg.net`` (hw/config.py; its
    certificate must name the broker's host), the CA in the file its
    ``tls_ca_file`` names pinned; None when there is no CA to pin (the file
    missing, or not a certificate in DER): then the cfg is refused as a bad
    one (``cfg.error``, ``cfg.code`` 10, ``cfg.net`` None: the clock stays
    on USB, and says CFG10)."""
    net = cfg.net
    ca_file = net[_TLS_CA]
    try:
        f = open(ca_file, "rb")
        try:
            der = f.read()
        finally:
            f.close()
        if der[:1] != b"\x30":  # DER: a SEQUENCE (a PEM file, or anything else, is not)
            raise ValueError
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.verify_mode = ssl.CERT_REQUIRED  # pyright: ignore[reportAttributeAccessIssue]
        if sys.implementation.name == "micropython":  # mbedTLS parses it: ValueError if not
            ctx.load_verify_locations(der)
        else:
            ctx.load_verify_locations(cadata=der)
    except (OSError, ValueError):
        cfg.error = "hallclock.cfg: tls_ca_file %s: no CA to pin (CFG%d)" % (ca_file, _C_TLS)
        cfg.code = _C_TLS
        cfg.net = None
        return None
    host = net["broker"].rpartition(":")[0]
    def wrap(open_raw):  # -> the link's opener: each socket it opens, as a Tls (False: not now)
        from .forget import forget
        forget(__name__, "opener")  # the link's one opener is built: reading the CA is boot-only
        return lambda now: _tls(ctx, host, open_raw(now)) if _calm(True) else False
    return wrap


def _tls(ctx, host, raw):
    return None if raw is None else Tls(ctx, host, raw)  # None: Wi-Fi not joined yet


class Tls(io.IOBase):
    """A non-blocking TLS socket to the broker with the plain socket's
    ``send``/``recv``/``close`` (EAGAIN while the TCP connect or the handshake
    goes on), and ``select.poll``-able (its ``ioctl``): the raw socket until
    the handshake is done, then the TLS socket (which counts the bytes it has
    decrypted and not handed out yet)."""

    def __init__(self, ctx, host, raw):
        self.ctx = ctx
        self.host = host
        self.raw = raw
        self.tls = None
        self.up = False  # the handshake is done
        self.poller = select.poll()
        self.poller.register(raw, select.POLLOUT)

    def _io(self, send, arg):
        """``send(arg)`` or ``recv(arg)``, the handshake taken a step on the way."""
        if not self.up and not _calm(False):  # a deadline came near: the step waits for it
            raise OSError(_EAGAIN)
        if self.tls is None:  # TCP connected (or failed: the first send says so)?
            if not self.ioctl(_POLL, select.POLLOUT):
                raise OSError(_EAGAIN)
            self.tls = self.ctx.wrap_socket(self.raw, server_hostname=self.host,
                                            do_handshake_on_connect=False)
        try:
            got = self.tls.send(arg) if send else self.tls.recv(arg)
        except ValueError:  # mbedTLS refused the broker's certificate
            raise OSError(_E_REFUSED)
        except OSError as e:  # EAGAIN and socket errors as they are; mbedTLS's: TLS failed
            raise OSError(e.args[0] if 0 < e.args[0] < 200 else _E_TLS)
        if got and not self.up:
            self.up = True
            self.poller.unregister(self.raw)
            self.poller.register(self.tls)
        return got

    def send(self, data):
        return self._io(True, data)

    def recv(self, n):
        return self._io(False, n)

    def ioctl(self, req, arg):
        """select.poll's question (``arg``: the events asked): connecting, any
        event of the raw socket (connected: time to wrap, it wakes the loop);
        in the handshake, the raw socket's; after it, the TLS socket's."""
        if req != _POLL:  # (the unix port asks for a file number first: none)
            return -1
        if self.tls is not None:
            self.poller.modify(self.tls if self.up else self.raw, arg)
        for _obj, ev in self.poller.ipoll(0):
            return ev
        return 0

    def close(self):
        (self.tls or self.raw).close()
