"""The host's side of the hall network: a paho-mqtt connection to the hall's
broker, and the logger over it (docs/network.md).

One frame per MQTT message, QoS 0, the same frames as on the serial line:
each clock's ``hallclock/<hall>/<clock>/up`` messages go into that clock's own
:class:`~hallclock.link.hostlink.HostLink` (exactly as a serial port's bytes do),
and whatever the HostLink sends (acks after the fsync, resend requests,
``W``, restores) is published on that clock's ``down`` topic.  The log is
the serial log: the host cannot tell a clock on Wi-Fi from one on a cable.

paho runs its network loop in its own thread (with reconnects); messages are
handed to the logger's thread through a queue and a pipe the logger's poller
watches, so the logger stays one loop with one fsync per pass.
"""
import collections
import contextlib
import os
import select
import socket
import ssl
import sys
import threading
import time

from hallclock_fw import protocol
from .. import hostframes
from hallclock_fw.netlink import topic

from .broker import clocks_of, load_credentials
from ..errors import BadInput, HallclockError, LinkError, shown
from ..link.hostlink import HostLink, Session
from ..link.logfile import LogWriter
from ..link.logger import LINGER_MAX_S, LINGER_S, TIMERS_S, Logger
from .seal import ClockSeal, clock_mac, require_keys, seal_all
from ..link.transport import close_fds

CONNECT_WAIT_S = 10.0
KEEPALIVE_S = 15
# one clock's messages a logger pass takes at most: the rest wait for the
# next pass, so one clock's flood cannot hold another's ack (docs/network.md)
PASS_SHARE = 64
PUMP_READS = 16  # socket chunks an inline pass reads at most (what a flood sends meanwhile)
TOPIC_NAMES_MAX = 4096  # topics whose decoded names are kept
TOPIC_QUEUE_MAX = 4096  # messages of one topic held at most; beyond, dropped and counted
RECV_CHUNK = 65536  # bytes taken from the broker's socket per recv (many messages)
RECONNECT_MIN_S = 0.1
GATHER_S = 0.001  # the logger: a lone message waits this long for the rest of its step
MISC_S = 0.1  # inline: paho's keepalive work at most this often (its keepalive is KEEPALIVE_S)
RECONNECT_MAX_S = 2.0
SHIP_DRAIN_S = 5.0  # a logger ending waits this long for the office to have its whole log
_CLIENT = []  # the paho Client subclass, made once paho is imported


class _Sent:
    """The message info paho's writer marks once a batch of publishes is out
    (nobody waits on a batch: QoS 0)."""

    def _set_as_published(self):
        pass


_SENT = _Sent()


def _paho():
    import paho.mqtt.client as mqtt
    return mqtt


def _client_class():
    """paho's Client, reading the socket in chunks: paho asks the socket for
    a message's first byte, then its length byte by byte, then the rest
    (three or more recv calls a message); this one takes what the socket
    holds in one recv and serves paho from it."""
    if _CLIENT:
        return _CLIENT[0]
    mqtt = _paho()

    class Client(mqtt.Client):
        _rbuf = b""
        _rpos = 0
        drained = False  # the last recv emptied the socket (plain TCP)

        def _fill(self):
            """What the socket holds, up to RECV_CHUNK, as the buffer (b"":
            the broker closed the connection)."""
            buf = mqtt.Client._sock_recv(self, RECV_CHUNK)
            if buf:
                self._rbuf, self._rpos = buf, 0
                self.drained = len(buf) < RECV_CHUNK  # a short read took all it held
            return buf

        def _sock_recv(self, bufsize):
            if self._rpos >= len(self._rbuf) and not self._fill():
                return b""  # the broker closed the connection
            buf, pos = self._rbuf, self._rpos
            end = pos + bufsize
            self._rpos = end
            return buf[pos:end]

        def _sock_close(self):
            self._rbuf, self._rpos = b"", 0  # a new connection starts clean
            mqtt.Client._sock_close(self)

        def buffered(self):
            """Bytes read from the socket that paho has not taken yet."""
            return max(0, len(self._rbuf) - self._rpos)

        on_raw = None  # on_raw(topic bytes, payload bytes): QoS 0 without paho's message

        def _packet_read(self):
            # every whole QoS 0 PUBLISH already read, taken in one loop (paho's
            # reader costs some 40 us a message: a flood from one clock would
            # hold the broker's stream, every clock's messages behind it);
            # anything else, or a packet not all here yet, is paho's
            if self.on_raw is None or self._in_packet["command"] != 0:
                return mqtt.Client._packet_read(self)
            if self._rpos >= len(self._rbuf):
                # nothing read yet: the socket's chunk here, so that a message
                # arriving alone (most at a player's pace) is taken here too
                try:
                    if not self._fill():
                        return mqtt.MQTTErrorCode.MQTT_ERR_CONN_LOST
                except BlockingIOError:
                    return mqtt.MQTTErrorCode.MQTT_ERR_AGAIN
                except OSError:  # reset, timeout, no socket: as paho's reader says it
                    return mqtt.MQTTErrorCode.MQTT_ERR_CONN_LOST
            buf, pos = self._rbuf, self._rpos
            end = len(buf)
            took = False
            while pos < end and buf[pos] & 0xF6 == 0x30:
                i, n, shift, whole = pos + 1, 0, 0, False
                while i < end and shift <= 21:
                    b = buf[i]
                    i += 1
                    n |= (b & 127) << shift
                    if not b & 128:
                        whole = True
                        break
                    shift += 7
                if not whole or n < 2 or i + n > end:
                    break
                tl = (buf[i] << 8) | buf[i + 1]
                if 2 + tl > n:
                    break  # malformed: paho's to judge
                self.on_raw(buf[i + 2:i + 2 + tl], buf[i + 2 + tl:i + n])
                pos = i + n
                took = True
            if not took:
                return mqtt.Client._packet_read(self)
            self._rpos = pos
            self._last_bytes_received = time.monotonic()
            return mqtt.MQTTErrorCode.MQTT_ERR_SUCCESS

        def _handle_publish(self):
            # a QoS 0 PUBLISH (all the hall's traffic) straight to the queue:
            # paho's message object, log line and callback matching cost a
            # flood's every message more than the logger's whole check
            packet = self._in_packet["packet"]
            if self.on_raw is not None and not self._in_packet["command"] & 0x06 \
                    and len(packet) >= 2:
                n = (packet[0] << 8) | packet[1]
                if 2 + n <= len(packet):
                    self.on_raw(bytes(packet[2:2 + n]), bytes(packet[2 + n:]))
                    return mqtt.MQTTErrorCode.MQTT_ERR_SUCCESS
            return mqtt.Client._handle_publish(self)
    _CLIENT.append(Client)
    return Client


