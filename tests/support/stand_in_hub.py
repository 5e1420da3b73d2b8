"""A stand-in for the Hugging Face Hub on 127.0.0.1: the few endpoints huggingface_hub's own client calls to
download a model (read in huggingface_hub/hf_api.py and file_download.py), so `attnlab get` is tested with
no network. Loopback only; every socket times out.

    GET  /api/models/{repo}[/revision/{rev}]        model_info / repo_info (siblings with sizes, sha, config)
    GET  /api/models/{repo}/tree/{rev}              list_repo_tree (snapshot_download lists files with it)
    HEAD /{repo}/resolve/{rev}/{file}               get_hf_file_metadata: X-Repo-Commit, ETag / X-Linked-Etag,
                                                    Content-Length / X-Linked-Size
    GET  /{repo}/resolve/{rev}/{file}               the bytes (Range honoured, as on the Hub)

Regular files carry their git blob id as ETag; LFS files (safetensors) their sha256 as X-Linked-Etag, which is
what names a blob in the cache. A repository can answer every request with one status (401, 404), or drop
the connection half-way through one file (and then refuse to answer the resumed requests).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".model")


def git_blob_id(data: bytes) -> str:
    """The git object id of a file's bytes (what the Hub reports as a regular file's oid and ETag)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class StandInRepo:
    files: dict[str, bytes]
    config: dict | None = None  # what the API reports as `config` (None: the key is left out)
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    status: int | None = None  # every request about this repository answered with this status
    drop: str | None = None  # this file's GET sends half its bytes, then the connection is closed
    delay: float = 0.0  # seconds each file's GET waits before sending its bytes (a slow line)

    def lfs(self, name: str) -> dict | None:
        if not name.endswith(LFS_SUFFIXES):
            return None
        data = self.files[name]
        return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}


@dataclass
class StandInHub:
    repos: dict[str, StandInRepo] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path) of every request
    url: str = ""

    def __enter__(self) -> StandInHub:
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    hub: StandInHub
    protocol_version = "HTTP/1.1"
    timeout = 10  # seconds a connection may stay silent

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    # ---- routing ----------------------------------------------------------------------------------------
    def _answer(self, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        self.hub.requests.append((self.command, path))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            repo_id = "/".join(parts[2:4])
            repo = self._repo(repo_id)
            if repo is None:
                return
            rest = parts[4:]
            if rest[:1] == ["tree"]:
                return self._json([self._tree_entry(repo, name) for name in sorted(repo.files)])
            return self._json(self._info(repo_id, repo))
        if len(parts) >= 5 and parts[2] == "resolve":
            repo = self._repo("/".join(parts[:2]))
            if repo is None:
                return
            return self._file(repo, "/".join(parts[4:]), body)
        self._error(404, "RepoNotFound", "Repository not found")

    def _repo(self, repo_id: str) -> StandInRepo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
        elif repo.status is not None:
            # the Hub answers a private or gated repository asked without a token 401 RepoNotFound
            code = "RepoNotFound"
            self._error(repo.status, code, "Invalid username or password." if repo.status == 401 else "Not found")
            return None
        return repo

    # ---- answers ----------------------------------------------------------------------------------------
    def _info(self, repo_id: str, repo: StandInRepo) -> dict:
        siblings = []
        for name in sorted(repo.files):
            sibling: dict = {"rfilename": name, "size": len(repo.files[name]), "blobId": git_blob_id(repo.files[name])}
            if (lfs := repo.lfs(name)) is not None:
                sibling["lfs"] = lfs
            siblings.append(sibling)
        info: dict = {"id": repo_id, "modelId": repo_id, "sha": repo.sha, "private": False, "siblings": siblings}
        if repo.config is not None:
            info["config"] = repo.config
        return info

    def _tree_entry(self, repo: StandInRepo, name: str) -> dict:
        entry: dict = {
            "type": "file",
            "oid": git_blob_id(repo.files[name]),
            "size": len(repo.files[name]),
            "path": name,
        }
        if (lfs := repo.lfs(name)) is not None:
            entry["lfs"] = {"oid": lfs["sha256"], "size": lfs["size"], "pointerSize": lfs["pointerSize"]}
        return entry

    def _file(self, repo: StandInRepo, name: str, body: bool) -> None:
        data = repo.files.get(name)
        if data is None:
            return self._error(404, "EntryNotFound", "Entry not found")
        lfs = repo.lfs(name)
        etag = lfs["sha256"] if lfs else git_blob_id(data)
        start = 0
        ranged = self.headers.get("Range", "")
        if body and ranged.startswith("bytes="):
            start = int(ranged.removeprefix("bytes=").split("-")[0] or 0)
        if body and name == repo.drop and start > 0:  # the network is gone: no answer to the resumed request
            self.close_connection = True
            return
        self.send_response(206 if start else 200)
        self.send_header("X-Repo-Commit", repo.sha)
        self.send_header("ETag", f'"{git_blob_id(data)}"')
        if lfs:
            self.send_header("X-Linked-Etag", f'"{etag}"')
            self.send_header("X-Linked-Size", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        if not body:
            return
        time.sleep(repo.delay)
        if name == repo.drop:  # half the bytes, then the connection drops
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data[start:])

    def _json(self, value: object) -> None:
        raw = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)

    def _error(self, status: int, code: str, message: str) -> None:
        raw = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)
