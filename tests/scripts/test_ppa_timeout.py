#!/usr/bin/env python3
"""ppa.py's place-and-route job with a router that does not finish: ppa_jobs.nextpnr stops it at
its timeout and returns no fmax with the reason (the run goes on with the other seeds and
designs; ppa.py lists it on the page) instead of raising and losing the whole run. A fake
`nextpnr` that sleeps stands in for the tool. Usage: test_ppa_timeout.py"""
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import ppa_jobs  # noqa: E402

with tempfile.TemporaryDirectory() as d:
    work = Path(d)
    (work / "wrapped.json").write_text("{}")
    tool = work / "nextpnr-ice40"
    tool.write_text("#!/bin/sh\nexec sleep 30\n")
    tool.chmod(0o755)
    t0 = time.time()
    fmax, secs, why = ppa_jobs.nextpnr(str(tool), [], str(work / "wrapped.json"), 1, str(work),
                                       100, timeout=1)
    took = time.time() - t0
    assert fmax is None, fmax
    assert "timed out after 1 s" in why, why
    assert secs == 1.0, secs
    assert took < 20, f"the stopped router held the job {took:.1f} s"
    # A router that fails at once is an error too, with its log's tail.
    tool.write_text("#!/bin/sh\necho 'ERROR: no placement' ; exit 1\n")
    fmax, _, why = ppa_jobs.nextpnr(str(tool), [], str(work / "wrapped.json"), 2, str(work), 100)
    assert fmax is None and "no placement" in why, (fmax, why)
print("ppa timeout: ok")
