"""Check a static HTML site as a reader sees it, in headless Chromium driven over the Chrome
DevTools Protocol (a test helper). :func:`check_site` opens ``index.html``, follows every
internal link and returns one line per problem: console errors and uncaught exceptions,
images that do not display, links to missing files or anchors, sections with nothing but a
heading, terms printed over their values, anything loaded from the network (the reports
must open offline, copied anywhere).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlsplit
from urllib.request import url2pathname

import websocket

BINARIES = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT = 30.0  # seconds for any one wait: a hung browser fails the test, never hangs CI
MAX_PAGES = 500
PROFILE, LOG = "profile", "chromium.log"  # in the temporary folder of one launch
VIEWPORT = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}  # a laptop
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # CI runs as root in a container, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--remote-debugging-port=0",  # any free port, written to DevToolsActivePort
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",  # Debian's launcher loads its extension folder otherwise
    "--hide-scrollbars",  # screenshots alike on every machine
    # Nothing resolves: the browser itself stays offline (pages' own requests are
    # intercepted and reported before they get this far).
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
PAGE_FACTS = (Path(__file__).parent / "page_facts.js").read_text()


def chromium_path() -> str | None:
    """The first Chromium or Chrome binary on ``PATH``, or None."""
    return next(filter(None, map(shutil.which, BINARIES)), None)


class Browser:
    """One headless Chromium with one page, spoken to over the DevTools websocket."""

    def __init__(self, ws: websocket.WebSocket, pid: int, profile: Path, timeout: float) -> None:
        self.pid, self.profile, self.timeout = pid, profile, timeout
        self.events: list[dict[str, Any]] = []
        self._ws = ws
        self._ids = 0
        self._session: str | None = None  # browser-level commands until a page is attached
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        attached = self.send("Target.attachToTarget", targetId=target, flatten=True)
        self._session = attached["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")
        # Every http(s) request of the page pauses here; _dispatch records and fails it.
        patterns = [{"urlPattern": "http://*"}, {"urlPattern": "https://*"}]
        self.send("Fetch.enable", patterns=patterns)
        self.send("Emulation.setDeviceMetricsOverride", **VIEWPORT)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run one CDP command on the page and return its result."""
        ident = self._post(method, params)
        reply = self._until(lambda m: m.get("id") == ident, method)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def wait_for(self, event: str) -> None:
        """Return once ``event`` arrived since :attr:`events` was last cleared."""
        if not any(e["method"] == event for e in self.events):
            self._until(lambda m: m.get("method") == event, event)

    def _post(self, method: str, params: dict[str, Any]) -> int:
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params}
        if self._session:
            message["sessionId"] = self._session
        self._ws.send(json.dumps(message))
        return self._ids

    def _until(self, match: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while (left := deadline - time.monotonic()) > 0:
            self._ws.settimeout(left)
            try:
                message = json.loads(self._ws.recv())
            except websocket.WebSocketTimeoutException:
                break
            if "method" in message:
                self._dispatch(message)
            if match(message):
                return message
        raise TimeoutError(f"Chromium: no answer to {what} within {self.timeout:g} s")

    def _dispatch(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event["method"] == "Fetch.requestPaused":
            # Fire and forget: the reply carries nothing, and waiting here could recurse.
            params = {"requestId": event["params"]["requestId"], "errorReason": "BlockedByClient"}
            self._post("Fetch.failRequest", params)


@contextmanager
def launch(binary: str | None = None, timeout: float = TIMEOUT) -> Iterator[Browser]:
    """A fresh headless Chromium with a temporary profile; both are gone on exit, errors
    included."""
    binary = binary or chromium_path()
    if binary is None:
        raise FileNotFoundError(f"no Chromium binary on PATH (tried {', '.join(BINARIES)})")
    tmp = Path(tempfile.mkdtemp(prefix="tpdisc-chromium-"))
    proc: subprocess.Popen[bytes] | None = None
    ws: websocket.WebSocket | None = None
    try:
        with (tmp / LOG).open("wb") as out:
            # Its own session, so that its helper processes can be stopped as one group.
            args = [binary, *FLAGS, f"--user-data-dir={tmp / PROFILE}", "about:blank"]
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
            )
        address = _devtools_address(proc, tmp, timeout)
        # Chromium refuses websockets that send an Origin header it was not told to allow.
        ws = websocket.create_connection(address, timeout=timeout, suppress_origin=True)
        yield Browser(ws, proc.pid, tmp / PROFILE, timeout)
    finally:
        if ws is not None:
            ws.close()
        if proc is not None:
            _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def _devtools_address(proc: subprocess.Popen[bytes], tmp: Path, timeout: float) -> str:
    port_file = tmp / PROFILE / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (tmp / LOG).read_text(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(f"Chromium exited with {proc.returncode}: {' | '.join(tail)}")
        lines = port_file.read_text().split() if port_file.is_file() else []
        if len(lines) == 2:  # written in one go, but it may be read half-written
            return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        time.sleep(0.05)
    raise TimeoutError(f"Chromium wrote no {port_file.name} within {timeout:g} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    # Renderers and helpers that outlived the browser process are in its group.
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def check_site(
    index: Path,
    screenshot: Path | None = None,
    *,
    binary: str | None = None,
    max_pages: int = MAX_PAGES,
    timeout: float = TIMEOUT,
) -> list[str]:
    """Problems of the site whose front page is ``index``, one line each naming the page
    (empty: none). With ``screenshot``, a PNG of the front page is written there."""
    index = Path(index).resolve()
    root = index.parent
    problems: list[str] = []
    ids: dict[Path, set[str]] = {}
    anchors: list[tuple[str, str, Path, str]] = []  # page, link, target, fragment
    queue = deque([index])
    with launch(binary, timeout) as browser:
        while queue:
            if len(ids) == max_pages:
                problems.append(f"{index.name}: over {max_pages} pages, {len(queue)} unchecked")
                break
            page = queue.popleft()
            name = page.relative_to(root).as_posix()
            facts = _load(browser, page, timeout)
            ids[page] = set(facts["ids"])
            for raw, target, fragment in _check(name, root, facts, browser.events, problems):
                anchors.append((name, raw, target, fragment))
                inside = target.is_relative_to(root) and target.suffix in (".html", ".htm")
                if inside and target not in ids and target not in queue:
                    queue.append(target)
            if screenshot is not None and len(ids) == 1:
                _screenshot(browser, screenshot)
    for name, raw, target, fragment in anchors:
        if fragment and fragment != "top" and target in ids and fragment not in ids[target]:
            problems.append(f"{name}: broken link {raw}: no id {fragment!r} in {target.name}")
    return problems


def _load(browser: Browser, page: Path, timeout: float) -> dict[str, Any]:
    browser.events.clear()
    navigation = browser.send("Page.navigate", url=page.as_uri())
    if "errorText" in navigation:
        raise RuntimeError(f"{page}: {navigation['errorText']}")
    browser.wait_for("Page.loadEventFired")
    # Images get half the time, so that a stuck one is reported rather than a timeout.
    expression = f"({PAGE_FACTS})({int(timeout * 500)})"
    result = browser.send(
        "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
    )
    if "exceptionDetails" in result:
        raise RuntimeError(f"{page}: {result['exceptionDetails']}")
    return result["result"]["value"]


def _check(
    name: str, root: Path, facts: dict[str, Any], events: list[dict[str, Any]], problems: list[str]
) -> list[tuple[str, Path, str]]:
    """Append the problems of one page; return its links to local files that exist, with
    their fragments. A resource is reported once, by the first check that finds it: a
    missing image is a broken link, not also a blank image and a failed load."""
    reported: set[str] = set()
    links: list[tuple[str, Path, str]] = []

    def report(url: str, message: str) -> None:
        if url not in reported:
            reported.add(url)
            problems.append(f"{name}: {message}")

    for ref in facts["refs"]:
        url, fragment = urldefrag(ref["url"])
        scheme = urlsplit(url).scheme
        if scheme in ("http", "https") and ref["tag"] not in ("a", "area"):
            report(url, f"loads {ref['raw']} from the network")
        elif scheme == "file":
            target = Path(url2pathname(urlsplit(url).path))
            if not target.exists():
                shown = target.relative_to(root) if target.is_relative_to(root) else target
                report(url, f"broken link {ref['raw']}: no file {shown}")
            else:
                links.append((ref["raw"], target, unquote(fragment)))
    for image in facts["images"]:
        if not image["complete"]:
            report(image["url"], f"image {image['raw']} did not finish loading")
        elif image["width"] == 0:
            report(image["url"], f"image {image['raw']} does not display (not an image?)")
    for section in facts["empty"]:
        problems.append(f"{name}: empty section {section.strip()!r}: nothing but its heading")
    for term in facts["overprinted"]:
        problems.append(f"{name}: {term!r} is printed over its value")
    for event in events:
        method, params = event["method"], event["params"]
        if method == "Fetch.requestPaused":
            url = urldefrag(params["request"]["url"])[0]
            report(url, f"loads {url} from the network")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            problems.append(f"{name}: console {params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details["text"]
            problems.append(f"{name}: uncaught exception: {text.splitlines()[0]}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            url, text = urldefrag(params["entry"].get("url", ""))[0], params["entry"]["text"]
            report(url or text, f"browser error: {text} {url}".rstrip())
    return links


def _screenshot(browser: Browser, path: Path) -> None:
    height = browser.send("Page.getLayoutMetrics")["cssContentSize"]["height"]
    # Chromium cannot capture textures taller than 16,384 pixels.
    clip = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": min(height, 16384), "scale": 1}
    shot = browser.send(
        "Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True
    )
    Path(path).write_bytes(base64.b64decode(shot["data"]))
