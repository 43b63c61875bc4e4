"""The hall's broker: ``broker-config`` writes a Mosquitto configuration for one
hall (listener, persistence, no anonymous access, password and ACL files, the
credentials of every client, each clock's ``hallclock.cfg``), and ``broker``
runs the real Mosquitto binary on it (docs/network.md).

The access rules (the outside contract): a clock publishes only its own
``up`` and reads only its own ``down`` and the hall's ``all/down``;
``logger`` reads every ``up`` and writes every ``down``; ``referee`` may
write ``all/down``; ``viewer`` only reads ``up``.
"""
import base64
import hashlib
import json
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import subprocess
import time

from hallclock_fw.names import RESERVED, name_error
from hallclock_fw.netlink import topic

from ..errors import BadInput, HallclockError

HOSTS = ("logger", "referee", "viewer")  # the host-side clients, besides the clocks
MOSQUITTO = "/usr/sbin/mosquitto"
PBKDF2_ROUNDS = 101  # Mosquitto's own default for its $7$ (PBKDF2-SHA512) hashes


def check_name(what, name):
    """A clock's or a hall's name: the clock-name grammar (hallclock_fw.names),
    one MQTT topic level; a hall may be called what a clock may not."""
    why = name_error(name)
    if why is not None and not (what == "hall name" and name in RESERVED):
        raise BadInput(f"{what} {name!r}: {why}")
    return name


def parse_clocks(text):
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise BadInput("--clocks: give the clock names, e.g. --clocks table-01,table-02")
    for n in names:
        check_name("clock name", n)
    if len(set(names)) != len(names):
        raise BadInput("--clocks: a clock name is given twice")
    return names


def password_hash(password, salt=None):
    """A Mosquitto password-file hash ($7$: PBKDF2-SHA512)."""
    salt = salt or os.urandom(12)
    dk = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, PBKDF2_ROUNDS)
    return "$7$%d$%s$%s" % (PBKDF2_ROUNDS, base64.b64encode(salt).decode(),
                             base64.b64encode(dk).decode())


def acl_text(hall, clocks):
    lines = ["# hallclock: who may read and write which topic (docs/network.md)", ""]
    # the logger also ships the hall's log to the office and hears its
    # acknowledgements (hallclock.net.ship): only it, so no clock can put a
    # record into the office's copy nor tell the logger the office has one
    lines += ["user logger", f"topic read {topic(hall, '+', 'up')}",
              f"topic write {topic(hall, '+', 'down')}",
              f"topic write {topic(hall, 'office', 'log')}",
              f"topic read {topic(hall, 'office', 'ack')}", ""]
    lines += ["user referee", f"topic write {topic(hall, 'all', 'down')}", ""]
    lines += ["user viewer", f"topic read {topic(hall, '+', 'up')}", ""]
    for c in clocks:
        lines += [f"user {c}", f"topic write {topic(hall, c, 'up')}",
                  f"topic read {topic(hall, c, 'down')}",
                  f"topic read {topic(hall, 'all', 'down')}", ""]
    return "\n".join(lines)


# -- the Mosquitto configuration (docs/network.md, "Threat model") ------------
LOCAL_CONNECTIONS = 64  # the laptop's own tools: logger, referee, console, projector, views
HALL_CONNECTIONS_MIN = 32  # the hall listener: two per clock (a reconnect overlaps) and spare
MESSAGE_SIZE_LIMIT = 1024  # a frame is at most protocol.MAX_LINE (160) bytes


def hall_connections(clocks):
    """The hall listener's connection limit: every clock twice over (a
    reconnect may overlap its old socket), a few viewer laptops, and well
    under the broker's own file limit, so a flood of idle sockets fills this
    listener and never the broker (the laptop's listener keeps its slots)."""
    return max(HALL_CONNECTIONS_MIN, 2 * len(clocks) + 16)


