"""Tiny LayoutLM (v1) extractive document-QA model with goldens from the document-question-answering
pipeline, called with `word_boxes` so that no OCR (pytesseract) runs: LayoutLM v1 reads words and
their boxes only, never pixels."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export, texts
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .tokenizer_kit import MAX_LENGTH, save as save_tokenizer

NAME = "layoutlm-document-question-answering"
SEED = 322
INPUTS = ["input_ids", "bbox", "attention_mask", "token_type_ids"]
OUTPUTS = ["start_logits", "end_logits"]


def _invoice() -> list[list[Any]]:
    """A small invoice as (word, [x0, y0, x1, y1]) on LayoutLM's 0-1000 grid, read left to right."""
    lines = [
        (60, ["ACME", "Corp", "Invoice"]),
        (110, ["Invoice", "number:", "US-001"]),
        (150, ["Date:", "2024-01-15"]),
        (200, ["Bill", "to:", "John", "Smith,", "Berlin"]),
        (300, ["Widget", "x2", "$", "40.00"]),
        (340, ["Gadget", "x1", "$", "74.06"]),
        (420, ["Total", "due:", "$", "154.06"]),
        (470, ["Thank", "you", "for", "your", "business!"]),
    ]
    words = []
    for top, line in lines:
        x = 80
        for word in line:
            width = 18 * len(word)
            words.append([word, [x, top, x + width, top + 30]])
            x += width + 20
    return words


def _long_document() -> list[list[Any]]:
    """The invoice after a page of mail text: more tokens than one window holds."""
    words = []
    filler = texts.medium_texts(3)
    for i, word in enumerate(" ".join(filler).split()[:120]):
        row, col = divmod(i, 10)
        words.append([word, [50 + 90 * col, 20 + 25 * row, 130 + 90 * col, 40 + 25 * row]])
    return words + [[w, [x0, min(y0 + 500, 990), x1, min(y1 + 500, 999)]] for w, (x0, y0, x1, y1) in _invoice()]


def build(tokenizer) -> dict[str, Any]:
    from transformers import AutoTokenizer, LayoutLMConfig, LayoutLMForQuestionAnswering, pipeline

    out_dir = FIXTURES / NAME
    if out_dir.exists():
        import shutil

        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    seed_everything(SEED)
    config = LayoutLMConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=MAX_LENGTH,
        max_2d_position_embeddings=1024,
        initializer_range=0.2,
    )
    model = LayoutLMForQuestionAnswering(config).eval()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        save_tokenizer(tokenizer, source)
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            (out_dir / name).write_bytes((source / name).read_bytes())
        loaded = LayoutLMForQuestionAnswering.from_pretrained(source).eval()
        loaded_tok = AutoTokenizer.from_pretrained(source)
        pipe = pipeline("document-question-answering", model=str(source), tokenizer=str(source), device="cpu")

        invoice = _invoice()
        long_doc = _long_document()

        def feed(question: str, word_boxes: list[list[Any]]) -> dict[str, np.ndarray]:
            """One window as the pipeline builds it: question words + document words, boxes per token."""
            enc = loaded_tok(question.split(), [w for w, _ in word_boxes], is_split_into_words=True, truncation="only_second", max_length=MAX_LENGTH, return_token_type_ids=True)
            bbox = []
            for input_id, sequence, word in zip(enc.input_ids, enc.sequence_ids(), enc.word_ids()):
                bbox.append(word_boxes[word][1] if sequence == 1 else [1000] * 4 if input_id == loaded_tok.sep_token_id else [0] * 4)
            return {"input_ids": np.array([enc.input_ids]), "bbox": np.array([bbox]), "attention_mask": np.array([enc.attention_mask]), "token_type_ids": np.array([enc.token_type_ids])}

        single = [feed("What is the invoice number?", invoice), feed("Total?", invoice[:6]), feed("Who pays?", long_doc)]
        # A padded batch: the shorter rows' padding carries zero boxes and attention.
        width = max(f["input_ids"].shape[1] for f in single)
        padded = {
            k: np.concatenate([np.pad(f[k], [(0, 0), (0, width - f[k].shape[1])] + [(0, 0)] * (f[k].ndim - 2)) for f in single]).astype(np.int64)
            for k in INPUTS
        }
        feeds = [*({k: v.astype(np.int64) for k, v in f.items()} for f in single), padded]
        onnx_path = out_dir / "model.onnx"
        axes = {k: {0: "batch_size", 1: "sequence_length"} for k in INPUTS + OUTPUTS}
        onnx_export.export(loaded, {k: torch.from_numpy(v) for k, v in padded.items()}, OUTPUTS, axes, onnx_path)

        def reference(f: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                out = loaded(**{k: torch.from_numpy(v) for k, v in f.items()})
            return {name: getattr(out, name).numpy() for name in OUTPUTS}

        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        specs: list[tuple[str, str, list[list[Any]], dict[str, Any]]] = [
            ("invoice_number", "What is the invoice number?", invoice, {}),
            ("total_top_3", "What is the total due?", invoice, {"top_k": 3}),
            ("date_max_answer_len_1", "When was it issued?", invoice, {"top_k": 2, "max_answer_len": 1}),
            ("impossible_allowed", "What is the capital of Peru?", invoice, {"handle_impossible_answer": True, "top_k": 2}),
            ("unicode_question", "Crème brûlée   for 東京?", invoice[:8], {"top_k": 2}),
            ("long_document_windows", "Who is the bill for?", long_doc, {"top_k": 3}),
            ("long_document_stride", "What is the total due?", long_doc, {"top_k": 2, "max_seq_len": 40, "doc_stride": 8}),
        ]
        cases = []
        for name, question, word_boxes, options in specs:
            output = pipe(image=None, question=question, word_boxes=word_boxes, **options)
            # The windows the pipeline feeds the model, so a consumer can test its encoding apart.
            pre = {k: options[k] for k in ("max_seq_len", "doc_stride") if k in options}
            windows = [
                {k: span[k][0].tolist() for k in ("input_ids", "token_type_ids", "bbox")}
                for span in pipe.preprocess({"question": question, "word_boxes": word_boxes}, **pre)
            ]
            cases.append({"name": name, "task": "document-question-answering", "call": {"inputs": {"question": question, "word_boxes": word_boxes}, "options": options}, "output": output, "windows": windows})

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "document-question-answering",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline (word_boxes given, no OCR)"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": INPUTS, "outputs": OUTPUTS, "parity": parity},
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
