"""Adds the max_length goldens (kit/text_fixtures.truncation_cases) to the committed
text-classification fixtures without rebuilding them, so their ONNX files and other goldens stay
byte-identical: each torch model is remade from the fixture's seed and committed tokenizer as the
kit's build() makes it, must reproduce the committed pipeline goldens, and only then are the
truncation cases (re)placed at the end of the pipeline list, where build() puts them. The
manifest is written again after, for the goldens' new hashes.

    OMP_NUM_THREADS=1 .venv/models/bin/python scripts/models/add_truncation_goldens.py
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import build_manifest  # noqa: E402
from kit import text_fixtures  # noqa: E402
from kit.common import FIXTURES, jsonable, seed_everything, write_json  # noqa: E402
from kit.tokenizer_kit import save as save_tokenizer  # noqa: E402

NAMES = ("bert-text-classification", "bert-multi-label", "roberta-text-classification")


def _scores(output) -> list[float]:
    flat: list[float] = []

    def walk(value) -> None:
        if isinstance(value, dict):
            flat.append(float(value["score"]))
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(output)
    return flat


def _reproduces(pipe, case: dict) -> bool:
    got = jsonable(pipe(case["call"]["inputs"], **case["call"]["options"]))
    return _labels(got) == _labels(case["output"]) and np.allclose(
        _scores(got), _scores(case["output"]), atol=1e-6, rtol=0
    )


def _labels(output):
    if isinstance(output, dict):
        return output["label"]
    return [_labels(item) for item in output]


def add(fixture: text_fixtures.TextFixture) -> None:
    from transformers import AutoTokenizer, pipeline

    folder = FIXTURES / fixture.name
    goldens = json.loads((folder / "goldens.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    seed_everything(fixture.seed)
    model = text_fixtures._model_class(fixture)(text_fixtures._config(fixture, len(tokenizer), tokenizer)).eval()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        save_tokenizer(tokenizer, source)
        pipe = pipeline(fixture.task, model=str(source), tokenizer=str(source), device="cpu")
        new = text_fixtures.truncation_cases(pipe)
        names = {case["name"] for case in new}
        kept = [case for case in goldens["pipeline"] if case["name"] not in names]
        for case in kept:
            if "output" in case and not _reproduces(pipe, case):
                raise SystemExit(f"{fixture.name}/{case['name']}: the remade model does not reproduce the committed golden")
    goldens["pipeline"] = kept + new
    write_json(folder / "goldens.json", goldens)
    print(f"{fixture.name}: {len(kept)} goldens reproduced, {len(new)} truncation cases placed", flush=True)


def main() -> None:
    by_name = {fixture.name: fixture for fixture in text_fixtures.FIXTURE_LIST}
    for name in NAMES:
        add(by_name[name])
    build_manifest.main()


if __name__ == "__main__":
    main()
