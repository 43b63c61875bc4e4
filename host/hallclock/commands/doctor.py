"""``hallclock doctor``: ask a RUNNING clock over its own link (the serial
port or the hall's broker) for its firmware and MicroPython versions, heaps
and partitions, and say plainly what is short (docs/hardware.md "The health
event").

The host sends ``W`` (who are you: the clock answers with its hello) and
``I`` (info: the clock answers with a ``health`` event whose text carries its
versions, hw/device.py).  The doctor acknowledges nothing: on the serial
port the clock keeps the event until a logger stores it; on the broker the
hall's logger stores it as every other event.
"""
import select
import time

GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)
ASK_AGAIN_S = 1.0  # W and I again this often (noise may eat a frame)


def register(sub):
    p = sub.add_parser("doctor", help="ask a running clock for its versions, heaps and "
                       "partitions; say what is short")
    p.add_argument("--port", default=None, help="the clock's serial port (or 'auto')")
    from .log import broker_options
    broker_options(p, "the hall's broker: ask the clock --clock on it")
    p.add_argument("--clock", default=None, help="with --broker: the clock's name")
    p.add_argument("--wait-s", type=float, default=8.0, metavar="S",
                   help="how long to wait for the clock's answer (default 8)")
    p.set_defaults(func=cmd_doctor)


def answer(lines_in, send, wait, wait_s):
    """Ask (``send(bytes)``) until a hello and an info health event came back
    (``lines_in()`` -> new lines, ``wait(s)`` sleeps until input); returns
    (hello tokens or None, health record or None)."""
    from hallclock_fw import protocol
    from .. import hostframes

    from .. import catalog
    from ..link.health import health_fields
    hello = None
    health = None
    end = time.monotonic() + wait_s
    next_ask = 0.0
    while time.monotonic() < end and (hello is None or health is None):
        now = time.monotonic()
        if now >= next_ask:
            send(b"\r\n" + protocol.who() + hostframes.info())
            next_ask = now + ASK_AGAIN_S
        for line in lines_in():
            tokens = protocol.check(protocol.unframe(line))
            if tokens is None:
                continue
            if tokens[0] == "H":
                hello = tokens
            elif tokens[0] == "E":
                _seq, t_ms, name, values, text = catalog.event_fields(tokens)
                if name == "health" and text and "fw=" in text:
                    health = dict(values, t_ms=t_ms)
                    health.update(health_fields(text))
        wait(min(0.1, max(0.0, end - time.monotonic())))
    return hello, health


def _serial(path, wait_s):
    from ..link.transport import Port
    port = Port(path)
    port.open()
    buf = bytearray()

    def lines_in():
        buf.extend(port.read())
        out = []
        while b"\n" in buf:
            i = buf.index(b"\n")
            out.append(bytes(buf[:i + 1]))
            del buf[:i + 1]
        return out

    def send(data):
        port.write(data)
        port.drain()

    def wait(s):
        fd = port.fileno()
        if fd is not None:
            select.select([fd], [], [], s)
        else:
            time.sleep(s)
    try:
        return answer(lines_in, send, wait, wait_s)
    finally:
        port.close()


def _broker(address, hall, credentials, clock, tls, wait_s):
    from hallclock_fw.netlink import topic

    from ..net.broker import load_credentials
    from ..net.mqtt import BrokerClient
    from ..net.seal import ClockSeal, clock_mac
    creds = load_credentials(credentials, "logger")
    # the clock's own key: its answer is opened, our W and I sealed, as the
    # logger does (a frame that is not sealed is dropped by the clock)
    sealed = ClockSeal(clock_mac(creds, clock))
    net = BrokerClient(address, creds["logger"], [topic(hall, clock, "up")], tls=tls).start()
    down = topic(hall, clock, "down")

    def lines_in():
        out = []
        for _topic, payload in net.messages():
            frame = sealed.open_up(bytes(payload))
            if frame is not None:
                out.append(frame)
        return out

    def send(data):
        for message in sealed.seal_down(data):
            net.publish(down, message)
    try:
        return answer(lines_in, send, net.wait, wait_s)
    finally:
        net.stop()


