"""Shared fixtures: where the kith binary and the datasets are."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def kith():
    """A function that runs the kith binary (from $KITH_BIN) and returns its stdout."""
    binary = os.environ.get("KITH_BIN")
    assert binary and pathlib.Path(binary).is_file(), "set KITH_BIN to the built kith binary"

    def run(*args):
        done = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"kith {args} failed: {done.stderr}"
        return done.stdout

    return run


@pytest.fixture(scope="session")
def datasets():
    """The real datasets: $KITH_DATASETS or shared/datasets beside the checkout."""
    path = pathlib.Path(os.environ.get("KITH_DATASETS", ROOT.parent / "shared" / "datasets"))
    assert path.is_dir(), f"datasets not found at {path}; set KITH_DATASETS"
    return path