class BrokerClient:
    """A paho client as one of the hall's host clients (logger, referee,
    viewer).  ``messages()`` takes what arrived on ``subscribe`` topics;
    ``fileno()`` is readable while messages wait.

    ``inline``: no network thread; ``wait`` runs paho's network work in the
    caller's loop (read, write, keepalive, reconnect with backoff), so the
    logger is one thread: no pipe per message, no wake-up of another thread
    per ack, no lock handed back and forth (docs/benchmarks.md).  The caller
    must call ``wait`` often (well within KEEPALIVE_S)."""

    def __init__(self, address, creds, subscribe=(), tls=None, client_id=None,
                 inline=False):
        mqtt = _paho()
        self.host, self.port = address
        self.user = creds["user"]
        self.inline = inline
        self.retry_at = 0.0  # inline: the next reconnect attempt (monotonic)
        self.retry_s = RECONNECT_MIN_S
        self.stopped = False
        cid = client_id or "%s-%s" % (self.user, os.urandom(3).hex())
        self.client = _client_class()(mqtt.CallbackAPIVersion.VERSION2, client_id=cid,
                                  protocol=mqtt.MQTTv311, clean_session=True)
        self.client.username_pw_set(creds["user"], creds["password"])
        if tls is not None:
            self.client.tls_set(ca_certs=tls, tls_version=ssl.PROTOCOL_TLS_CLIENT)
        self.client.reconnect_delay_set(min_delay=RECONNECT_MIN_S, max_delay=RECONNECT_MAX_S)
        self.subscribe = list(subscribe)
        self.fifo = collections.deque()  # (topic, payload) not yet taken, as they came
        self.held = {}  # topic -> how many of its messages the fifo holds
        self.lock = threading.Lock()  # the fifo between paho's thread and the reader
        self.overflow = 0  # messages dropped: their topic's queue was full (a flood)
        self.rfd, self.wfd = os.pipe()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        self.connected = threading.Event()
        self.refused = None  # reason text when the broker refused us
        self.connects = 0
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self.client.on_raw = self._on_raw
        self.names = {}  # topic bytes -> its name (str), decoded once
        self.batch = None  # inside batched(): the PUBLISH packets waiting to go
        self.heads = {}  # topic name -> its length and bytes, as a PUBLISH carries them
        self.misc_at = 0.0  # inline: paho's keepalive work is due (monotonic)
        self.gather_s = 0.0  # inline: a lone message waits this long for company (GATHER_S)
        self.client.on_subscribe = self._on_subscribe

    def _on_connect(self, client, _userdata, _flags, rc, _props):
        if rc.is_failure:
            self.refused = str(rc)
            self.connected.set()
            client.disconnect()
            return
        self.connects += 1
        self.retry_s = RECONNECT_MIN_S
        sock = client.socket()
        if sock is not None:  # each ack leaves at once, not after Nagle's wait for the last one
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except (OSError, AttributeError):
                pass
        if self.subscribe:
            client.subscribe([(t, 0) for t in self.subscribe])
        else:
            self.connected.set()

    @contextlib.contextmanager
    def batched(self):
        """Publishes inside leave together, in one send when they are done
        (one PUBLISH packet after another, in order): a pass's acks were each
        paho's message object, a send, and a segment and wake-up of the broker."""
        outer = self.begin_batch()
        try:
            yield
        finally:
            if outer:
                self.send_batch()

    def begin_batch(self):
        """Publishes from now on wait for send_batch (True), or they already
        did: an outer batch sends them (False)."""
        if self.batch is not None:
            return False
        self.batch = bytearray()
        return True

    def send_batch(self):
        out, self.batch = self.batch, None
        if out:
            self._send_packets(bytes(out))

    def _send_packets(self, packets):
        """Whole PUBLISH packets (QoS 0) through paho's queue, after what it
        holds: one send, the rest (a full socket) left to paho's writer.  With
        no connection they are dropped, as paho drops a QoS 0 publish (the
        clock asks again)."""
        c = self.client
        sock = c.socket()
        if sock is None:
            return
        if not c._out_packet:  # nothing of paho's waits: straight out, paho takes the rest
            try:
                n = sock.send(packets)
            except OSError:  # it would block, or the link broke: paho's writer says which
                n = 0
            if n >= len(packets):
                return
            packets = packets[n:]
        c._packet_queue(_paho().PUBLISH, packets, 0, 0, _SENT)

    def _on_subscribe(self, _client, _userdata, _mid, codes, _props):
        if any(c.is_failure for c in codes):
            self.refused = "subscription refused"
        self.connected.set()  # the first connection is ready once subscribed

    def _on_disconnect(self, *_args):
        pass

    def _on_raw(self, topic_bytes, payload):
        name = self.names.get(topic_bytes)
        if name is None:
            try:
                name = topic_bytes.decode()
            except UnicodeDecodeError:
                return  # no topic of ours
            if len(self.names) < TOPIC_NAMES_MAX:
                self.names[bytes(topic_bytes)] = name
        self._queue(name, payload)

    def _on_message(self, _client, _userdata, msg):
        self._queue(msg.topic, msg.payload)

    def _queue(self, name, payload):
        with self.lock:
            n = self.held.get(name, 0)
            if n >= TOPIC_QUEUE_MAX:
                self.overflow += 1  # one topic's flood holds bounded memory
                return
            self.held[name] = n + 1
            # the reader takes the rest with the first (wait: pending); inline,
            # the reader is this thread
            wake = not self.fifo and not self.inline
            self.fifo.append((name, payload))
        if wake:
            try:
                os.write(self.wfd, b"x")
            except BlockingIOError:
                pass  # the pipe is full: the reader is woken anyway

    def start(self):
        try:
            self.client.connect(self.host, self.port, keepalive=KEEPALIVE_S)
        except (OSError, ValueError) as exc:
            raise BadInput(f"cannot reach the broker at {self.host}:{self.port}: {exc}. "
                           "Is 'hallclock broker' running there?") from None
        if self.inline:
            deadline = time.monotonic() + CONNECT_WAIT_S
            while not self.connected.is_set() and time.monotonic() < deadline:
                self._pump(0.05)
        else:
            self.client.loop_start()
        if not self.connected.wait(0 if self.inline else CONNECT_WAIT_S):
            self.stop()
            raise LinkError(f"the broker at {self.host}:{self.port} did not answer "
                            f"within {CONNECT_WAIT_S:.0f} s")
        if self.refused is not None:
            self.stop()
            raise BadInput(f"the broker at {self.host}:{self.port} refused {self.user!r}: "
                           f"{self.refused}. Check --credentials (the file broker-config "
                           "wrote for this broker)")
        return self

    def fileno(self):
        return self.rfd

    def messages(self, share=None):
        """(topic, payload) of what arrived; with ``share``, at most that many
        of each topic (each topic served in turn, the rest kept)."""
        if not self.inline:
            try:
                while os.read(self.rfd, 4096):
                    pass
            except BlockingIOError:
                pass
        with self.lock:
            fifo = self.fifo
            if share is None or len(fifo) <= share:  # (no topic can be over its share)
                out = list(fifo)
                fifo.clear()
                self.held.clear()
                return out
            # in the order they came, at most ``share`` of each topic; the rest
            # stays, in its order, ahead of what comes next
            out = []
            rest = collections.deque()
            taken = {}
            held = self.held
            for item in fifo:
                name = item[0]
                k = taken.get(name, 0)
                if k < share:
                    taken[name] = k + 1
                    held[name] -= 1
                    out.append(item)
                else:
                    rest.append(item)
            self.fifo = rest
            return out

    def pending(self):
        return bool(self.fifo)

    def wait(self, timeout):
        if self.inline:
            was = len(self.fifo)
            self._pump(0.0 if was else timeout)
            if self.gather_s and not was and len(self.fifo) == 1:
                # a message alone: the rest of its clock's step (a press is two
                # events, two messages) is most often right behind it; waited
                # for this long, both share one pass: one fsync, one ack
                self._pump(self.gather_s)
            return self.pending()
        if self.pending():
            return True
        return bool(select.select([self.rfd], [], [], timeout)[0])

    def _pump(self, timeout):
        """Inline: paho's network work, waiting up to ``timeout`` for the
        broker's bytes; every message already read is taken."""
        c = self.client
        sock = c.socket()
        if sock is None:
            self._reconnect(timeout)
            return
        tls = hasattr(sock, "pending")
        buffered = c._rpos < len(c._rbuf)
        if buffered or (tls and sock.pending()):
            timeout = 0.0
        try:
            ready, writable, _ = select.select([sock], [sock] if c._out_packet else [], [],
                                               timeout)
        except (OSError, ValueError):
            ready, writable = [sock], []  # paho finds out what is wrong with it
        rc = 0
        if ready or buffered:
            c.drained = False  # (said only by a recv of this pass)
            rc = c.loop_read()
            reads = 1
            # what the socket holds now, up to PUMP_READS chunks: a logger that
            # read one chunk a pass fell behind one clock's flood, and every
            # other clock's messages queued behind it in the broker's stream
            # (a plain socket's short read emptied it: no poll to learn so)
            while not rc and c._sock is not None:
                if c._rpos >= len(c._rbuf):
                    if reads >= PUMP_READS or (c.drained and not tls) \
                            or not select.select([sock], [], [], 0)[0]:
                        break
                    reads += 1
                rc = c.loop_read()
        if not rc and writable:
            rc = c.loop_write()
        if not rc:
            now = time.monotonic()
            if now >= self.misc_at:  # keepalive's work: its 15 s need no look every pass
                self.misc_at = now + MISC_S
                rc = c.loop_misc()
        if rc and c.socket() is None:
            self.retry_at = time.monotonic() + self.retry_s

    def _reconnect(self, timeout):
        """Inline, no connection: try again once the backoff has passed."""
        now = time.monotonic()
        if self.stopped or self.refused is not None or now < self.retry_at:
            time.sleep(max(0.0, min(timeout, self.retry_at - now)))
            return
        self.retry_s = min(self.retry_s * 2, RECONNECT_MAX_S)
        self.retry_at = now + self.retry_s
        try:
            self.client.reconnect()
        except (OSError, ValueError):
            pass

    def publish(self, topic_name, payload):
        if self.batch is None:
            self.client.publish(topic_name, payload, qos=0)
            return
        c = self.client
        head = self.heads.get(topic_name)
        if head is None:  # the topic's length and bytes, made once a topic
            head = bytearray()
            c._pack_str16(head, topic_name)
            self.heads[topic_name] = head = bytes(head)
        out = self.batch
        out.append(0x30)  # PUBLISH, QoS 0, no retain
        c._pack_remaining_length(out, len(head) + len(payload))  # paho's own encoding
        out += head
        out += payload

    def stop(self):
        self.stopped = True
        try:
            self.client.disconnect()
        except Exception:
            pass
        if not self.inline:
            self.client.loop_stop()
        close_fds(self.rfd, self.wfd)
        self.rfd = self.wfd = -1


