"""What the laptop's two web pages share: the projector (``hall-display``,
projector.py) and the referee console (``console``, refconsole.py).

Both are a stdlib ``ThreadingHTTPServer`` serving a few static files and a
JSON answer or two; this module holds the handler's common half, the log
path checks, binding with one clear line for every way it fails, and the
serve-until-Ctrl-C loop of the commands.
"""
import errno
import json
import os
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .errors import BadInput

HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"
CSS = "text/css; charset=utf-8"


class PageHandler(BaseHTTPRequestHandler):
    """``files`` maps a URL path to (file name in ``web``, content type)."""

    files: dict = {}
    web = ""

    def send_file(self, path):
        """Serve the page's static file ``path``, or 404.  Returns nothing."""
        entry = self.files.get(path)
        if entry is None:
            self._send(404, "text/plain; charset=utf-8", b"not found\n")
            return
        with open(os.path.join(self.web, entry[0]), "rb") as f:
            self._send(200, entry[1], f.read())

    def _json(self, code, obj):
        self._send(code, "application/json", json.dumps(obj).encode())

    def _send(self, code, ctype, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 (the base name); the terminal shows the URL only
        pass


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
        server = ThreadingHTTPServer((host, port), handler)
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
    server.daemon_threads = True
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