def conf_text(folder, port, bind=None, tls=None, local_port=None, clocks=()):
    """mosquitto.conf for one hall.  Three kinds of listener:

    - the laptop's own (``local_port`` on 127.0.0.1): the logger, referee,
      console, projector and views on this machine; nobody in the hall can
      reach it, so nobody can exhaust it;
    - the hall's plaintext listener (``port`` on ``bind``, every interface
      without one) the clocks use;
    - the hall's TLS listener when asked (``tls``: port, ca, cert, key).

    On the hall's listeners the client id is the user name
    (``use_username_as_clientid``): nobody can take a clock's (or anyone's)
    id over.  Retained messages are off (a client that sends one is
    disconnected), messages are frame-sized, and each listener has its
    connection limit."""
    hall_max = hall_connections(clocks)
    lines = [
        "# hallclock broker for one hall: hallclock broker --dir " + folder,
        "# (docs/network.md: the threat model; docs/hall.md: setting up)",
        "per_listener_settings false",
        "allow_anonymous false",
        f"password_file {os.path.join(folder, 'passwords')}",
        f"acl_file {os.path.join(folder, 'acl')}",
        "persistence true",
        f"persistence_location {os.path.join(folder, 'data')}/",
        "retain_available false",
        f"message_size_limit {MESSAGE_SIZE_LIMIT}",
        "allow_zero_length_clientid false",
        "log_dest stderr",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "log_type information",
        "connection_messages true",
        "max_keepalive 120",
        "set_tcp_nodelay true",  # a frame is forwarded at once, not held by Nagle
        "",
        "# the laptop's own tools (hallclock log/referee/console/hall-display --broker "
        f"127.0.0.1:{local_port})",
        f"listener {local_port} 127.0.0.1",
        f"max_connections {LOCAL_CONNECTIONS}",
    ]
    if port is not None:
        lines += ["", "# the hall: the clocks (plaintext MQTT)",
                  f"listener {port}" + (f" {bind}" if bind else ""),
                  f"max_connections {hall_max}",
                  "use_username_as_clientid true"]
    if tls is not None:
        tport, cafile, cert, key = tls
        lines += ["", "# the hall over TLS",
                  f"listener {tport}" + (f" {bind}" if bind else ""),
                  f"max_connections {hall_max}",
                  "use_username_as_clientid true",
                  f"cafile {cafile}", f"certfile {cert}", f"keyfile {key}",
                  "tls_version tlsv1.2"]
    return "\n".join(lines) + "\n"


def add_frame_keys(creds, clocks):
    """The keys that seal the frames on the network (docs/protocol.md "Sealed
    frames on the network"): each clock's own ``key`` (its up and down topics,
    known to that clock and the laptop's logger), and the hall's ``hall_key``
    (the referee's signals on all/down: every clock and the referee).  The
    logger and the viewer entries get none (the logger reads the clocks' keys
    from their entries; a viewer, which cannot publish, holds no key)."""
    hall_key = secrets.token_hex(16)
    for c in clocks:
        creds[c]["key"] = secrets.token_hex(16)
        creds[c]["hall_key"] = hall_key
    creds["referee"]["hall_key"] = hall_key
    return creds


def local_port_for(port, tls_port=None, local_port=None):
    """The laptop listener's port: given, or the hall's port + 1 (+ 2 when
    the TLS listener has + 1)."""
    if local_port is None:
        local_port = port + 1
        if local_port == tls_port:
            local_port += 1
    if not 1 <= local_port <= 65535:
        raise BadInput(f"--local-port {local_port}: give 1-65535")
    if local_port in (port, tls_port):
        raise BadInput(f"--local-port {local_port}: the laptop's listener needs a port of "
                       "its own (not the hall's nor the TLS port)")
    return local_port


def viewer_json(creds):
    """viewer.json: only what a viewer laptop needs (nothing that writes)."""
    return json.dumps({"viewer": creds["viewer"]}, indent=2) + "\n"


# the hall's CA as a clock pins it (DER), beside the clocks' cfg files and on
# the board (deploy copies it); hallclock.cfg names it (firmware tlslink.py)
CLOCK_CA = "hallclock.ca"