class ClockTopic:
    """What the live view asks of a port, for one clock on the broker."""

    def __init__(self, hall, clock):
        self.clock = clock
        self.path = topic(hall, clock, "up")
        self.state = "waiting"  # until the clock is heard; "lost" on its last will
        self.reconnects = 0
        self.ser = None
        self.write = None  # set by the logger: publish to the clock's down topic


LOST = protocol.lost()  # a clock's MQTT last will (hallclock_fw/netlink.py)


def _clock_of(hall, topic_name):
    parts = topic_name.split("/")
    if len(parts) == 4 and parts[0] == "hallclock" and parts[1] == hall and parts[3] == "up":
        return parts[2]
    return None


def claims_other_clock(clock, payload):
    """True for a hello whose clock name is not the topic's: a clock may only
    speak for itself (the broker lets it publish only on its own topic).
    Only a hello is parsed: an event names no clock, and checking every
    event twice was a large part of the logger's CPU (docs/benchmarks.md)."""
    if not payload.startswith(b"H"):
        return False
    tokens = protocol.check(protocol.unframe(payload))
    return tokens is not None and tokens[0] == "H" and tokens[2] != clock


class MemoryWriter(LogWriter):
    """A log kept in memory (the viewer's): the same records, no file."""

    def __init__(self, name):
        LogWriter.__init__(self, os.devnull, lock=False)
        self.path = name
        self.records = []

    def flush(self):
        n = len(self.pending)
        if n:
            self.records.extend(self.pending_records)
            self.count += n
            self.flushes += 1
            del self.pending[:]
            del self.pending_records[:]
        return n

    def session_records(self, clock, session):
        self.flush()
        return [r for r in self.records if r.get("clock") == clock and r.get("session") == session]


