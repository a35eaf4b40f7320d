"""A minimal headless-Chromium driver over the DevTools protocol, on a pipe (no websocket, no deps).

``--remote-debugging-pipe`` makes Chromium read protocol messages on file descriptor 3 and write
them on 4, each a JSON object ended by a NUL byte. That is all a test needs to load a page, read
the DOM, type into it, watch every network request it makes, and take a screenshot. Used by the
HTML report tests and ``benchmarks/bench_html.py``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

__all__ = ["Browser", "chromium_path"]

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--remote-debugging-pipe",
]


def chromium_path() -> str | None:
    """The Chromium binary (Debian's ``chromium`` package), or None when it is not installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _high_pipe() -> tuple[int, int]:
    read, write = os.pipe()
    ends = (
        fcntl.fcntl(read, fcntl.F_DUPFD_CLOEXEC, 10),
        fcntl.fcntl(write, fcntl.F_DUPFD_CLOEXEC, 10),
    )
    os.close(read)
    os.close(write)
    return ends


class Browser:
    """One headless Chromium with one page, driven synchronously."""

    def __init__(self, width: int = 1400, height: int = 1000, timeout: float = 60.0) -> None:
        binary = chromium_path()
        if binary is None:
            raise RuntimeError("chromium is not installed")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="mlb-chromium-")
        # The child's ends go above fd 10 first, so the dup2 onto 3 and 4 cannot clobber one.
        to_child_r, self._to_child = _high_pipe()
        self._from_child, from_child_w = _high_pipe()
        # the child's fd 3 reads our commands, its fd 4 writes replies
        self._proc = subprocess.Popen(
            [
                binary,
                *FLAGS,
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            # Chromium wants the pipe on exactly fds 3 and 4; only preexec_fn can place them there
            # (the tests start no threads while launching it).
            preexec_fn=lambda: (os.dup2(to_child_r, 3), os.dup2(from_child_w, 4)),  # noqa: PLW1509
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Network"):
            self.page(f"{domain}.enable")
        self.page(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    # -- protocol ------------------------------------------------------------------------------
    def _send(self, method: str, params: dict[str, Any], session: str | None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its reply; events meanwhile are kept in ``events``."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        return self.call(method, self.session, **params)

    def wait_event(self, method: str, since: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self.events[since:]:
                if event["method"] == method:
                    return event
            since = len(self.events)
            message = self._read(deadline)
            if "method" in message:
                self.events.append(message)

    # -- conveniences ---------------------------------------------------------------------------
    def open(self, url: str) -> None:
        """Load ``url`` afresh and wait for its load event.

        The page is emptied first: a navigation that only changes the ``#hash`` would otherwise
        stay in the same document and never fire a load event."""
        for target in ("about:blank", url):
            mark = len(self.events)
            self.page("Page.navigate", url=target)
            self.wait_event("Page.loadEventFired", mark)

    def eval(self, expression: str, *, await_promise: bool = False) -> Any:
        reply = self.page(
            "Runtime.evaluate",
            expression=expression,
            returnByValue=True,
            awaitPromise=await_promise,
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"page error: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """Poll ``expression`` until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.02)
        raise TimeoutError(f"never true: {expression}")

    def type_text(self, selector: str, text: str) -> None:
        """Focus an input and type into it as a user would (input events fire)."""
        self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        self.page("Input.insertText", text=text)

    def screenshot(self, clip: dict[str, float] | None = None) -> bytes:
        """A PNG of the viewport, or of ``clip`` ({x, y, width, height, scale}) in CSS pixels."""
        params: dict[str, Any] = {"format": "png"}
        if clip is not None:
            params["clip"] = {"scale": 1, **clip}
        return base64.b64decode(self.page("Page.captureScreenshot", **params)["data"])

    def requests(self) -> list[str]:
        """Every URL the page asked the network stack for since the browser started."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def exceptions(self) -> list[str]:
        return [
            json.dumps(e["params"]["exceptionDetails"])[:2000]
            for e in self.events
            if e["method"] == "Runtime.exceptionThrown"
        ]

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError, TimeoutError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
