"""A real `kith serve` over a store of ego-Facebook, with a token, some follows and posts, and
a headless Chromium (Debian's, through chromedriver) to look at its dashboard."""

import json
import os
import pathlib
import subprocess
import time
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "dashboard-test-token"


@pytest.fixture(scope="session")
def datasets():
    path = pathlib.Path(os.environ.get("KITH_DATASETS", ROOT.parent / "shared" / "datasets"))
    assert path.is_dir(), f"datasets not found at {path}; set KITH_DATASETS"
    return path


@pytest.fixture(scope="session")
def screenshots():
    """Where the views' screenshots go: $KITH_UI_SCREENSHOTS or bench/results/ui/."""
    path = pathlib.Path(os.environ.get("KITH_UI_SCREENSHOTS", ROOT / "bench" / "results" / "ui"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def call(base, method, path, body=None, token=TOKEN):
    """One JSON request; returns (status, body)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


@pytest.fixture(scope="session")
def server(datasets, tmp_path_factory):
    binary = os.environ.get("KITH_BIN")
    assert binary and pathlib.Path(binary).is_file(), "set KITH_BIN to the built kith binary"
    store = tmp_path_factory.mktemp("dashboard") / "store"
    subprocess.run([binary, "store", "build", str(datasets / "facebook_combined.txt.gz"),
                    "--dir", str(store), "--method", "kith", "--data-bytes", "40"],
                   check=True, capture_output=True, timeout=300)
    proc = subprocess.Popen([binary, "serve", "--dir", str(store), "--addr", "127.0.0.1:0",
                             "--feed", "push", "--token", TOKEN],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert "http://" in line, line
    base = "http://" + line.split("http://")[1].split()[0]
    # User 0 follows 1, 2 and 3, who post: 0's feed has something to show.
    assert call(base, "POST", "/users/0/follow", {"targets": [1, 2, 3]})[0] in (200, 201)
    for i, author in enumerate([1, 2, 3, 1]):
        status, _ = call(base, "POST", "/posts", {"author": author, "content": f"post {i} by {author}"})
        assert status in (200, 201)
    # Fan-out is asynchronous: wait until the posts have reached the reader's feed.
    deadline = time.monotonic() + 30
    while len(call(base, "GET", "/users/0/feed?limit=20")[1]["posts"]) < 4:
        assert time.monotonic() < deadline, "the posts did not reach user 0's feed in 30 s"
        time.sleep(0.1)
    yield base
    proc.terminate()
    assert proc.wait(timeout=30) == 0


@pytest.fixture(scope="session")
def browser():
    options = Options()
    options.binary_location = os.environ.get("KITH_CHROMIUM", "/usr/bin/chromium")
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1400,1100", "--disable-gpu"]:
        options.add_argument(arg)
    service = Service(os.environ.get("KITH_CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