class BrokerLogger(Logger):
    """``hallclock log --broker``: every clock of the hall into one log.  The
    same HostLink per clock as per serial port, so the same records.

    With ``user="viewer"`` (``out`` None) it is a read-only record source for
    the live view and the hall display on another laptop: the records go to
    a :class:`MemoryWriter`, nothing is sent (the broker lets a viewer publish
    nothing), and a session heard mid-way is taken up from the event heard
    (a viewer cannot ask for the past: start it before the round)."""

    def __init__(self, address, hall, credentials, out, clocks=None, restore=None,
                 tls=None, user="logger"):
        creds = load_credentials(credentials, user)
        self.creds = creds
        self.viewer = out is None
        if self.viewer:
            self.writer = MemoryWriter(f"broker {address[0]}:{address[1]} hall {hall}")
        else:
            folder = os.path.dirname(os.path.abspath(out))
            if not os.path.isdir(folder):
                raise BadInput(f"{out}: the folder {folder} does not exist")
            self.writer = LogWriter(out)
        self.hall = hall
        self.expect = list(clocks) if clocks else clocks_of(creds)
        self.restore = restore
        # the logger's loop runs the network itself (no thread): what it costs
        # a message is the serial logger's (docs/benchmarks.md)
        # a hall bridged to the office (broker-config --office): its log is shipped there
        # as it is stored (hallclock.net.ship), and the office's acknowledgements heard
        self.shipper = None
        topics = [topic(hall, "+", "up")]
        if not self.viewer and creds[user].get("office"):
            from .ship import Shipper, ack_topic
            self.shipper = Shipper(self.writer.path, hall, self._publish_log,
                                   lambda: self.writer.good,
                                   say=lambda text: print(shown(text), file=sys.stderr,
                                                          flush=True))
            self.ack_name = ack_topic(hall)
            topics.append(self.ack_name)
        self.net = BrokerClient(address, creds[user], topics, tls=tls, inline=True)
        if not self.viewer:  # (a viewer stores nothing: nothing to share)
            self.net.gather_s = GATHER_S
        self.ports = []
        self.links = []
        self.seals = []  # per clock: its sealed frames (hallclock.net.seal)
        self.index = {}
        for c in self.expect:
            self._add(c)
        self.next_timers = 0.0
        self.clock_of = {}  # topic name -> its clock (None: no clock's up topic)
        self.foreign = 0  # hellos naming another clock than their topic
        # a full disk, as the serial logger meets it (Logger._say_disk, disk_problem)
        self.disk_said = None
        self.say = lambda text: print(shown(text), file=sys.stderr, flush=True)
        self.unstored = 0  # records still only in memory when the logger closed

    def _add(self, clock):
        down = topic(self.hall, clock, "down")
        # a viewer checks the seal where its credentials hold the clock's key
        # (the laptop's credentials.json); a viewer-only file holds none: shape only
        keyed = not self.viewer or "key" in self.creds.get(clock, {})
        # the logger challenges a link session before it takes it; a viewer may not write
        sealed = ClockSeal(clock_mac(self.creds, clock) if keyed else None,
                           send=None if self.viewer else
                           (lambda message, t=down: self.net.publish(t, message)))

        def send(data, t=down):
            if self.viewer:
                return  # a viewer sends nothing (the broker would drop it anyway)
            for message in sealed.seal_down(data):
                self.net.publish(t, message)
        link = HostLink(self.writer, send, clock, restore=self.restore, table=clock)
        self.seals.append(sealed)
        self.index[clock] = len(self.links)
        port = ClockTopic(self.hall, clock)
        port.write = link.send  # what the hall relay sends a table
        self.ports.append(port)
        self.links.append(link)
        return self.index[clock]

    def open(self):
        self.net.start()

    def poll(self, timeout=0.05):
        net = self.net
        net.wait(timeout)
        # what the pass sends (challenges, the acks after the fsync, the
        # office's log, the timers' requests) leaves in one send at its end
        outer = net.begin_batch()
        try:
            return self._pass()
        finally:
            if outer:
                net.send_batch()

    def _pass(self):
        fed = set()
        clock_of = self.clock_of
        for name, payload in self.net.messages(PASS_SHARE):
            clock = clock_of.get(name, False)
            if clock is False:  # a topic not met yet: its clock, once (None: not a clock's)
                clock = _clock_of(self.hall, name)
                if len(clock_of) < TOPIC_NAMES_MAX:
                    clock_of[name] = clock
            if clock is None:
                if self.shipper is not None and name == self.ack_name:
                    self.shipper.on_ack(payload)
                continue
            i = self.index.get(clock)
            if i is None:
                if not self.viewer and clock not in self.creds:
                    self.foreign += 1  # no key for it: nothing it says can be checked
                    continue
                i = self._add(clock)
            payload = self.seals[i].open_up(payload)
            if payload is None:  # not sealed by the clock, or a replay: counted, dropped
                continue
            if claims_other_clock(clock, payload):
                self.foreign += 1
                continue
            if not payload.endswith(b"\n"):
                payload += b"\n"
            if payload == LOST:  # the clock's last will: the broker saw its link die
                self.ports[i].state = "lost"
                continue
            if self.viewer:
                _adopt(self.links[i], clock, payload)
            self.links[i].feed(payload, flush=False)
            self.ports[i].state = "connected"
            fed.add(i)
        self.writer.flush()
        if self.writer.full is not None or self.disk_said:
            self._say_disk()  # loudly; the acks wait for the disk (durable_seq)
        for i in fed:
            self.links[i].send_acks()
        if self.shipper is not None:
            self.shipper.poll()  # what is stored now, to the office
        now = time.monotonic()
        if fed and now < self.next_timers:
            return True
        self.next_timers = now + TIMERS_S
        for link in self.links:
            link.poll()
        return bool(fed)

    def _publish_log(self, name, payload):
        self.net.publish(name, payload)

    def _ship_rest(self):
        """Before the logger ends: the office's acknowledgement of the whole
        log, waited for SHIP_DRAIN_S at most; what it lacks then is said
        (shipped when a logger runs on this log again)."""
        s = self.shipper
        deadline = time.monotonic() + SHIP_DRAIN_S
        while s.behind() and time.monotonic() < deadline and self.net.rfd >= 0:
            self.poll(0.05)
        if s.behind():
            self.say(f"hallclock: {self.writer.path}: the office has not acknowledged the last "
                     f"{s.behind()} bytes of this log yet (its link is down?); ship them with "
                     f"'hallclock ship --log {self.writer.path} --until-shipped ...', or they "
                     "go when a logger runs on this log again (same --out)")
        s.close()

    def refused(self):
        """Messages dropped unopened: not sealed by their clock, or replays."""
        return sum(s.refused for s in self.seals)

    def all_ended(self):
        """Every expected clock's session ended, and every record is on disk
        (an end held in memory by a full disk is not the end of the log)."""
        if self.writer.held():
            return False
        if not self.expect:  # viewer.json names no clock: every clock heard
            return bool(self.links) and all(link.ended() for link in self.links)
        return all(self.links[self.index[c]].ended() for c in self.expect)

    def _linger(self):
        """The log is complete; keep answering (a clock may lack our last ack)
        until the clocks are quiet for LINGER_S, at most LINGER_MAX_S."""
        quiet = time.monotonic() + LINGER_S
        stop = time.monotonic() + LINGER_MAX_S
        while time.monotonic() < min(quiet, stop):
            if self.poll(0.02):
                quiet = time.monotonic() + LINGER_S

    def stats(self):
        bad = sum(link.bad for link in self.links) + self.foreign + self.refused()
        dups = sum(link.dups for link in self.links)
        lost = sum(link.power_losses for link in self.links)
        rec = max(0, self.net.connects - 1)
        full = (f", disk full {self.writer.full_count}× ({self.writer.held()} records still "
                "held)" if self.writer.full_count else "")
        why = ""
        if self.refused():
            parts = [(sum(getattr(s, k) for s in self.seals), words) for k, words in (
                ("replays", "replays"), ("unproven", "of sessions not proven"),
                ("over_budget", "of sessions over a clock's budget"))]
            if self.net.overflow:
                parts.append((self.net.overflow, "over a clock's queue"))
            why = " (" + ", ".join(f"{n} {w}" for n, w in parts if n) + ")"
        return (f"{self.writer.count} records written, {dups} repeats dropped, "
                f"{bad} bad lines dropped{why}, {rec} reconnects, {lost} power losses{full}")

    def close(self):
        if self.shipper is not None and self.net.rfd >= 0:
            self.writer.flush()
            self._ship_rest()
        if self.net.rfd >= 0:
            self.net.stop()
        if self.writer.held():  # a last try: the disk may have room again
            self.writer.retry_at = 0.0
            try:
                self.writer.flush()
            except HallclockError:
                pass
        self.unstored = self.writer.held()
        self.writer.close()


