"""HTTP calls to an OpenAI-compatible llama.cpp or vLLM server (standard library only).

Only the address the user gave is contacted: ``api_base`` (``http://host:port/v1``) for
``/models`` and ``/completions``, and its root (``api_base`` without the trailing ``/v1``) for
the server's own tokenize endpoint, which is not part of the OpenAI API:

- llama-cpp-python's server (``python -m llama_cpp.server``): ``POST /extras/tokenize``
  ``{"input": text}`` -> ``{"tokens": [...]}``;
- vLLM (``vllm serve``): ``POST /tokenize`` ``{"model": name, "prompt": text}`` ->
  ``{"tokens": [...]}``.

Which one a server is (its *flavor*) is found on the first call that needs it, by trying the
llama.cpp endpoint first; nothing is contacted when the client is built, so a server that is
down fails the requests of a call (error records), never the judge's load.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any, Literal

Flavor = Literal["llamacpp", "vllm"]

DEFAULT_TIMEOUT_S = 600.0
"""Seconds one HTTP call may take when ``LLMConfig.timeout`` is unset."""


class ServerCallError(Exception):
    """A call to the server failed (refused connection, timeout, HTTP error status, an answer
    without the fields asked for); the message says which, for an ``infrastructure:`` record."""


class ServerClient:
    """The calls a :class:`~.backend.ServerEngine` makes.

    Parameters
    ----------
    api_base : str
        The server's OpenAI-compatible base URL, e.g. ``"http://127.0.0.1:8080/v1"``.
    api_key : str, optional
        Sent as ``Authorization: Bearer <key>`` (``vllm serve --api-key``, ``llama_cpp.server --api_key``).
    headers : mapping of str to str, optional
        Sent with every call.
    timeout : float, optional
        Seconds per call (default :data:`DEFAULT_TIMEOUT_S`).
    flavor : "llamacpp" | "vllm", optional
        The server kind; found from its endpoints when None.
    """

    def __init__(self, api_base: str, *, api_key: str | None = None, headers: dict[str, str] | None = None,
                 timeout: float | None = None, flavor: Flavor | None = None) -> None:
        base = api_base.rstrip("/")
        self.api_base = base
        self.root = base[: -len("/v1")] if base.endswith("/v1") else base
        self.timeout = timeout or DEFAULT_TIMEOUT_S
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._flavor: Flavor | None = flavor
        self._model: str | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ raw calls
    def _call(self, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, headers=self._headers, method="GET" if body is None else "POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise ServerCallError(f"HTTP {exc.code} from {url}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerCallError(f"{url}: {type(reason).__name__}: {reason}") from exc
        try:
            answer = json.loads(payload)
        except ValueError as exc:
            raise ServerCallError(f"{url} answered with no JSON: {payload[:200]!r}") from exc
        if not isinstance(answer, dict):
            raise ServerCallError(f"{url} answered {type(answer).__name__}, not a JSON object")
        return answer

    # ------------------------------------------------------------------ what the server is
    def model(self) -> str:
        """The name the server serves (the first of ``GET /v1/models``), sent as ``model``."""
        if self._model is None:
            listed = self._call(self.api_base + "/models", None).get("data") or []
            if not listed or not isinstance(listed[0], dict) or "id" not in listed[0]:
                raise ServerCallError(f"{self.api_base}/models lists no model")
            self._model = str(listed[0]["id"])
        return self._model

    def flavor(self) -> Flavor:
        """``"llamacpp"`` or ``"vllm"``, from which tokenize endpoint answers (found once).

        Raises
        ------
        ServerCallError
            Neither answers (the server is down, or it is neither kind).
        """
        with self._lock:
            if self._flavor is None:
                try:
                    self._call(self.root + "/extras/tokenize", {"input": "a"})
                    self._flavor = "llamacpp"
                except ServerCallError as llama_error:
                    if not str(llama_error).startswith("HTTP 404"):
                        raise
                    try:
                        self._call(self.root + "/tokenize", {"model": self.model(), "prompt": "a"})
                    except ServerCallError as exc:
                        raise ServerCallError(f"{self.root} has neither llama.cpp's /extras/tokenize nor vLLM's "
                                              f"/tokenize endpoint ({exc})") from exc
                    self._flavor = "vllm"
            return self._flavor

    # ------------------------------------------------------------------ calls
    def tokenize(self, text: str) -> list[int]:
        """The server's token ids of ``text``, as its completions endpoint tokenizes a text prompt
        (special-token strings parsed, the model's BOS added when its vocabulary adds one)."""
        if self.flavor() == "llamacpp":
            answer = self._call(self.root + "/extras/tokenize", {"input": text})
        else:
            answer = self._call(self.root + "/tokenize", {"model": self.model(), "prompt": text})
        tokens = answer.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ServerCallError(f"the tokenize endpoint of {self.root} answered without token ids")
        return tokens

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/completions`` with ``body`` (``model`` added); the first choice and the usage."""
        answer = self._call(self.api_base + "/completions", {"model": self.model(), **body})
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ServerCallError(f"{self.api_base}/completions answered without choices")
        return {"choice": choices[0], "usage": answer.get("usage") or {}}