def verdict(hello, health):
    """(lines to print, what is short, what this board cannot know) of the
    clock's answer."""
    from ..errors import shown
    from ..link.health import GC_AREA, VIRTUAL_PORTS, cannot_know, shortfalls, virtual_port
    lines = []
    if hello is not None:
        lines.append(shown(f"clock {hello[2]}: mode {hello[3]}, firmware {hello[4]} (hello)"))
    if health is None:
        return lines, [], []
    port = virtual_port(health)
    mp = health.get("micropython")
    if mp is None and health.get("gc_used") is None:
        mp = "none (a virtual clock on CPython)"
    lines.append(shown(f"firmware {health.get('firmware', '?')}, MicroPython {mp or '?'}"
                       + (f" ({VIRTUAL_PORTS[port]}: a virtual board)" if port else "")))
    used = health.get("gc_used")
    largest = health.get("gc_largest")
    if used is None:
        lines.append("GC heap: not reported (no MicroPython heap: a virtual clock on CPython)")
    else:
        lines.append(f"GC heap: {used} B live, {health.get('gc_free')} B free"
                     + (f", largest free block {largest} B" if largest is not None else "")
                     + ("" if port else f"; {GC_AREA - used} B to the first {GC_AREA} B area"))
    if isinstance(health.get("idf_free"), int) and health["idf_free"] >= 0:
        lines.append(f"IDF heap (Wi-Fi, sockets): {health['idf_free']} B free, largest block "
                     f"{health.get('idf_largest')} B")
        from ..link.health import tls_fits
        fits = tls_fits(health)
        if fits is not None:
            lines.append(fits[1])
            from ..link.health import tls_gc_note
            note = tls_gc_note(hello[3] if hello is not None else None) if fits[0] else None
            if note is not None:
                lines.append(shown(note))
    lines.append(f"longest pass since the last report: {health.get('longest_pass_ms')} ms")
    parts = health.get("partitions")
    if parts:
        lines.append(shown("partitions: " + ", ".join(f"{k} {v} KiB" for k, v in parts.items())))
    return lines, shortfalls(health), cannot_know(health)


def cmd_doctor(args):
    from ..errors import BadInput, LinkError
    from .log import broker_args
    if not args.wait_s > 0:
        raise BadInput(f"--wait-s {args.wait_s:g}: give a number of seconds above 0")
    address = broker_args(args)
    if address is not None:
        if not args.clock:
            raise BadInput("--broker needs --clock NAME: the clock to ask")
        from ..net.broker import check_name
        check_name("clock name", args.clock)
        where = f"clock {args.clock} on the broker {args.broker}"
        hello, health = _broker(address, args.hall, args.credentials, args.clock,
                                args.tls_ca, args.wait_s)
    elif args.port:
        if args.clock:
            raise BadInput("--clock goes with --broker (on a serial port the clock is the port)")
        from .ports import resolve_port
        path = resolve_port(args.port)
        where = path
        hello, health = _serial(path, args.wait_s)
    else:
        raise BadInput("give --port PORT (the clock's serial port) or --broker HOST:PORT "
                       "--hall NAME --credentials FILE --clock NAME")
    if hello is None and health is None:
        raise LinkError(f"no answer from {where} in {args.wait_s:g} s: no hallclock clock "
                        "running there (at the REPL, or another program has the port?)")
    lines, short, unknown = verdict(hello, health)
    for line in lines:
        print(line)
    for u in unknown:  # a virtual board: not short, not known
        print(f"cannot know here: {u}")
    if health is None:
        print(f"hallclock doctor: {where} said hello but sent no health report: its firmware "
              "predates the I frame; make deploy")
        return 1
    if short:
        for s in short:
            print(f"short: {s}")
        return 1
    print("nothing is short")
    return 0