def check_stored(logger):
    """Raise if the logger closed with records only in memory (a full disk):
    never exit 0 with records unstored.  Their clocks still hold them
    (nothing was acknowledged), so a logger restarted on a disk with room
    gets them again."""
    n = getattr(logger, "unstored", 0)
    if n:
        why = logger.writer.full or "disk full"
        raise HallclockError(
            f"{n} record(s) could not be stored in {logger.writer.path} ({why}) "
            "and were not acknowledged: the clocks keep them. Free some space and start "
            "'hallclock log --broker' again on the same --out; they are sent again")


def _adopt(link, clock, payload):
    """The viewer's HostLink takes up a session from the first event it hears
    (it may not ask the clock who it is, nor for the past): a session new to
    it -- by an event, or by a hello whose next event it does not know -- is
    anchored at the first event heard.  The clock's name is the topic's."""
    tokens = protocol.check(protocol.unframe(payload))
    if tokens is None or tokens[0] not in ("E", "H"):
        return
    s = link.sessions.get(tokens[1])
    if s is None:
        s = Session(tokens[1], clock, tokens[3] if tokens[0] == "H" else None)
        s.anchor = True
        link.sessions[tokens[1]] = s
    if tokens[0] == "E" and getattr(s, "anchor", False):
        s.anchor = False
        s.expected = int(tokens[2])


