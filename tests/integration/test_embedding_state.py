"""The real MiniLM loads, encodes and traces its query encoder without changing process state.

Runs in a fresh interpreter: environment variables, every logger's level, and the progress-bar
switches of transformers and huggingface_hub are read after ``import sentence_transformers``
(whose own import sets a few environment variables) and again after loading the model, a batch
encode and a traced query; they must be equal, and transformers' "Loading weights" bar is not
drawn meanwhile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("sentence_transformers")

pytestmark = pytest.mark.integration

_SCRIPT = r"""
import json, logging, os
import sentence_transformers  # noqa: F401  (its import is not ours)
import transformers.utils.logging as hf_logging
import huggingface_hub.utils as hub_utils
from proxypointer.embed.embedder import SentenceTransformerEmbedder

def state():
    levels = {n: logging.getLogger(n).level for n in ["", *logging.root.manager.loggerDict]}
    return {"env": dict(os.environ), "levels": levels,
            "transformers_bars": hf_logging.is_progress_bar_enabled(),
            "hub_bars_disabled": hub_utils.are_progress_bars_disabled()}

before = state()
e = SentenceTransformerEmbedder()
e.model  # the torch model, whether or not an exported encoder embeds the texts below
vectors = e.encode(["a sentence", "another one"])
query = e.encode_query("how is parental leave paid?")
after = state()
after["levels"] = {n: v for n, v in after["levels"].items() if n in before["levels"]}
print(json.dumps({"before": before, "after": after, "shape": list(vectors.shape), "traced": e.trace_query,
                  "query_dim": int(query.shape[0])}))
"""


def test_loading_the_real_model_changes_no_process_state():
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["shape"] == [2, 384] and out["query_dim"] == 384
    assert out["after"]["env"] == out["before"]["env"]
    assert out["after"]["levels"] == out["before"]["levels"]
    assert out["after"]["transformers_bars"] == out["before"]["transformers_bars"]
    assert out["after"]["hub_bars_disabled"] == out["before"]["hub_bars_disabled"]
    assert "loss_type" not in proc.stderr  # the trace reads no property that warns
    assert "Loading weights" not in proc.stderr  # transformers' bar stays out of a user's output
