"""A whole hall on the network: ``hall-simulate --transport mqtt``.  The hall
unit and N table clocks are virtual devices running the firmware's network
link, all through one Mosquitto (the real binary: our own on a free localhost
port with a generated configuration when no ``--broker`` is given) into one
logger, which relays the referee's START and GONG to the tables as on the
serial hall (``hallclock.hall.relay``)."""
import os
import shutil
import tempfile
import time

from ..net import broker as broker_mod
from ..errors import BadInput, LinkError
from ..net.mqtt import BrokerLogger, device_link
from .relay import Relay, run_devices

HALL = "sim"


def hall_clocks(n):
    return ["hall"] + ["table-%d" % (i + 1) for i in range(n)]


class OwnBroker:
    """Mosquitto on a generated configuration in a temporary folder the
    ``mosquitto`` user can enter (removed afterwards)."""

    TRIES = 3  # a free port may be taken by another program before Mosquitto binds it

    def __init__(self, clocks, hall=HALL):
        self.folder = tempfile.mkdtemp(prefix="hallclock-broker-")
        os.chmod(self.folder, 0o711)  # mosquitto (when we are root) enters, lists nothing
        self.clocks, self.hall = clocks, hall
        self._configure()

    def _configure(self):
        self.port = broker_mod.free_port()
        conf = os.path.join(self.folder, "conf")
        shutil.rmtree(conf, ignore_errors=True)
        self.creds = broker_mod.write_config(conf, self.hall, self.clocks, port=self.port,
                                             bind="127.0.0.1")
        self.cred_file = os.path.join(conf, "credentials.json")
        extra = ["user root"] if broker_mod.reachable_by_broker(conf) else []
        self.broker = broker_mod.Broker(conf, extra=extra)
        self.address = ("127.0.0.1", self.port)

    def __enter__(self):
        for attempt in range(self.TRIES):
            try:
                self.broker.start()
                return self
            except broker_mod.BrokerExited:
                if attempt == self.TRIES - 1:
                    shutil.rmtree(self.folder, ignore_errors=True)
                    raise
                self._configure()

    def __exit__(self, *exc):
        self.broker.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def simulate_hall_mqtt(hall_actions, table_actions, mode, values, out, speed=1.0,
                       address=None, hall=HALL, credentials=None, timeout_s=None):
    """Returns (records written, relay), as ``relay.simulate_hall``."""
    from ..net.broker import load_credentials
    from ..vboard.device import DeviceThread, RealPace, make_runner, mark

    clocks = hall_clocks(len(table_actions))
    if address is None:
        with OwnBroker(clocks, hall) as own:
            return simulate_hall_mqtt(hall_actions, table_actions, mode, values, out, speed,
                                      own.address, hall, own.cred_file, timeout_s)
    creds = load_credentials(credentials)
    missing = [c for c in clocks if c not in creds]
    if missing:
        raise BadInput(f"--credentials {credentials} has no entry for {', '.join(missing)} "
                       f"(hall-simulate names its clocks {clocks[0]}, {clocks[1]}, ...)")
    specs = [("hall", "a0000001", hall_actions)]
    for i, acts in enumerate(table_actions):
        specs.append(("table-%d" % (i + 1), "%08x" % (0xb0000001 + i), acts))
    last_t = max(a[0] if isinstance(a, tuple) else a.t_ms for _c, _s, acts in specs for a in acts)
    if timeout_s is None:
        timeout_s = last_t / 1000.0 / speed + 60.0
    logger = BrokerLogger(address, hall, credentials, out, clocks=clocks)
    logger.open()
    relay = Relay(logger)
    from ..vboard.vdev.netpump import ticks_ms
    devices = []
    try:
        nets = [device_link(address, hall, c, creds[c]) for c, _s, _a in specs]
        for net in nets:  # every clock on the network before the hall starts
            net.service(ticks_ms())
        deadline = time.monotonic() + 20
        while not all(n.connected() for n in nets):
            if time.monotonic() > deadline:
                raise LinkError("the clocks could not all connect to the broker in 20 s")
            for n in nets:
                n.service(ticks_ms())
            logger.poll(0.005)
        pace = RealPace(mark(), speed)
        for (clock, sid, acts), net in zip(specs, nets):
            runner = make_runner(mode, values, acts, clock=clock, sid=sid)
            devices.append(DeviceThread(runner, net, pace))
        relay = run_devices(logger, devices, timeout_s, relay=relay)
    finally:
        for d in devices:
            d.halt = True
        logger.close()
    return logger.writer.count, relay