class ViewerTail:
    """``logfile.JsonlTail``'s ``read``/``exists`` on a viewer connection: the
    records its memory log gained since the last read."""

    def __init__(self, viewer):
        self.viewer = viewer
        self.taken = 0

    def exists(self):
        return True

    def read(self):
        self.viewer.poll(0)
        recs = self.viewer.writer.records
        new = recs[self.taken:]
        self.taken = len(recs)
        return new, False


def send_signal(address, hall, credentials, button, long=False, tls=None, user="referee"):
    """The referee's START / GONG / PAUSE to every clock of the hall through
    ``all/down`` (no logger needed)."""
    creds = load_credentials(credentials, user)
    net = BrokerClient(address, creds[user], tls=tls).start()
    try:
        info = net.client.publish(topic(hall, "all", "down"),
                                  seal_all(creds[user], hostframes.command(button, long), user))
        info.wait_for_publish(timeout=5)
    finally:
        net.stop()



# -- virtual clocks on the broker ---------------------------------------------
def device_link(address, hall, clock, creds, tls=None):
    """The firmware's own NetLink for a virtual clock, on a CPython socket."""
    from ..vboard.vdev import netpump
    require_keys(creds, clock)
    if tls is None:
        return netpump.make_link(address[0], address[1], hall, clock, creds)
    ctx = ssl.create_default_context(cafile=tls)
    ctx.check_hostname = False

    def wrap(sock):
        return _TlsSocket(ctx, sock, address[0])
    from hallclock_fw.netlink import NetLink
    return NetLink(hall, clock, creds["user"], creds["password"],
                   netpump.opener(address[0], address[1], wrap), netpump.ticks_ms,
                   key=creds.get("key"), hall_key=creds.get("hall_key"))


