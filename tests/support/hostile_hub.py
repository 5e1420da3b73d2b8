"""Issue 38's stand-in hub that lies (tests/support/stand_in_hub.py, on 127.0.0.1 in a thread): sizes that lie,
bodies that never end or stop short, redirects to another host, pickles served under .safetensors names, a commit
hash that is a path, answers that are not JSON. Each case is `attnlab get` (hub_get.plan + download, as the
command runs them) against it, into a cache under the case's folder; what the case leaves there is the bench's
to see. Cases in the form of tests/support/hostile_actions.py (TEAM3.md's contract):

    hub_cases(d) -> {name: ("tests.support.hostile_hub:get_from", [trick, folder])}
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path
from types import SimpleNamespace

from tests.support import hostile_files as h
from tests.support.stand_in_hub import StandInHub, StandInRepo, _Handler

REPO = "acme/tiny"
PICKLE = pickle.dumps({"weights": [1.0, 2.0]}, protocol=2)  # a harmless pickle; it must never be unpickled
TRICKS = {
    "hub-size-larger-than-sent": "the API, HEAD and Content-Length promise twice the bytes sent",
    "hub-size-smaller-than-sent": "every size says half what is sent",
    "hub-endless-body": "model.safetensors' GET never ends (no length, bytes forever)",
    "hub-truncated-body": "the body stops half-way and resumes are refused",
    "hub-redirect-elsewhere": "the file's GET redirects to another host, which serves a pickle",
    "hub-redirect-loop": "the file's GET redirects to itself",
    "hub-pickle-as-safetensors": "model.safetensors holds a pickle",
    "hub-json-as-safetensors": "model.safetensors holds a header that lies about its tensors",
    "hub-huge-size": "the API says model.safetensors is 10 TB",
    "hub-negative-size": "the API says model.safetensors is -1 bytes",
    "hub-commit-is-a-path": "the API's commit hash is ../../../../outside",
    "hub-info-not-json": "the API answers HTML",
    "hub-info-endless": "the API's answer never ends",
    "hub-config-remote-code": "config.json asks for remote code the API did not report",
    "hub-config-deep": "config.json nests 100,000 levels deep",
    "hub-sibling-dotdot": "a sibling named ../model.safetensors",
}


class LyingHandler(_Handler):
    trick = ""

    def _answer(self, body: bool) -> None:
        path = self.path.split("?")[0]
        if path.startswith("/elsewhere/"):
            return self._raw(PICKLE, body)
        if path.startswith("/api/models/") and self.trick == "hub-info-not-json":
            return self._raw(b"<html>" * 1000, body, "text/html")
        if path.startswith("/api/models/") and self.trick == "hub-info-endless" and body:
            return self._endless(b'{"siblings": [' + b'{"rfilename": "x"},' * 1000)
        file = path.endswith("/model.safetensors") and "/resolve/" in path
        if file and self.command == "GET" and self.trick == "hub-endless-body":
            return self._endless(b"\0" * 65536)
        if file and self.command == "GET" and self.trick in ("hub-redirect-elsewhere", "hub-redirect-loop"):
            host = f"localhost:{self.server.server_address[1]}"
            to = f"http://{host}/elsewhere/model.safetensors" if self.trick == "hub-redirect-elsewhere" else self.path
            self.send_response(302)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return super()._answer(body)

    def send_header(self, keyword: str, value: str) -> None:
        lie = {"hub-size-larger-than-sent": 2.0, "hub-size-smaller-than-sent": 0.5}.get(self.trick)
        if lie and keyword in ("Content-Length", "X-Linked-Size") and value.isdigit() and int(value) > 100:
            value = str(int(int(value) * lie))
        super().send_header(keyword, value)

    def _json(self, value: object) -> None:
        if isinstance(value, dict) and "siblings" in value:
            for s in value["siblings"]:
                if s["rfilename"] == "model.safetensors":
                    size = {"hub-huge-size": 10 << 40, "hub-negative-size": -1}.get(self.trick)
                    lie = {"hub-size-larger-than-sent": 2.0, "hub-size-smaller-than-sent": 0.5}.get(self.trick)
                    size = int(s["size"] * lie) if lie else size
                    if size is not None:
                        s["size"] = s["lfs"]["size"] = size
            if self.trick == "hub-commit-is-a-path":
                value["sha"] = "../../../../outside"
            if self.trick == "hub-sibling-dotdot":
                value["siblings"].append({"rfilename": "../model.safetensors", "size": 10})
        super()._json(value)

    def _raw(self, data: bytes, body: bool, kind: str = "application/octet-stream") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _endless(self, start: bytes) -> None:
        """200 with no length, bytes until the client hangs up (or 30 s pass)."""
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(start)
            for _ in range(30 * 200):
                self.wfile.write(b"\0" * 65536 if b"[" not in start else b'{"rfilename": "x"},' * 3000)
        except OSError:
            pass


def repo_files(trick: str, folder: Path) -> dict[str, bytes]:
    """config.json + model.safetensors of the tiny GPT-2, as the trick serves them."""
    files = {p.name: p.read_bytes() for p in h.gpt2_folder(folder / "served").iterdir()}
    if trick == "hub-pickle-as-safetensors":
        files["model.safetensors"] = PICKLE
    if trick == "hub-json-as-safetensors":
        header = json.dumps({"w": {"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 4 << 40]}}).encode()
        files["model.safetensors"] = len(header).to_bytes(8, "little") + header
    if trick == "hub-config-remote-code":
        files["config.json"] = json.dumps(h.GPT2_CONFIG | {"auto_map": {"AutoModel": "x.Model"}}).encode()
    if trick == "hub-config-deep":
        files["config.json"] = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    return files


def get_from(trick: str, folder: str) -> str:
    """`attnlab get acme/tiny` from a hub playing `trick`, into <folder>/cache; the snapshot's path when it is
    downloaded (GetRefused, one line, when refused). Nothing is left under <folder> by a refusal but what the
    case itself wrote (served/)."""
    import huggingface_hub
    from huggingface_hub import file_download

    from attnlab.checkpoints import hub_get

    huggingface_hub.utils._detect_agent._fetch_registry = lambda: None  # loopback only
    file_download.time = SimpleNamespace(sleep=lambda s: None)  # its five one-second waits before resuming
    base = Path(folder)
    served = repo_files(trick, base)
    shutil.rmtree(base / "served")
    handler = type("Handler", (LyingHandler,), {"trick": trick})
    with StandInHub() as hub:
        hub._server.RequestHandlerClass = handler
        handler.hub = hub
        hub.repos[REPO] = StandInRepo(served, config={"model_type": "gpt2"})
        hub.repos[REPO].drop = "model.safetensors" if trick == "hub-truncated-body" else None
        plan = hub_get.plan(REPO, endpoint=hub.url)
        snapshot = hub_get.download(plan, cache_dir=base / "cache", endpoint=hub.url)
    return f"downloaded to {os.path.relpath(snapshot, base)}"


def hub_cases(d: Path) -> dict[str, tuple[str, list[str]]]:
    out = {}
    for trick in TRICKS:
        (d / trick).mkdir(parents=True, exist_ok=True)
        out[trick] = ("tests.support.hostile_hub:get_from", [trick, str(d / trick)])
    return out
