"""What the laptop's two web pages share: the projector (``hall-display``,
projector.py) and the referee console (``console``, refconsole.py).

Both serve a few static files and a JSON answer or two; this module holds
the server, the handler's common half, the log path checks, binding with one
clear line for every way it fails, and the serve-until-Ctrl-C loop of the
commands.

The server keeps serving whatever the hall's network does to it (docs/network.md,
"Threat model"): a connection gets a worker only once its whole request has
arrived (:class:`PageServer`): until then one reader thread holds it, with a
deadline (``REQUEST_S``) for the whole request and a cap (``MAX_WAITING``) on
connections waiting, the oldest dropped first; so idle or slow clients, any
number of them, never hold a worker, and a new request is answered as soon as
it is in.  A request whose ``Host`` is not this machine is refused (a page on
another site cannot reach the console through the browser: DNS rebinding).
"""
import collections
import errno
import io
import ipaddress
import json
import os
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer

from ..errors import BadInput

REQUEST_S = 5.0  # a request's head and body must be in within this, from its connect
MAX_WAITING = 256  # connections whose request is not yet in (well under 1024 files)
MAX_HEAD = 16384  # bytes of request line + headers
MAX_BODY_READ = 65536  # a longer body is not read ahead (the handler refuses it)
WORKERS = 8  # requests answered at once
SEND_S = 5.0  # a client that does not take its answer within this is dropped
RATE_PER_S = 10  # requests a second per address on the pages' open paths (RateLimit)
RATE_BURST = 40

HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"
CSS = "text/css; charset=utf-8"