class _TlsSocket:
    """A non-blocking TLS socket with the plain socket's send/recv errors
    (SSLWantRead/Write read as EAGAIN), for the firmware's client."""

    def __init__(self, ctx, sock, host):
        self.raw = sock
        self.ctx = ctx
        self.host = host
        self.tls = None

    def _ready(self):
        import errno
        if self.tls is None:
            try:
                self.raw.getpeername()
            except OSError:
                raise OSError(errno.EAGAIN, "connecting") from None
            self.tls = self.ctx.wrap_socket(self.raw, server_hostname=self.host,
                                            do_handshake_on_connect=False)
        try:
            self.tls.do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise OSError(errno.EAGAIN, "handshake") from None
        return self.tls

    def send(self, data):
        import errno
        try:
            return self._ready().send(data)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise OSError(errno.EAGAIN, "tls") from None

    def recv(self, n):
        import errno
        try:
            return self._ready().recv(n)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise OSError(errno.EAGAIN, "tls") from None

    def fileno(self):
        return (self.tls or self.raw).fileno()

    def pending(self):
        """Bytes TLS has decrypted already (a poll on the socket does not see them)."""
        return self.tls.pending() if self.tls is not None else 0

    def close(self):
        (self.tls or self.raw).close()


# -- the same virtual clock inside the MicroPython unix port ---------------------
NET_HEAP_EXTRA_KIB = 24  # room beyond the board's: the unix port's sockets and the pump
NET_HARNESS_GC_BYTES = 16384  # the pump's garbage between two collections (sockets, polls)


