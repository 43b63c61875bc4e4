"""The hall side's shipping loops (docs/network.md "Several halls"):
``hallclock ship`` and a serial logger's own thread (``--ship``), each a
broker client around hallclock.net.ship's Shipper."""

import os
import threading
import time

from .ship import Shipper, WholeLines, ack_topic


def _follow(net, shipper, stop, until_shipped=False):
    """The shipping loop (``hallclock ship`` and a serial logger's thread):
    the office's acknowledgements taken, what is stored shipped, until
    ``stop()`` or, with ``until_shipped``, the office holds all of it."""
    while not (stop is not None and stop()):
        net.wait(0.05)
        for name, payload in net.messages():
            if name == shipper.ack_name:
                shipper.on_ack(payload)
        shipper.poll()
        if until_shipped and shipper.log is not None and not shipper.behind():
            break


def ship_file(address, hall, credentials, path, tls=None, until_shipped=False, stop=None,
              say=None):
    """``hallclock ship``: ``path`` (a hall's log, written by any logger)
    shipped to the office through the hall's broker as the ``logger`` login,
    until ``stop()`` or, with ``until_shipped``, the office holds all of it.
    Returns the bytes the office lacks at the end."""
    from .broker import load_credentials
    from .mqtt import BrokerClient
    creds = load_credentials(credentials, "logger")
    lines = WholeLines(path)
    net = BrokerClient(address, creds["logger"], [ack_topic(hall)], tls=tls, inline=True)
    shipper = Shipper(path, hall, net.publish, lines, say=say)
    net.start()
    if say is not None:
        say(f"shipping {path} to the office (hall {hall}, broker {address[0]}:{address[1]})")
    try:
        _follow(net, shipper, stop, until_shipped)
    except KeyboardInterrupt:
        pass  # Ctrl-C: say what the office lacks
    finally:
        behind = shipper.behind()
        shipper.close()
        lines.close()
        net.stop()
    return behind


RECONNECT_S = 2.0  # the hall's broker unreachable when the logger started: tried again this often
DRAIN_S = 5.0  # a logger ending waits this long for the office to have its whole log


class Beside:
    """A serial logger's own shipping (``log --port``, ``round start --port``,
    ``hall`` with ``--ship``): the loop of ``hallclock ship`` in a thread of
    the logger's process, shipping what the logger has fsync'd
    (``stored()``, its writer's ``good``).  The serial logging never waits
    on it: the thread only reads the log from disk, and a broker that is
    down, slow or gone changes nothing for the clocks' acknowledgements."""

    def __init__(self, address, hall, credentials, path, stored=None, tls=None, say=None):
        from .broker import load_credentials
        self.creds = load_credentials(credentials, "logger")["logger"]  # bad file: before any port
        self.address, self.hall, self.tls, self.say = address, hall, tls, say
        self.path = os.fspath(path)
        self.net = None
        self.shipper = Shipper(path, hall, self._publish, stored, say=say)
        self.halt = False
        self.drain_until = None  # set by finish(): ship what is left, then end
        self.refused = None
        self.thread = threading.Thread(target=self._run, name="ship-to-office", daemon=True)

    def of(self, writer):
        """Ship what ``writer`` (the logger's LogWriter) has fsync'd."""
        self.shipper.stored = lambda: writer.good
        return self

    def _publish(self, name, payload):
        if self.net is not None:
            self.net.publish(name, payload)

    def start(self):
        self.thread.start()
        return self

    def _ending(self):
        if self.halt:
            return True
        if self.drain_until is None:
            return False
        return time.monotonic() > self.drain_until or (
            self.shipper.log is not None and not self.shipper.behind()) or \
            self.shipper.stored() <= 0

    def _connect(self):
        """The hall's broker, however long it takes to be there (the logger
        started first); None if it refused the login or the logger ends."""
        from ..errors import HallclockError
        from .mqtt import BrokerClient
        said = False
        while not self._ending():
            net = BrokerClient(self.address, self.creds, [ack_topic(self.hall)], tls=self.tls,
                               inline=True)
            try:
                return net.start()
            except HallclockError as exc:
                if net.rfd >= 0:
                    net.stop()
                if net.refused is not None:
                    self.refused = str(exc)
                    self._say(f"hallclock: not shipping to the office: {exc}")
                    return None
                if not said:
                    said = True
                    self._say(f"hallclock: {exc}; the log is kept as ever and shipped to the "
                              f"office once the broker answers (tried every {RECONNECT_S:.0f} s)")
            end = time.monotonic() + RECONNECT_S
            while time.monotonic() < end and not self._ending():
                time.sleep(0.05)
        return None

    def _run(self):
        try:
            self.net = self._connect()
            if self.net is not None:
                _follow(self.net, self.shipper, self._ending)
        except Exception as exc:  # the logging goes on: said, never raised into it
            self._say(f"hallclock: shipping to the office stopped: {exc}")
        finally:
            if self.net is not None:
                self.net.stop()

    def _say(self, text):
        if self.say is not None:
            self.say(text)

    def finish(self, drain_s=DRAIN_S):
        """The logger ends: the office's acknowledgement of the whole log
        waited for ``drain_s`` at most; what it lacks then is said.  Returns
        the bytes the office lacks."""
        self.drain_until = time.monotonic() + drain_s
        self.thread.join(drain_s + 2.0)
        self.halt = True
        self.thread.join(2.0)
        behind = self.shipper.behind()
        self.shipper.close()
        if behind and self.refused is None:
            self._say(f"hallclock: {self.path}: the office has not acknowledged the last "
                      f"{behind} bytes of this log yet (its link is down?); ship them with "
                      f"'hallclock ship --log {self.path} --until-shipped ...', or they go "
                      "when a logger runs on this log again (same --out)")
        return behind
