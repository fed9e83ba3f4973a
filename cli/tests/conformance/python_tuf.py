"""python-tuf's ngclient, TUF's reference implementation, reading what ebpkg signs.

    python_tuf.py accept|refuse REGISTRY ROOT_JSON TARGET...

REGISTRY is a directory registry (served here over HTTP on loopback, since
ngclient fetches over HTTP) or the http:// URL of a registry server. The client
starts from ROOT_JSON, refreshes (root rotations, timestamp, snapshot, targets,
hashed bins) and downloads each TARGET (`index/1/c`, `config.json`). `accept`:
everything verifies; prints {"targets": {name: sha256}}. `refuse`: some step is
refused; prints {"refused": "<what python-tuf said>"}. The exit code is 0 when
the outcome is the one asked for, 1 otherwise.
"""

import functools
import hashlib
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

from tuf.api import exceptions
from tuf.ngclient import Updater


def serve(directory):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)

    class Quiet(handler.func):  # no request log on stderr
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def run(base, root_json, targets):
    work = tempfile.mkdtemp(prefix="python-tuf-")
    try:
        metadata_dir = os.path.join(work, "metadata")
        os.makedirs(metadata_dir)
        with open(root_json, "rb") as f:
            root = f.read()
        updater = Updater(
            metadata_dir=metadata_dir,
            bootstrap=root,
            metadata_base_url=base + "tuf/",
            target_dir=os.path.join(work, "targets"),
            target_base_url=base,
        )
        os.makedirs(os.path.join(work, "targets"))
        updater.refresh()
        got = {}
        for name in targets:
            info = updater.get_targetinfo(name)
            if info is None:
                raise exceptions.RepositoryError(f"{name} is not in the signed metadata")
            path = updater.download_target(info, filepath=os.path.join(work, "targets", name.replace("/", "_")))
            with open(path, "rb") as f:
                got[name] = hashlib.sha256(f.read()).hexdigest()
        return got
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    mode, registry, root_json, targets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    server = None
    if registry.startswith("http://") or registry.startswith("https://"):
        base = registry if registry.endswith("/") else registry + "/"
    else:
        server, base = serve(registry)
    try:
        got = run(base, root_json, targets)
    except (exceptions.RepositoryError, exceptions.DownloadError, ValueError) as e:
        print(json.dumps({"refused": f"{type(e).__name__}: {e}"}))
        return 0 if mode == "refuse" else 1
    finally:
        if server is not None:
            server.shutdown()
    print(json.dumps({"targets": got}))
    return 0 if mode == "accept" else 1


if __name__ == "__main__":
    sys.exit(main())