def clock_cfg(clock, hall, broker_host, port, creds, mode="scrabble", tls_port=None):
    """A clock's hallclock.cfg; ``tls_port``: the clock speaks TLS to the
    broker's TLS listener, pinning the hall's CA (docs/network.md "TLS on
    the clock")."""
    keys = [f"key = {creds['key']}", f"hall_key = {creds['hall_key']}"] if "key" in creds else []
    if tls_port is not None:
        port = tls_port
        keys.append(f"tls_ca_file = {CLOCK_CA}  # TLS to the broker, pinning the hall's CA")
    return "\n".join([
        "# hallclock.cfg for " + clock + " (copy onto the board: make deploy CONFIG=this file)",
        f"clock = {clock}",
        f"mode = {mode}",
        "wifi_ssid = HALL-WIFI          # the hall network: fill in",
        "wifi_password = CHANGE-ME      # fill in",
        f"broker = {broker_host}:{port}     # the laptop running 'hallclock broker'",
        f"hall = {hall}",
        f"user = {creds['user']}",
        f"password = {creds['password']}"] + keys + [""])


def _mosquitto_user():
    try:
        return pwd.getpwnam("mosquitto")
    except KeyError:
        return None


def _give_to_broker(paths):
    """Mosquitto started as root drops to the ``mosquitto`` user before it
    reads the password and ACL files and writes its persistence: hand it
    those files (readable by it, by nobody else)."""
    if os.geteuid() != 0:
        return
    user = _mosquitto_user()
    if user is None:
        return
    for p in paths:
        os.chown(p, user.pw_uid, user.pw_gid)