class PageHandler(BaseHTTPRequestHandler):
    """``files`` maps a URL path to (file name in ``web``, content type)."""

    files: dict = {}
    web = ""
    timeout = SEND_S

    def setup(self):
        conn = self.request
        if isinstance(conn, _Ready):  # the request was read ahead (PageServer)
            self.connection = conn.sock
            conn.sock.settimeout(self.timeout)
            self.rfile = io.BytesIO(bytes(conn.data))
            self.wfile = conn.sock.makefile("wb")
        else:
            BaseHTTPRequestHandler.setup(self)

    def parse_request(self):
        if not BaseHTTPRequestHandler.parse_request(self):
            return False
        host = self.headers.get("Host")
        if not host_allowed(host, self.server):
            self.close_connection = True
            self._send(421, "text/plain; charset=utf-8",
                       b"this server answers to its own address only (Host header)\n")
            return False
        return True

    def send_file(self, path):
        """Serve the page's static file ``path``, or 404.  Returns nothing."""
        entry = self.files.get(path)
        if entry is None:
            self._send(404, "text/plain; charset=utf-8", b"not found\n")
            return
        with open(os.path.join(self.web, entry[0]), "rb") as f:
            self._send(200, entry[1], f.read())

    def _json(self, code, obj, headers=()):
        self._send(code, "application/json", json.dumps(obj).encode(), headers)

    def too_many(self, limit, unless=" without the token"):
        """Answer 429 (and True) when this request's address is over ``limit``
        (``unless``: what would lift the limit, for the answer's words)."""
        address = self.client_address[0] if self.client_address else "?"
        if limit.take(address):
            return False
        self.close_connection = True
        wait = limit.wait_s(address)
        self._json(429, {"error": f"too many requests from {address}: at most "
                                  f"{limit.rate:g} a second{unless}; ask again in "
                                  f"{wait} s"}, (("Retry-After", str(wait)),))
        return True

    def _send(self, code, ctype, body, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 (the base name); the terminal shows the URL only
        pass


def _host_name(header):
    """The host part of a Host header ('[::1]:8080' -> '::1'), lower case."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    if h.count(":") == 1:
        h = h.split(":")[0]
    return h.rstrip(".")


def host_allowed(header, server):
    """True if a request's Host names this machine: an address (any: the
    page is reached by the laptop's address on the hall network), localhost,
    this machine's host name, or the name the server was bound to.  A name
    of another site (a rebound DNS name) is refused."""
    if not header:
        return False
    name = _host_name(header)
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return name in own_names(server) or name.endswith(".localhost")


def own_names(server):
    """The names this machine answers to (no DNS lookup: a hall often has no
    DNS), computed once per server."""
    names = getattr(server, "_own_names", None)
    if names is None:
        host = socket.gethostname().lower()
        names = {"localhost", host, host + ".local"}
        bound = getattr(server, "bound_name", None)
        if bound:
            names.add(bound.lower())
        try:
            server._own_names = names
        except AttributeError:
            pass
    return names


class _Ready:
    """A connection whose whole request is in: what a worker answers."""

    __slots__ = ("sock", "data")

    def __init__(self, sock, data):
        self.sock = sock
        self.data = data


def _complete(data):
    """True once ``data`` holds a request's head and (Content-Length) body."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        end = data.find(b"\n\n")
        if end < 0:
            return False
        head_len = end + 2
    else:
        head_len = end + 4
    length = 0
    for line in bytes(data[:end]).split(b"\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                length = 0
    if length <= 0 or length > MAX_BODY_READ:
        return True
    return len(data) >= head_len + length


class PageServer(HTTPServer):
    """An HTTP server that gives a connection to one of ``WORKERS`` threads
    only once its request is complete.  One reader thread collects every
    waiting connection's bytes (non-blocking, one selector), drops a
    connection whose request is not in within ``REQUEST_S`` of its connect
    or whose head outgrows ``MAX_HEAD``, and, with ``MAX_WAITING``
    connections waiting, drops the oldest to take a new one."""

    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a burst of connects is not refused
    request_s = REQUEST_S
    max_waiting = MAX_WAITING

    def __init__(self, address, handler):
        self.reader = None
        self.closing = False
        self.waiting = collections.OrderedDict()  # fd -> [sock, data, deadline]
        self.incoming = collections.deque()
        self.dropped = 0  # connections dropped unanswered (slow, idle, too many)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="page")
        HTTPServer.__init__(self, address, handler)  # on failure: server_close, raised
        self.bound_name = address[0]
        self.reader = threading.Thread(target=self._read_loop, daemon=True, name="page-reader")
        self.reader.start()

    # the listening thread (serve_forever) hands every accepted socket over
    def process_request(self, request, client_address):
        request.setblocking(False)
        self.incoming.append(request)
        try:
            os.write(self.wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def _read_loop(self):
        while not self.closing:
            try:
                self._read_pass()
            except Exception:  # noqa: BLE001 (the reader outlives any one connection)
                if self.closing:
                    return
                time.sleep(0.01)  # a broken pass is not retried in a hot loop

    def _read_pass(self):
        events = self.selector.select(0.25)
        now = time.monotonic()
        for key, _ev in events:
            if key.data is None:
                try:
                    while os.read(self.wake_r, 4096):
                        pass
                except (BlockingIOError, OSError):
                    pass
                continue
            self._readable(key.fd)
        while self.incoming:
            self._take(self.incoming.popleft(), now)
        while self.waiting:  # oldest first: expired ones lead
            fd, entry = next(iter(self.waiting.items()))
            if entry[2] > now:
                break
            self._drop(fd)

    def _take(self, sock, now):
        while len(self.waiting) >= self.max_waiting:
            self._drop(next(iter(self.waiting)))
        try:
            fd = sock.fileno()
            self.selector.register(fd, selectors.EVENT_READ, True)
        except (OSError, ValueError):
            sock.close()
            return
        self.waiting[fd] = [sock, bytearray(), now + self.request_s]

    def _readable(self, fd):
        entry = self.waiting.get(fd)
        if entry is None:
            return
        sock, data = entry[0], entry[1]
        try:
            chunk = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(fd)
            return
        data += chunk
        if _complete(data):
            self._forget(fd)
            self.pool.submit(self._answer, sock, data)
        elif len(data) > MAX_HEAD + MAX_BODY_READ or (
                data.find(b"\r\n\r\n") < 0 and len(data) > MAX_HEAD):
            self._drop(fd)

    def _forget(self, fd):
        self.waiting.pop(fd, None)
        try:
            self.selector.unregister(fd)
        except (KeyError, ValueError, OSError):
            pass

    def _drop(self, fd):
        entry = self.waiting.get(fd)
        self._forget(fd)
        if entry is not None:
            self.dropped += 1
            try:
                entry[0].close()
            except OSError:
                pass

    def _answer(self, sock, data):
        try:
            sock.setblocking(True)
            self.finish_request(_Ready(sock, data), sock.getpeername())
        except Exception:  # one request's failure (a client gone) is not the server's
            pass
        finally:
            self.shutdown_request(sock)

    def server_close(self):
        HTTPServer.server_close(self)
        if self.closing:
            return
        self.closing = True
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass
        if self.reader is not None:
            self.reader.join(2)
        for fd in list(self.waiting):
            self._drop(fd)
        self.pool.shutdown(wait=False)
        for fd in (self.wake_r, self.wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.selector.close()
        except OSError:
            pass


class RateLimit:
    """Requests per client address: a bucket of ``burst`` requests that
    refills at ``rate`` a second (the console's own page asks about three a
    second, a reload six more at once).  ``take(address)`` is False when the
    address has none left: the caller answers 429.  At most ``max_addresses``
    buckets are kept; beyond it the longest idle one is forgotten (a full
    bucket, so forgetting it gives nobody more)."""

    def __init__(self, rate=RATE_PER_S, burst=RATE_BURST, max_addresses=4096,
                 clock=time.monotonic):
        self.rate = float(rate)
        self.burst = float(burst)
        self.max_addresses = max_addresses
        self.clock = clock
        self.buckets = collections.OrderedDict()  # address -> [tokens, time], idlest first
        self.refused = 0
        self.lock = threading.Lock()

    def take(self, address):
        with self.lock:
            now = self.clock()
            b = self.buckets.pop(address, None)
            if b is None:
                b = [self.burst, now]
                while len(self.buckets) >= self.max_addresses:
                    self.buckets.popitem(last=False)
            b[0] = min(self.burst, b[0] + (now - b[1]) * self.rate)
            b[1] = now
            self.buckets[address] = b
            if b[0] >= 1.0:
                b[0] -= 1.0
                return True
            self.refused += 1
            return False

    def wait_s(self, address):
        """Seconds until ``address`` may ask again (Retry-After)."""
        with self.lock:
            b = self.buckets.get(address)
            if b is None:
                return 0
            return max(1, int((1.0 - b[0]) / self.rate + 0.999))


def check_log_path(log, what="the log file"):
    """``--log`` may not exist yet (it is waited for), but its folder must."""
    folder = os.path.dirname(os.path.abspath(log))
    if not os.path.isdir(folder):
        raise BadInput(f"--log {log}: the folder {folder} does not exist")
    if os.path.isdir(log):
        raise BadInput(f"--log {log} is a folder; give {what}")


def bind(host, port, handler, other="another hall-display or console?"):
    """A server (not yet serving) on host:port; port 0 picks a free one.
    Every way binding fails is bad input with one line naming what to change."""
    if not 0 <= port <= 65535:
        raise BadInput(f"--http-port {port}: an HTTP port is 0 to 65535")
    try:
        server = PageServer((host, port), handler)
    except socket.gaierror as exc:
        raise BadInput(f"--host {host}: not an address or a host name this machine knows "
                       f"({exc.strerror}); give 127.0.0.1 (this machine), 0.0.0.0 (every "
                       "network) or one of this machine's addresses") from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise BadInput(f"port {port} on {host} is already in use ({other}); "
                           "choose another --http-port") from None
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            raise BadInput(f"--host {host} is not an address of this machine "
                           f"({exc.strerror}); give 127.0.0.1, 0.0.0.0 or one of its "
                           "network addresses") from None
        if exc.errno == errno.EACCES:
            raise BadInput(f"port {port}: not allowed to listen there ({exc.strerror}); "
                           "ports below 1024 need root: choose a --http-port from 1024 on") from None
        raise BadInput(f"cannot serve on {host}:{port} ({exc.strerror})") from None
    return server


def url_of(server):
    host, port = server.server_address[:2]
    if host in ("0.0.0.0", ""):
        host = "localhost"
    return f"http://{host}:{port}/"


def serve(server, close=()):
    """Serve until Ctrl-C, then close the server and each of ``close``."""
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        for c in close:
            c()
    return 0
