#!/usr/bin/python3
"""A local stand-in for the Hugging Face hub, for tst_hub (Python 3 standard library only).

Serves the repositories under --root (ROOT/ORG/NAME/<files>) on 127.0.0.1 at a port the system
chooses, written to --port-file once listening. It speaks what AttnLab's hub client uses:

  GET  /api/models/ORG/NAME/revision/REV   {"id", "sha", "siblings": [{"rfilename"}]}; with ?blobs=true
                                           each sibling's "size" (and "lfs" {"sha256", "size"} above
                                           1 kB), and "cardData": {"license"} when the faults name one
  HEAD/GET /ORG/NAME/resolve/REV/FILE      X-Repo-Commit; small files (<= 1 kB) answered here with
                                           ETag "<git blob sha1>"; larger ones ("LFS") with a 302
                                           to /cdn/<sha256> carrying X-Linked-Etag "<sha256>" and
                                           X-Linked-Size, as the real hub redirects to its CDN
  HEAD/GET /cdn/<sha256>                   the bytes; "Range: bytes=N-" answered with 206
  HEAD/GET /files/PATH                     ROOT/PATH as a plain web server serves a file (Range as for
                                           /cdn; faults name it as PATH): the stand-in for an Argos
                                           package index and its packages (tst_argos_index)

REV is "main" or the repository's commit (the sha1 of "ORG/NAME", fixed), or one listed in the
faults file's "revisions". Errors carry X-Error-Code as the hub's do (RepoNotFound,
RevisionNotFound, EntryNotFound, GatedRepo).

Faults (--faults FILE, JSON, read again on every request so a test can change it between calls):
  {"cut_after": {"FILE": N}}     send N bytes of FILE's body, then close the connection
  {"corrupt": ["FILE"]}          serve bytes that do not match FILE's sha256 (one byte flipped)
  {"ignore_range": ["FILE"]}     answer a Range request for FILE with 200 and the whole file
  {"slow": {"FILE": MS}}         sleep MS milliseconds after every 16 kB of FILE's body
  {"gated": ["ORG/NAME"], "token": "T"}  401 without "Authorization: Bearer T", 403 with another
  {"cdn_host": "localhost"}      the host the 302 to /cdn names (default 127.0.0.1): another host
                                 name for the same server, so a test sees what crosses hosts
  {"revisions": ["v1.0", "refs/pr/1"]}  more revision names that resolve to the commit
  {"licence": "apache-2.0"}      the model card's licence in the listing (cardData.license)
  {"extra_siblings": N}          N more names in the listing ("f000000.model", ...), files that do not exist
  {"listed_size": {"FILE": N}}   the listing says FILE has N bytes
  {"no_size": ["FILE"]}          FILE's size said nowhere: not in the listing, no X-Linked-Size, no
                                 Content-Length (its body ends when the connection closes)
  {"endless": ["FILE"]}          FILE's body without Content-Length, its bytes then more, without end
                                 (until the client hangs up; at most 2 GB and 120 s, so a test cannot hang)
  {"too_long": {"FILE": N}}      FILE's body N bytes longer than the file, and Content-Length saying so
  {"drip": {"FILE": [B, MS]}}    FILE's body B bytes at a time, MS milliseconds apart

--log FILE: one JSON line per request: method, path (as sent), host, range, agent (User-Agent),
authorization (bool: whether an Authorization header came).
The server exits when its standard input closes (the test process ended) or on SIGTERM.
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_THRESHOLD = 1024
CHUNK = 16 * 1024
ARGS = None
LOG_LOCK = threading.Lock()
SHA_CACHE = {}  # (path, size, mtime) -> sha256 hex
SHA_LOCK = threading.Lock()


def faults():
    if not ARGS.faults or not os.path.exists(ARGS.faults):
        return {}
    with open(ARGS.faults, encoding="utf-8") as f:
        text = f.read()
    return json.loads(text) if text.strip() else {}


def commit_of(repo):
    return hashlib.sha1(repo.encode()).hexdigest()


def sha256_of(path):
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    with SHA_LOCK:
        if key in SHA_CACHE:
            return SHA_CACHE[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    with SHA_LOCK:
        SHA_CACHE[key] = h.hexdigest()
    return SHA_CACHE[key]


def git_sha1_of(path):
    # git's blob id: sha1("blob <size>\0" + bytes), what the hub sends as a small file's ETag
    h = hashlib.sha1(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def repo_files(repo_dir):
    names = []
    for folder, _, files in os.walk(repo_dir):
        for name in files:
            names.append(os.path.relpath(os.path.join(folder, name), repo_dir))
    return sorted(names)


def find_lfs(sha):
    # the file whose sha256 is `sha`, anywhere under the root (the CDN knows blobs, not names)
    for org in sorted(os.listdir(ARGS.root)):
        for name in sorted(os.listdir(os.path.join(ARGS.root, org))):
            repo_dir = os.path.join(ARGS.root, org, name)
            for rel in repo_files(repo_dir):
                path = os.path.join(repo_dir, rel)
                if os.path.getsize(path) > LFS_THRESHOLD and sha256_of(path) == sha:
                    return path, rel
    return None, None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    def record(self):
        if not ARGS.log:
            return
        entry = {"method": self.command, "path": self.path, "host": self.headers.get("Host", ""),
                 "range": self.headers.get("Range", ""), "agent": self.headers.get("User-Agent", ""),
                 "authorization": self.headers.get("Authorization") is not None}
        with LOG_LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def do_HEAD(self):
        self.handle_request(head=True)

    def do_GET(self):
        self.handle_request(head=False)

    def handle_request(self, head):
        self.record()
        parts = self.path.split("?")[0].split("/")[1:]
        try:
            if parts[:2] == ["api", "models"] and len(parts) == 6 and parts[4] == "revision":
                self.api(parts[2] + "/" + parts[3], urllib.parse.unquote(parts[5]), head)
            elif len(parts) >= 5 and parts[2] == "resolve":
                rel = urllib.parse.unquote("/".join(parts[4:]))
                self.resolve(parts[0] + "/" + parts[1], urllib.parse.unquote(parts[3]), rel, head)
            elif len(parts) == 2 and parts[0] == "cdn":
                self.cdn(parts[1], head)
            elif len(parts) >= 2 and parts[0] == "files":
                self.plain_file(urllib.parse.unquote("/".join(parts[1:])), head)
            else:
                self.error(404, "EntryNotFound", "no such endpoint", head)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def error(self, status, code, message, head):
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def check_repo(self, repo, revision, head):
        """The repository's folder, or None once an error has been sent."""
        repo_dir = os.path.join(ARGS.root, *repo.split("/"))
        f = faults()
        if ".." in repo or not os.path.isdir(repo_dir):
            self.error(404, "RepoNotFound", "Repository not found", head)
            return None
        if repo in f.get("gated", []):
            auth = self.headers.get("Authorization")
            if auth is None:
                self.error(401, "GatedRepo", "Access to model %s is restricted" % repo, head)
                return None
            if auth != "Bearer " + f.get("token", ""):
                self.error(403, "GatedRepo", "Access to model %s is restricted" % repo, head)
                return None
        if revision not in ["main", commit_of(repo)] + f.get("revisions", []):
            self.error(404, "RevisionNotFound", "Invalid rev id: " + revision, head)
            return None
        return repo_dir

    def api(self, repo, revision, head):
        repo_dir = self.check_repo(repo, revision, head)
        if repo_dir is None:
            return
        f = faults()
        blobs = "blobs=true" in self.path.split("?", 1)[-1].lower() if "?" in self.path else False
        siblings = []
        for rel in repo_files(repo_dir):
            entry = {"rfilename": rel}
            if blobs and rel not in f.get("no_size", []):
                size = os.path.getsize(os.path.join(repo_dir, rel))
                entry["size"] = f.get("listed_size", {}).get(rel, size)
                if size > LFS_THRESHOLD:
                    entry["lfs"] = {"sha256": sha256_of(os.path.join(repo_dir, rel)), "size": entry["size"]}
            siblings.append(entry)
        siblings += [{"rfilename": "f%06d.model" % i} for i in range(f.get("extra_siblings", 0))]
        info = {"id": repo, "sha": commit_of(repo), "siblings": siblings}
        if "licence" in f:
            info["cardData"] = {"license": f["licence"]}
        body = json.dumps(info).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def resolve(self, repo, revision, rel, head):
        repo_dir = self.check_repo(repo, revision, head)
        if repo_dir is None:
            return
        path = os.path.join(repo_dir, rel)
        if ".." in rel.split("/") or not os.path.isfile(path):
            self.error(404, "EntryNotFound", "Entry not found", head)
            return
        size = os.path.getsize(path)
        if size > LFS_THRESHOLD:
            sha = sha256_of(path)
            host = faults().get("cdn_host", "127.0.0.1")
            self.send_response(302)
            self.send_header("Location", "http://%s:%d/cdn/%s" % (host, self.server.server_port, sha))
            self.send_header("X-Repo-Commit", commit_of(repo))
            self.send_header("X-Linked-Etag", '"%s"' % sha)
            if rel not in faults().get("no_size", []):
                self.send_header("X-Linked-Size", str(size))
            self.send_header("ETag", '"%s"' % git_sha1_of(path))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_file(path, rel, '"%s"' % git_sha1_of(path), head, {"X-Repo-Commit": commit_of(repo)})

    def cdn(self, sha, head):
        path, rel = find_lfs(sha)
        if path is None:
            self.error(404, "EntryNotFound", "no such blob", head)
            return
        self.send_file(path, rel, '"%s"' % sha, head, {})

    def plain_file(self, rel, head):
        path = os.path.realpath(os.path.join(ARGS.root, rel))
        if not path.startswith(os.path.realpath(ARGS.root) + os.sep) or not os.path.isfile(path):
            self.error(404, "EntryNotFound", "no such file", head)
            return
        self.send_file(path, rel, '"%s"' % git_sha1_of(path), head, {})

    def send_file(self, path, rel, etag, head, extra):
        f = faults()
        size = os.path.getsize(path)
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and rng.endswith("-") and rel not in f.get("ignore_range", []):
            start = int(rng[len("bytes="):-1])
        if start > size:
            self.error(416, "RangeNotSatisfiable", "range past the end", head)
            return
        endless = rel in f.get("endless", []) and not head
        unsized = rel in f.get("no_size", [])
        self.send_response(206 if start else 200)
        for key, value in extra.items():
            self.send_header(key, value)
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if endless or unsized:
            self.send_header("Connection", "close")  # the body ends when the connection does
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(size - start + f.get("too_long", {}).get(rel, 0)))
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
        self.end_headers()
        if not head:
            self.send_body(path, rel, start, f)
            if endless:
                self.send_endlessly()
            elif rel in f.get("too_long", {}):
                self.wfile.write(b"x" * f["too_long"][rel])

    def send_endlessly(self):
        self.close_connection = True
        block, sent, began = b"\0" * CHUNK, 0, time.monotonic()
        while sent < (2 << 30) and time.monotonic() - began < 120:
            self.wfile.write(block)
            sent += len(block)

    def send_body(self, path, rel, start, f):
        cut = f.get("cut_after", {}).get(rel)
        delay = f.get("slow", {}).get(rel, 0) / 1000.0
        corrupt = rel in f.get("corrupt", [])
        piece, pause = f.get("drip", {}).get(rel, [CHUNK, 0])
        if pause:
            delay = pause / 1000.0
        sent = 0
        with open(path, "rb") as src:
            src.seek(start)
            for block in iter(lambda: src.read(piece), b""):
                if corrupt and sent == 0:
                    block = bytes([block[0] ^ 0xFF]) + block[1:]
                if cut is not None and sent + len(block) >= cut:
                    self.wfile.write(block[:cut - sent])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(block)
                sent += len(block)
                if delay:
                    self.wfile.flush()
                    time.sleep(delay)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # a client that hung up (a cancelled or refused download) is no error of the server's
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--faults")
    parser.add_argument("--log")
    ARGS = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    # written whole, then renamed: a reader never sees half a number
    with open(ARGS.port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_port))
    os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    def watch_stdin():
        sys.stdin.buffer.read()  # returns at end of file: the test process closed it or ended
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