def write_private(out, name, text, mode=0o600):
    """``out/name`` written with ``mode`` from its creation (secrets are never
    readable by others, not even for a moment); its path."""
    path = os.path.join(out, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def replace_private(target, text):
    """``target`` replaced whole by ``text`` (0600): written beside it, on
    disk, then renamed over it, so a cut leaves the old file or the new one."""
    tmp = target + ".new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


def passwords_text(creds):
    """Mosquitto's password file for every login of ``creds``."""
    return "".join(f"{c['user']}:{password_hash(c['password'])}\n" for c in creds.values())


def _fresh_dir(out, port, tls, local_port, sub, kind, carriers):
    """(out made absolute, the local listener's port) for a new broker
    directory ``out`` with ``sub``/ and data/; refused if it already holds
    credentials (``carriers`` carry the passwords written there)."""
    if not 1 <= port <= 65535:
        raise BadInput(f"--broker-port {port}: give 1-65535")
    local_port = local_port_for(port, tls[0] if tls else None, local_port)
    out = os.path.abspath(out)
    if os.path.exists(os.path.join(out, "credentials.json")):
        raise BadInput(f"{out} already holds {kind} (credentials.json): remove it or choose "
                       f"another --out ({carriers} carry the passwords written there)")
    os.makedirs(os.path.join(out, sub), exist_ok=True)
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    return out, local_port


def write_config(out, hall, clocks, port=1883, bind=None, broker_host=None, tls=None,
                 local_port=None, tls_clocks=()):
    """Write DIR/mosquitto.conf, passwords, acl, credentials.json (every
    client's), viewer.json (the viewer's only), clocks/*.cfg; with
    ``tls_clocks`` (those need ``tls``) their cfg points at the TLS listener
    and clocks/hallclock.ca is the hall's CA in DER."""
    check_name("hall name", hall)
    out, local_port = _fresh_dir(out, port, tls, local_port, "clocks", "a hall configuration",
                                 "the clocks' cfg files")
    creds = {}
    for name in list(clocks) + list(HOSTS):
        creds[name] = {"user": name, "password": secrets.token_urlsafe(18)}
    add_frame_keys(creds, clocks)

    def write(name, text, mode=0o600):
        return write_private(out, name, text, mode)

    write("passwords", passwords_text(creds))
    write("acl", acl_text(hall, clocks) + "\n")
    write("mosquitto.conf", conf_text(out, port, bind, tls, local_port, clocks), 0o644)
    write("credentials.json", json.dumps(creds, indent=2) + "\n")
    write("viewer.json", viewer_json(creds))
    host = broker_host or bind or "192.168.1.10"
    for c in clocks:
        write(os.path.join("clocks", c + ".cfg"), clock_cfg(
            c, hall, host, port, creds[c], tls_port=tls[0] if c in tls_clocks else None))
    if tls_clocks:
        import ssl
        with open(tls[1]) as f:
            der = ssl.PEM_cert_to_DER_cert(f.read())
        with open(os.path.join(out, "clocks", CLOCK_CA), "wb") as f:
            f.write(der)  # a certificate: nothing secret in it
    _give_to_broker([os.path.join(out, "passwords"), os.path.join(out, "acl"),
                     os.path.join(out, "data")])
    return creds


def rotate_hall_key(out):
    """``broker-config --rotate``: a new ``hall_key`` (the referee's signals on
    all/down) for the hall configured in ``out``: in credentials.json (every
    entry that holds one: the clocks' and the referee's) and in each clock's
    clocks/<clock>.cfg, whose other lines (the Wi-Fi filled in) are kept.
    Passwords and the clocks' own keys stay, so the broker runs on; the
    clocks take the new key with ``hallclock deploy --cfg-dir DIR/clocks``.
    A signal recorded under the old key is then refused by every clock.
    Returns the clocks whose cfg was written."""
    out = os.path.abspath(out)
    path = os.path.join(out, "credentials.json")
    if not os.path.exists(path):
        raise BadInput(f"{out} holds no hall configuration (credentials.json): "
                       "write it first with 'hallclock broker-config --hall ... --clocks ...'")
    creds = load_credentials(path)
    hall_key = secrets.token_hex(16)
    clocks = []
    for name, entry in creds.items():
        if isinstance(entry, dict) and "hall_key" in entry:
            entry["hall_key"] = hall_key
            if name not in HOSTS:
                clocks.append(name)
    if not clocks:
        raise BadInput(f"{path} has no hall_key: it was written by an older broker-config; "
                       "write the hall's configuration again (broker-config)")
    texts = {}
    for c in clocks:
        cfg = os.path.join(out, "clocks", c + ".cfg")
        try:
            with open(cfg, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except OSError as exc:
            raise BadInput(f"cannot read {cfg}: {exc.strerror}; nothing was changed") from None
        keyed = [i for i, ln in enumerate(lines) if ln.split("=", 1)[0].strip() == "hall_key"]
        if not keyed:
            raise BadInput(f"{cfg} has no hall_key line; nothing was changed")
        for i in keyed:
            lines[i] = f"hall_key = {hall_key}"
        texts[cfg] = "\n".join(lines)
    # credentials.json first: a cut before the cfgs leaves the laptop on the new key,
    # and --rotate run again writes every file anew
    for target, text in [(path, json.dumps(creds, indent=2) + "\n")] + list(texts.items()):
        replace_private(target, text)
    return clocks


def load_credentials(path, name=None):
    """credentials.json -> dict (one entry checked if ``name``)."""
    try:
        with open(path, encoding="utf-8") as f:
            creds = json.load(f)
    except OSError as exc:
        raise BadInput(f"cannot read --credentials {path}: {exc.strerror}. Give the "
                       "credentials.json that 'hallclock broker-config' wrote") from None
    except ValueError as exc:
        raise BadInput(f"--credentials {path} is not JSON ({exc})") from None
    if not isinstance(creds, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("user"), str)
            and isinstance(v.get("password"), str) for v in creds.values()):
        raise BadInput(f"--credentials {path}: expected "
                       '{"<name>": {"user": ..., "password": ...}, ...}')
    if name is not None and name not in creds:
        raise BadInput(f"--credentials {path} has no entry {name!r} (it has: "
                       f"{', '.join(sorted(creds))})")
    return creds


def clocks_of(creds):
    return [n for n in creds if n not in HOSTS]


def parse_broker(text):
    """HOST:PORT -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise BadInput(f"--broker {text!r}: give HOST:PORT, e.g. 127.0.0.1:1883")
    return host.strip("[]"), int(port)


def mosquitto_binary():
    path = MOSQUITTO if os.path.exists(MOSQUITTO) else shutil.which("mosquitto")
    if not path:
        raise HallclockError("mosquitto is not installed: run 'make mqtt-setup' "
                             "(apt-get install mosquitto)")
    return path


def listeners(folder):
    """[(port, address)] of a broker-config folder's listeners, in order; the
    laptop's own (127.0.0.1) first in what broker-config writes."""
    out = []
    with open(os.path.join(folder, "mosquitto.conf"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts[:1] == ["listener"]:
                out.append((int(parts[1]), parts[2] if len(parts) > 2 else "0.0.0.0"))
    return out or [(1883, "0.0.0.0")]


def listen_port(folder):
    """(port, host) to reach the broker of ``folder`` from this machine: its
    first listener (the laptop's, in what broker-config writes)."""
    port, host = listeners(folder)[0]
    return port, ("127.0.0.1" if host in ("0.0.0.0", "::") else host)


def check_dir(folder):
    conf = os.path.join(folder, "mosquitto.conf")
    if not os.path.isfile(conf):
        raise BadInput(f"{folder} holds no mosquitto.conf: write one with "
                       "'hallclock broker-config --hall NAME --clocks ... --out DIR'")
    return conf


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A localhost port free now, for a listener started next: drawn below the
    kernel's ephemeral range, which every outgoing connection's own port comes
    from (a port the kernel hands out for bind(0) may be one's a moment later)."""
    high = _ephemeral_low() - 1
    low = max(1024, high - 12000)
    for _ in range(50):
        port = random.randint(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerExited(HallclockError):
    """Mosquitto stopped at once (most likely its port was taken meanwhile)."""


class Broker:
    """A Mosquitto process on a configuration directory (tests, hall-simulate,
    ``hallclock broker``).  ``extra`` lines go into a run-time copy of the
    configuration (e.g. ``user root`` for a test directory the ``mosquitto``
    user cannot reach)."""

    def __init__(self, folder, extra=(), log=None, popen=subprocess.Popen):
        self.popen = popen  # (hallclock rehearse: a Mosquitto that dies with it)
        self.folder = os.path.abspath(folder)
        self.conf = check_dir(self.folder)
        self.extra = list(extra)
        self.log = log
        self.proc = None
        self.port, self.host = listen_port(self.folder)

    def start(self, timeout=10.0):
        conf = self.conf
        if self.extra:
            conf = os.path.join(self.folder, "run.conf")
            with open(self.conf, encoding="utf-8") as f:
                text = f.read()
            with open(conf, "w", encoding="utf-8") as f:
                f.write("\n".join(self.extra) + "\n" + text)
        err = self.log if self.log is not None else subprocess.DEVNULL
        self.proc = self.popen([mosquitto_binary(), "-c", conf],
                                     stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerExited(f"mosquitto exited at once (status {self.proc.returncode}); "
                                   f"check {conf} (is port {self.port} taken?)")
            try:
                socket.create_connection((self.host, self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise HallclockError(f"mosquitto did not listen on {self.host}:{self.port} "
                             f"within {timeout:.0f} s")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def reachable_by_broker(folder):
    """None if Mosquitto (dropping to ``mosquitto`` when root) can read its
    files in ``folder``, else a message naming the cause."""
    if os.geteuid() != 0:
        return None
    user = _mosquitto_user()
    if user is None:
        return None
    path = os.path.abspath(folder)
    parts = []
    while True:
        parts.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for p in parts:
        st = os.stat(p)
        if st.st_uid == user.pw_uid:
            continue
        if not st.st_mode & 0o001 and not (st.st_gid == user.pw_gid and st.st_mode & 0o010):
            return (f"the mosquitto user cannot enter {p} (mode {st.st_mode & 0o777:o}); "
                    "put the hall folder where it can (e.g. /srv/hallclock) or "
                    "chmod o+x the folders above it")
    return None


# -- several halls, one office (docs/network.md "Several halls") --------------
OFFICE_TOOLS = ("office", "viewer")  # the office's own logins: they only read
BRIDGE_QUEUE = 100000  # frames a hall broker keeps for an office it cannot reach
BRIDGE_QUEUE_BYTES = 64 * 1024 * 1024  # ... and their bytes (a frame is under 200 B)


def bridge_user(hall):
    """The office login of one hall's bridge."""
    return f"bridge-{hall}"


def parse_halls(text):
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise BadInput("--halls: give the halls' names, e.g. --halls hall-a,hall-b")
    for n in names:
        check_name("hall name", n)
    if len(set(names)) != len(names):
        raise BadInput("--halls: a hall name is given twice")
    return names


def office_acl_text(halls):
    """Each hall's bridge may only write its own hall's shipped log and read
    the office's acknowledgements of it (nothing of another hall); the
    ``office`` login reads every hall's log and writes only the
    acknowledgements; ``viewer`` only reads."""
    lines = ["# hallclock office: who may read and write which topic (docs/network.md)", ""]
    lines += ["user office", f"topic read {topic('+', 'office', 'log')}",
              f"topic write {topic('+', 'office', 'ack')}", ""]
    lines += ["user viewer", f"topic read {topic('+', 'office', 'log')}", ""]
    for h in halls:
        lines += [f"user {bridge_user(h)}", f"topic write {topic(h, 'office', 'log')}",
                  f"topic read {topic(h, 'office', 'ack')}", ""]
    return "\n".join(lines)


def office_conf_text(folder, port, bind, local_port, halls, tls=None):
    """mosquitto.conf for the office: its tools on 127.0.0.1:``local_port``,
    the halls' bridges on ``port`` (``bind``), a TLS listener when asked.
    Client id = user name on the halls' listeners: one bridge per hall, which
    nobody else can take over; retained messages off, as in a hall."""
    text = conf_text(folder, port, bind, tls, local_port, clocks=())
    text = text.replace("# hallclock broker for one hall", "# hallclock broker for the office")
    text = text.replace("# the hall: the clocks (plaintext MQTT)",
                        "# the halls' bridges (plaintext MQTT)")
    text = text.replace("# the hall over TLS", "# the halls' bridges over TLS")
    text = text.replace("(hallclock log/referee/console/hall-display --broker",
                        "(hallclock office, audit's copies, views: --broker")
    return text.replace(f"max_connections {hall_connections(())}",
                        f"max_connections {2 * len(halls) + 16}")


def write_office_config(out, halls, port=1883, bind=None, local_port=None, tls=None):
    """DIR/mosquitto.conf, passwords, acl, credentials.json (the office's
    tools' logins and every bridge's) and halls/<hall>.json: the one login a
    hall's laptop gets (``broker-config --office-credentials``)."""
    out, local_port = _fresh_dir(out, port, tls, local_port, "halls", "a configuration",
                                 "the halls' bridges")
    creds = {t: {"user": t, "password": secrets.token_urlsafe(18)} for t in OFFICE_TOOLS}
    for h in halls:
        creds[bridge_user(h)] = {"user": bridge_user(h), "password": secrets.token_urlsafe(18),
                                 "hall": h}

    def write(name, text, mode=0o600):
        return write_private(out, name, text, mode)

    write("passwords", passwords_text(creds))
    write("acl", office_acl_text(halls) + "\n")
    write("mosquitto.conf", office_conf_text(out, port, bind, local_port, halls, tls), 0o644)
    write("credentials.json", json.dumps(creds, indent=2) + "\n")
    for h in halls:
        entry = dict(creds[bridge_user(h)])
        if tls is not None:
            entry["ca"] = tls[1]
        write(os.path.join("halls", h + ".json"), json.dumps(entry, indent=2) + "\n")
    _give_to_broker([os.path.join(out, "passwords"), os.path.join(out, "acl"),
                     os.path.join(out, "data")])
    return creds


def load_bridge_login(path, hall):
    """The hall's bridge login from ``office-config``'s halls/<hall>.json
    (or the office's whole credentials.json): {user, password, hall}."""
    creds = None
    try:
        with open(path, encoding="utf-8") as f:
            creds = json.load(f)
    except OSError as exc:
        raise BadInput(f"cannot read --office-credentials {path}: {exc.strerror}; give the "
                       "halls/<hall>.json 'hallclock office-config' wrote") from None
    except ValueError as exc:
        raise BadInput(f"--office-credentials {path} is not JSON ({exc})") from None
    if isinstance(creds, dict) and bridge_user(hall) in creds:
        creds = creds[bridge_user(hall)]  # the office's credentials.json
    if not (isinstance(creds, dict) and isinstance(creds.get("user"), str)
            and isinstance(creds.get("password"), str)):
        raise BadInput(f"--office-credentials {path}: expected the halls/<hall>.json "
                       "'hallclock office-config' wrote")
    if creds.get("hall") != hall:
        raise BadInput(f"--office-credentials {path} is the login of hall "
                       f"{creds.get('hall')!r}, not of --hall {hall}: give "
                       f"halls/{hall}.json from the office's folder")
    return creds


def bridge_text(hall, office, login, cafile=None):
    """The hall broker's bridge to the office (Mosquitto's own bridging, as
    Mosquitto 2.0.11 has it).  Only the hall's shipped log goes out
    (hallclock.net.ship), and only the office's acknowledgements of it come
    in: two topics of this hall, one each way, so nothing can loop back and
    nothing of a clock's crosses (the clocks' frames stay in the hall).  QoS
    1 with a persistent session on both sides (a message the office has not
    acknowledged is sent again after a reconnect: the office may get it
    twice, and drops the copy); no retained flag goes out, and no
    notifications (Mosquitto sends them retained, which the office refuses).
    Whatever a hop loses, the hall's logger sends again from the office's
    word (the end-to-end acknowledgement), so the bridge's queue is a
    speed-up, not the guarantee."""
    host, port = office
    lines = [
        "",
        "# the bridge to the tournament office (hallclock broker-config --office)",
        f"connection hallclock-{hall}",
        f"address {host}:{port}",
        "bridge_protocol_version mqttv311",
        f"remote_clientid {bridge_user(hall)}",
        f"remote_username {login['user']}",
        f"remote_password {login['password']}",
        f"local_clientid {bridge_user(hall)}-local",
        "cleansession false",
        "local_cleansession false",
        "try_private true",
        "notifications false",
        "bridge_outgoing_retain false",
        "bridge_attempt_unsubscribe false",
        "start_type automatic",
        "restart_timeout 2 30",
        "keepalive_interval 30",
        f"topic {topic(hall, 'office', 'log')} out 1",
        f"topic {topic(hall, 'office', 'ack')} in 1",
    ]
    if cafile is not None:
        lines += [f"bridge_cafile {os.path.abspath(cafile)}", "bridge_tls_version tlsv1.2",
                  "bridge_insecure false"]
    return "\n".join(lines) + "\n"


def queue_text():
    """How much a hall broker keeps for a client it cannot reach (the
    bridge among them) instead of Mosquitto's 1 000 messages."""
    # the logger ships the log at QoS 0 and every other subscriber (clocks,
    # the laptop's tools) subscribes at QoS 0: only the bridge's QoS 1
    # subscription is upgraded, so what the logger ships is queued for it
    return ("upgrade_outgoing_qos true\n"
            f"max_queued_messages {BRIDGE_QUEUE}\n"
            f"max_queued_bytes {BRIDGE_QUEUE_BYTES}\n")


def add_bridge(out, hall, office, login, cafile=None):
    """Put the bridge into the hall's mosquitto.conf (broker-config just wrote
    it): the file then holds a password, so only its owner reads it."""
    conf = os.path.join(os.path.abspath(out), "mosquitto.conf")
    with open(conf, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    # the queue limits are global options: before the first listener
    first = next(i for i, ln in enumerate(lines) if ln.startswith("listener "))
    while first > 0 and lines[first - 1].startswith("#"):
        first -= 1
    text = "\n".join(lines[:first]) + "\n" + queue_text() + "\n" + "\n".join(lines[first:])
    if cafile is not None:
        # a copy in the hall's folder: Mosquitto reads it as its own user, at each connect
        copy = os.path.join(os.path.abspath(out), "office-ca.crt")
        shutil.copyfile(cafile, copy)
        os.chmod(copy, 0o644)
        _give_to_broker([copy])
        cafile = copy
    text += bridge_text(hall, office, login, cafile)
    replace_private(conf, text)
    _give_to_broker([conf])
    # the hall's logger ships the log (hallclock.net.ship) when its login says so
    path = os.path.join(os.path.abspath(out), "credentials.json")
    creds = load_credentials(path)
    creds["logger"]["office"] = "%s:%d" % tuple(office)
    replace_private(path, json.dumps(creds, indent=2) + "\n")
