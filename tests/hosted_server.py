"""A real OpenAI-compatible server for the hosted-judge tests, and a counting proxy in front of it.

``start_llama_server(gguf)`` runs llama-cpp-python's server (``python -m llama_cpp.server``) on
a free port of 127.0.0.1. ``CountingProxy(upstream)`` forwards every request to it through
``http.server`` in a thread and records what it saw: requests, the most in flight at once, and
answers it injected instead of forwarding (an HTTP status such as 429/503, or a whole 200 body),
queued with :meth:`CountingProxy.inject`. Nothing inside LiteLLM is replaced.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_llama_server(gguf: Path, log: Path, *, threads: int = 2, timeout: float = 180.0) -> tuple[subprocess.Popen, str]:
    """Start the server and wait until ``/v1/models`` answers; returns (process, base URL ``.../v1``).

    Raises
    ------
    RuntimeError
        If it exits or does not answer within ``timeout`` seconds (the log's tail is shown).
    """
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "4096", "--n_threads", str(threads), "--n_threads_batch", str(threads)],
            stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(base + "/models", timeout=2):
                return process, base
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"llama_cpp.server did not start: {log.read_text(errors='replace')[-2000:]}")


class CountingProxy:
    """HTTP proxy on a free port of 127.0.0.1 that counts requests and can inject answers.

    Attributes
    ----------
    url : str
        Base URL to give a client (``http://127.0.0.1:<port>/v1``).
    requests : int
        POST requests received (injected ones included).
    forwarded : int
        Requests that reached the server.
    peak_in_flight : int
        Most requests in flight at once.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.split("://", 1)[1].split("/", 1)[0]
        self._lock = threading.Lock()
        self._injected: deque[int | dict[str, Any]] = deque()
        self.reset()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with proxy._lock:
                    proxy.requests += 1
                    proxy.in_flight += 1
                    proxy.peak_in_flight = max(proxy.peak_in_flight, proxy.in_flight)
                    injected = proxy._injected.popleft() if proxy._injected else None
                try:
                    if isinstance(injected, int):
                        time.sleep(proxy.delay)
                        self._send(injected, json.dumps({"error": {"message": f"injected {injected}",
                                                                   "type": "injected", "code": injected}}).encode())
                    elif injected is not None:
                        self._send(200, json.dumps(injected).encode())
                    else:
                        time.sleep(proxy.delay)
                        status, payload = proxy._forward(self.path, body)
                        self._send(status, payload)
                finally:
                    with proxy._lock:
                        proxy.in_flight -= 1

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _forward(self, path: str, body: bytes) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(self.upstream, timeout=600)
        try:
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = response.read()
            with self._lock:
                self.forwarded += 1
            return response.status, payload
        finally:
            connection.close()

    def inject(self, *answers: int | dict[str, Any]) -> None:
        """Answer the next requests with these (an HTTP error status, or a 200 JSON body) instead of forwarding."""
        self._injected.extend(answers)

    def reset(self, delay: float = 0.0) -> None:
        """Zero the counters and drop pending injections; ``delay`` seconds are added to each answer."""
        with self._lock:
            self.requests = self.forwarded = self.in_flight = self.peak_in_flight = 0
            self._injected.clear()
            self.delay = delay

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
