"""Shared fixtures of the Python package's tests: the datasets, the kith binary (for the
tests that compare with the CLI), and graphs read once per session."""

import os
import pathlib
import subprocess

import pytest

import kith

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def datasets():
    """The real datasets: $KITH_DATASETS or shared/datasets beside the checkout."""
    path = pathlib.Path(os.environ.get("KITH_DATASETS", ROOT.parent / "shared" / "datasets"))
    assert path.is_dir(), f"datasets not found at {path}; set KITH_DATASETS"
    return path


@pytest.fixture(scope="session")
def cli():
    """Runs the kith binary ($KITH_BIN) and returns its stdout."""
    binary = os.environ.get("KITH_BIN")
    assert binary and pathlib.Path(binary).is_file(), "set KITH_BIN to the built kith binary"

    def run(*args):
        done = subprocess.run([binary, *map(str, args)], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"kith {args} failed: {done.stderr}"
        return done.stdout

    return run


@pytest.fixture(scope="session")
def facebook(datasets):
    """ego-Facebook: 4,039 users, 88,234 friendships, one component."""
    return kith.read(datasets / "facebook_combined.txt.gz")


@pytest.fixture(scope="session")
def grqc(datasets):
    """ca-GrQc: 5,242 authors in 355 components."""
    return kith.read(datasets / "ca-GrQc.txt.gz")


@pytest.fixture(scope="session")
def eu_core(datasets):
    """email-Eu-core, directed: 1,005 users, dangling vertices included."""
    return kith.read(datasets / "email-Eu-core.txt.gz", directed=True)