def unix_device(address, hall, clock, creds, mode, values, actions, sid, silence_s=30.0,
                heap_kib=None, tls=None):
    """``device --broker --interpreter micropython-unix``: the firmware's
    NetLink and MQTT client on the unix port's own sockets, in its own
    process (``hallclock.vboard.vdev.netpump.main``).  ``tls``: the hall's CA
    (PEM, ``--tls-ca``): the clock speaks TLS with the firmware's ``tlslink``,
    pinning it in DER as a board does (hallclock.ca).  Returns the Popen and
    the files to remove once it exited."""
    import subprocess

    from ..vboard import unixport as mpunix
    require_keys(creds, clock)
    from ..vboard.vdev import scenariofile
    scenario = scenariofile.write(mode, values, actions, prefix="hallclock-net-")
    # the board's heap, as for the serial unix device: after boot only the free
    # heap a board of --heap-kib has on the hall network (vdev/netpump.py)
    free = mpunix.board_free(heap_kib, mode, "wifi")
    ca_der = None
    if tls is not None:
        ca_der = ca_der_file(tls, prefix="hallclock-net-")
    code = ("import sys\n"
            "try:\n"
            "    from hallclock.vboard.vdev.netpump import main\n"
            "except MemoryError:\n"
            "    sys.exit(%d)\n"
            "main(%r, %r, %d, %r, %r, %r, %r, %r, %d, %r, %r, board_free=%d, harness=%d,"
            " tls_ca=%r)\n" % (
                mpunix.EXIT_MEMORY, scenario, address[0], address[1], hall, clock,
                creds["user"], creds["password"], sid, int(silence_s * 1000),
                creds.get("key"), creds.get("hall_key"), free, NET_HARNESS_GC_BYTES, ca_der))
    env = dict(os.environ)
    # (.frozen: the port's own ssl module, frozen in, as on the ESP32's image)
    env["MICROPYPATH"] = ".frozen:" + str(mpunix.device_tree())
    heap = mpunix.vm_heap_bytes(heap_kib, mode, "wifi") + NET_HEAP_EXTRA_KIB * 1024 \
        + NET_HARNESS_GC_BYTES
    proc = subprocess.Popen([mpunix.binary(), "-X", "heapsize=%d" % heap, "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    return proc, [scenario] + ([ca_der] if ca_der else [])


def ca_der_file(pem_path, prefix="hallclock-"):
    """The hall's CA (``tls/ca.crt``, PEM) as the DER file a clock pins
    (hallclock.ca), in a temporary file; HallclockError when it is no
    certificate."""
    import tempfile
    from ..errors import BadInput
    try:
        with open(pem_path) as f:
            der = ssl.PEM_cert_to_DER_cert(f.read())
    except (OSError, ValueError) as exc:
        raise BadInput(f"--tls-ca {pem_path}: not the hall's CA certificate (PEM: "
                       f"broker-config's tls/ca.crt): {exc}") from None
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".der")
    with os.fdopen(fd, "wb") as f:
        f.write(der)
    return path


def run_unix_device(*args, **kw):
    """Run :func:`unix_device` to its end; raises HallclockError on failure."""
    from ..errors import HallclockError
    silence_s = kw.get("silence_s", 30.0)
    proc, files = unix_device(*args, **kw)
    try:
        out, err = proc.communicate()
    finally:
        for path in files:
            os.unlink(path)
    if proc.returncode == 4 or "MemoryError" in err + out:
        from ..vboard import unixport as mpunix
        heap_kib = kw.get("heap_kib") or mpunix.DEFAULT_HEAP_KIB
        need = mpunix.firmware_32(args[4] if len(args) > 4 else kw.get("mode"), "wifi")
        raise HallclockError(
            f"the virtual clock on the hall network ran out of memory with --heap-kib "
            f"{heap_kib} (MemoryError in the MicroPython unix port)"
            + (f": on 32 bits it needs {need} B after boot, the heap is {heap_kib * 1024} B"
               if need else "")
            + "; give a larger heap (docs/benchmarks.md has the heap figures)")
    if proc.returncode == 3:
        from ..whytext import words
        why = [ln.split()[1] for ln in err.splitlines() if ln.startswith("@@why ")]
        said = words(int(why[-1])) if why and why[-1].lstrip("-").isdigit() else None
        raise HallclockError(f"no host contact for {silence_s:g} s on the broker"
                             + (f" ({said})" if said else "") + "; events not "
                             "acknowledged were not delivered (is 'hallclock log --broker' "
                             "running?)")
    if proc.returncode != 0:
        last = [ln for ln in (err + out).strip().splitlines() if ln.strip()]
        raise HallclockError("the MicroPython unix device failed: " +
                             (last[-1] if last else f"exit status {proc.returncode}"))
