"""Fixtures: the normcore CLI of the build (to generate devices and cross-check), a generated
accelerator manifest for ref:, and the build's devices with their sim:/tlm: plugins."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("NORMCORE_BUILD", REPO / "build"))


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    """The `normcore` binary (env NORMCORE_CLI, else <build>/cli/normcore)."""
    path = pathlib.Path(os.environ.get("NORMCORE_CLI", BUILD / "cli" / "normcore"))
    if not path.is_file():
        pytest.fail(f"no normcore CLI at {path}: build it or set NORMCORE_CLI")
    return path


def gen(cli: pathlib.Path, out: pathlib.Path, *args: str) -> str:
    subprocess.run([str(cli), "gen", "--accel", *args, "-o", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return str(out / "manifest.json")


@pytest.fixture(scope="session")
def manifest(cli, tmp_path_factory) -> str:
    """The default accelerator (8 lanes, int8 -> int8, 1024 channels)."""
    return gen(cli, tmp_path_factory.mktemp("dev") / "rtl")


@pytest.fixture(scope="session")
def small_manifest(cli, tmp_path_factory) -> str:
    """5 channels at most, INNER up to 15, int16 -> uint8: every run is tiled."""
    return gen(cli, tmp_path_factory.mktemp("small") / "rtl", "--name", "nc_small", "--lanes",
               "3", "--in-bits", "16", "--out-bits", "8", "--out-unsigned", "--max-channels",
               "5", "--inner-bits", "4", "--bus-bits", "32")


def plugin_manifest(kind: str) -> str:
    """The build's default device with its `kind` (sim or tlm) plugin; skip if not built."""
    d = BUILD / "devices" / "normcore"
    if not (d / f"libnormcore_{kind}.so").is_file():
        pytest.skip(f"no {kind}: plugin in {d} (build with NORMCORE_SIM_BACKEND / NORMCORE_TLM)")
    return str(d / "rtl" / "manifest.json")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def random_bn(rng, c: int) -> dict:
    return {"gamma": rng.uniform(0.25, 2.0, c) * rng.choice([-1, 1], c),
            "beta": rng.normal(0, 4, c), "mean": rng.normal(0, 8, c),
            "var": rng.uniform(0.5, 4.0, c), "eps": 1e-5, "quant": "integer"}
