"""Extractive question-answering reference.

transformers 5 removed the question-answering pipeline, so the builder carries its own reference of
the classic algorithm (the one Hugot and transformers 4.x implement): tokenize question + context
with `only_second` truncation and a stride, mask every token outside the context (the CLS token stays
eligible for "no answer"), softmax start and end logits per window, score spans as
p(start) * p(end) with start <= end < start + max_answer_len, map token spans to character offsets
and keep the best top_k over all windows. The raw logits are recorded beside each answer so a
consumer can check the model and the postprocessing separately.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch


def _softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def answer(
    model,
    tokenizer,
    question: str,
    context: str,
    top_k: int = 1,
    max_answer_len: int = 15,
    max_seq_len: int | None = None,
    doc_stride: int = 128,
    handle_impossible_answer: bool = False,
) -> dict[str, Any]:
    max_seq_len = max_seq_len or tokenizer.model_max_length
    # Same clamp as the historical pipeline: a stride cannot exceed half a window.
    doc_stride = min(doc_stride, max_seq_len // 2)
    enc = tokenizer(
        question,
        context,
        truncation="only_second",
        max_length=max_seq_len,
        stride=doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=True,
        return_tensors="pt",
    )
    feeds = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
    with torch.no_grad():
        out = model(**feeds)
    starts = out.start_logits.numpy()
    ends = out.end_logits.numpy()
    answers: list[dict[str, Any]] = []
    min_null = 1e6
    windows = []
    for w in range(starts.shape[0]):
        seq_ids = enc.sequence_ids(w)
        attention = enc["attention_mask"][w].numpy()
        offsets = enc["offset_mapping"][w].numpy()
        undesired = np.array([0 if s == 1 else 1 for s in seq_ids], dtype=bool) | (attention == 0)
        cls_index = int(np.nonzero(enc["input_ids"][w].numpy() == tokenizer.cls_token_id)[0][0])
        undesired[cls_index] = False
        start_logits = np.where(undesired, -10000.0, starts[w])
        end_logits = np.where(undesired, -10000.0, ends[w])
        p_start = _softmax(start_logits.astype(np.float64))
        p_end = _softmax(end_logits.astype(np.float64))
        min_null = min(min_null, float(p_start[cls_index] * p_end[cls_index]))
        p_start[cls_index] = 0.0
        p_end[cls_index] = 0.0
        outer = np.triu(np.tril(np.outer(p_start, p_end), max_answer_len - 1))
        # A stable sort over every span keeps tie order fixed; a window offers at most top_k answers.
        taken = 0
        for flat in np.argsort(-outer, axis=None, kind="stable"):
            s, e = np.unravel_index(flat, outer.shape)
            score = float(outer[s, e])
            if score <= 0.0:
                break
            if undesired[s] or undesired[e] or s == cls_index or e == cls_index:
                continue
            char_start, char_end = int(offsets[s][0]), int(offsets[e][1])
            answers.append(
                {"score": score, "start": char_start, "end": char_end, "answer": context[char_start:char_end]}
            )
            taken += 1
            if taken >= top_k:
                break
        windows.append(
            {
                "input_ids": enc["input_ids"][w].tolist(),
                "start_logits": starts[w].tolist(),
                "end_logits": ends[w].tolist(),
            }
        )
    answers.sort(key=lambda a: -a["score"])
    best = answers[:top_k]
    if handle_impossible_answer:
        best.append({"score": min_null, "start": 0, "end": 0, "answer": ""})
        best.sort(key=lambda a: -a["score"])
        best = best[:top_k]
    return {"answers": best, "windows": windows}
