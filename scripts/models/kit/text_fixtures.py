"""Tiny encoder models (BERT WordPiece family and a RoBERTa byte-level BPE classifier).

Each fixture: seeded random weights from a small config, a tokenizer trained on real text, an ONNX
export with Optimum's tensor names, a parity check against torch, and goldens from the Python
pipelines run on the saved source folder (the same files a user would load).
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from . import onnx_export, qa_reference, texts
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .tokenizer_kit import MAX_LENGTH, save as save_tokenizer

BIO_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
NLI_LABELS = ["contradiction", "neutral", "entailment"]


@dataclass
class TextFixture:
    name: str
    family: str  # "bert" | "roberta"
    head: str  # transformers Auto class suffix
    task: str
    labels: list[str] | None
    outputs: list[str]
    seed: int
    cases: Callable[["TextFixture", Any, Any], dict[str, Any]]
    problem_type: str | None = None
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _config(fixture: TextFixture, vocab_size: int, tokenizer):
    from transformers import BertConfig, RobertaConfig

    common = dict(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        # Wide initialisation spreads logits, so top-k orders are not decided by float noise.
        initializer_range=0.2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    if fixture.family == "bert":
        config = BertConfig(max_position_embeddings=MAX_LENGTH, pad_token_id=tokenizer.pad_token_id, **common)
    else:
        # RoBERTa positions start after the padding index, so it needs two extra rows.
        config = RobertaConfig(
            max_position_embeddings=MAX_LENGTH + 2,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            type_vocab_size=1,
            **common,
        )
    if fixture.labels is not None:
        config.id2label = dict(enumerate(fixture.labels))
        config.label2id = {label: i for i, label in enumerate(fixture.labels)}
        config.num_labels = len(fixture.labels)
    if fixture.problem_type:
        config.problem_type = fixture.problem_type
    return config


def _model_class(fixture: TextFixture):
    import transformers

    prefix = "Bert" if fixture.family == "bert" else "Roberta"
    return getattr(transformers, prefix + fixture.head)


def _input_names(fixture: TextFixture) -> list[str]:
    # Optimum drops token_type_ids for RoBERTa (a single segment embedding).
    if fixture.family == "bert":
        return ["input_ids", "attention_mask", "token_type_ids"]
    return ["input_ids", "attention_mask"]


def _dynamic_axes(fixture: TextFixture) -> dict[str, dict[int, str]]:
    axes = {name: {0: "batch_size", 1: "sequence_length"} for name in _input_names(fixture)}
    for out in fixture.outputs:
        axes[out] = {0: "batch_size"} if out == "logits" and fixture.head in ("ForSequenceClassification",) else {
            0: "batch_size",
            1: "sequence_length",
        }
    return axes


def _parity_feeds(fixture: TextFixture, tokenizer) -> list[dict[str, np.ndarray]]:
    batches = [
        [texts.SHORT],
        [texts.EMPTY, texts.UNICODE, texts.long_text(), *texts.medium_texts(3)],
        [(texts.SHORT, texts.PERSONISH), (texts.UNICODE, texts.long_text())],
    ]
    feeds = []
    for batch in batches:
        if isinstance(batch[0], tuple):
            enc = tokenizer([a for a, _ in batch], [b for _, b in batch], padding=True, truncation=True, return_tensors="np")
        else:
            enc = tokenizer(batch, padding=True, truncation=True, return_tensors="np")
        feeds.append({name: enc[name].astype(np.int64) for name in _input_names(fixture)})
    return feeds


def tokenization_cases(tokenizer) -> list[dict[str, Any]]:
    long = texts.long_text()
    specs: list[tuple[str, Any, Any, dict[str, Any]]] = [
        ("empty", texts.EMPTY, None, {}),
        ("whitespace", texts.WHITESPACE, None, {}),
        ("unicode", texts.UNICODE, None, {}),
        ("short", texts.SHORT, None, {}),
        ("no_special_tokens", texts.SHORT, None, {"add_special_tokens": False}),
        ("long_truncated", long, None, {"truncation": True}),
        ("long_truncated_max_16", long, None, {"truncation": True, "max_length": 16}),
        ("pair", texts.SHORT, texts.PERSONISH, {}),
        ("pair_longest_first_24", long[:400], texts.PERSONISH, {"truncation": "longest_first", "max_length": 24}),
        ("pair_only_second_24", texts.SHORT, long[:400], {"truncation": "only_second", "max_length": 24}),
        ("batch_padded", [texts.SHORT, texts.EMPTY, texts.UNICODE], None, {"padding": True}),
    ]
    cases = []
    for name, text, pair, options in specs:
        call_options = {**options, "return_offsets_mapping": True}
        enc = tokenizer(text, pair, **call_options) if pair is not None else tokenizer(text, **call_options)
        output = {k: v for k, v in enc.items()}
        ids = output["input_ids"]
        output["tokens"] = (
            [tokenizer.convert_ids_to_tokens(row) for row in ids]
            if ids and isinstance(ids[0], list)
            else tokenizer.convert_ids_to_tokens(ids)
        )
        cases.append({"name": name, "call": {"text": text, "text_pair": pair, "options": call_options}, "output": output})
    return cases


def _run(pipe, task: str, name: str, inputs: Any, **options: Any) -> dict[str, Any]:
    return {"name": name, "task": task, "call": {"inputs": inputs, "options": options}, "output": pipe(inputs, **options)}


def _run_error(pipe, task: str, name: str, inputs: Any, **options: Any) -> dict[str, Any]:
    """Records a call Python rejects, so the port can decide to match (or document) the refusal."""
    try:
        output = pipe(inputs, **options)
    except Exception as exc:  # noqa: BLE001 - the exception itself is the golden
        return {"name": name, "task": task, "call": {"inputs": inputs, "options": options},
                "error": {"type": type(exc).__name__, "message": str(exc)}}
    raise AssertionError(f"{name}: expected an error, got {output!r}")


def compact_raw(outputs: dict[str, np.ndarray], top: int = 10) -> dict[str, Any]:
    """Vocabulary-sized rows are kept as their top entries so goldens stay small."""
    compact: dict[str, Any] = {}
    for name, value in outputs.items():
        if value.shape[-1] > 64:
            order = np.argsort(-value, axis=-1, kind="stable")[..., :top]
            compact[name] = {
                "shape": list(value.shape),
                "top_indices": order,
                "top_values": np.take_along_axis(value, order, axis=-1),
            }
        else:
            compact[name] = value
    return compact


def classification_cases(fixture: TextFixture, pipe, _model) -> list[dict[str, Any]]:
    t = "text-classification"
    mids = texts.medium_texts(4)
    cases = [
        _run(pipe, t, "short_default", texts.SHORT),
        _run(pipe, t, "empty", texts.EMPTY),
        _run(pipe, t, "whitespace", texts.WHITESPACE),
        _run(pipe, t, "unicode_all_labels", texts.UNICODE, top_k=None),
        _run(pipe, t, "top_k_2", texts.SHORT, top_k=2),
        _run(pipe, t, "long_truncated", texts.long_text(), truncation=True),
        _run(pipe, t, "batch_mixed_lengths", [texts.SHORT, texts.EMPTY, *mids, texts.long_text()], truncation=True, batch_size=4),
        _run(pipe, t, "pair", {"text": texts.SHORT, "text_pair": texts.PERSONISH}, top_k=None),
    ]
    for fn in ("softmax", "sigmoid", "none"):
        cases.append(_run(pipe, t, f"function_to_apply_{fn}", texts.PERSONISH, top_k=None, function_to_apply=fn))
    return cases + truncation_cases(pipe)


def truncation_cases(pipe) -> list[dict[str, Any]]:
    """A truncation length below the model's, as a user sets max_length to cut CPU time and memory."""
    t = "text-classification"
    mids = texts.medium_texts(3)
    return [
        _run(pipe, t, "long_max_length_16", texts.long_text(), truncation=True, max_length=16),
        _run(pipe, t, "batch_max_length_24", [texts.SHORT, texts.long_text(), *mids], truncation=True, max_length=24, batch_size=4),
    ]


def cross_encoder_cases(fixture: TextFixture, pipe, _model) -> list[dict[str, Any]]:
    t = "text-classification"
    query = "when is the meeting"
    docs = [texts.SHORT, texts.PERSONISH, texts.UNICODE, texts.EMPTY, *texts.medium_texts(2), texts.long_text()]
    pairs = [{"text": query, "text_pair": d} for d in docs]
    return [
        _run(pipe, t, "pairs_sigmoid", pairs, function_to_apply="sigmoid", truncation=True, batch_size=3),
        _run(pipe, t, "pairs_none", pairs, function_to_apply="none", truncation=True, batch_size=3),
        _run(pipe, t, "single_pair_default", {"text": query, "text_pair": texts.SHORT}),
    ]


def token_classification_cases(fixture: TextFixture, pipe, _model) -> list[dict[str, Any]]:
    t = "token-classification"
    cases = []
    for strategy in ("none", "simple", "first", "average", "max"):
        cases.append(_run(pipe, t, f"aggregation_{strategy}", texts.PERSONISH, aggregation_strategy=strategy))
        cases.append(_run(pipe, t, f"unicode_{strategy}", texts.UNICODE, aggregation_strategy=strategy))
    cases += [
        _run(pipe, t, "empty", texts.EMPTY),
        _run(pipe, t, "keep_O_labels", texts.SHORT, ignore_labels=[]),
        _run(pipe, t, "long_truncated_simple", texts.long_text(), aggregation_strategy="simple"),
        _run(pipe, t, "batch_simple", [texts.SHORT, texts.PERSONISH, texts.EMPTY, texts.UNICODE], aggregation_strategy="simple", batch_size=2),
    ]
    return cases


def zero_shot_cases(fixture: TextFixture, pipe, _model) -> list[dict[str, Any]]:
    t = "zero-shot-classification"
    labels = ["travel", "business", "cooking", "spam"]
    return [
        _run(pipe, t, "single_label", texts.PERSONISH, candidate_labels=labels),
        _run(pipe, t, "multi_label", texts.PERSONISH, candidate_labels=labels, multi_label=True),
        _run(pipe, t, "one_candidate", texts.SHORT, candidate_labels=["meeting"]),
        _run(pipe, t, "one_candidate_multi", texts.SHORT, candidate_labels=["meeting"], multi_label=True),
        _run(pipe, t, "template", texts.UNICODE, candidate_labels=labels, hypothesis_template="The topic is {}."),
        _run(pipe, t, "long_truncated", texts.long_text(), candidate_labels=labels),
        _run(pipe, t, "batch", [texts.SHORT, texts.WHITESPACE, texts.UNICODE], candidate_labels=labels, batch_size=4),
        _run_error(pipe, t, "empty_rejected", texts.EMPTY, candidate_labels=labels),
    ]


def feature_extraction_cases(fixture: TextFixture, pipe, model) -> list[dict[str, Any]]:
    t = "feature-extraction"
    cases = [
        _run(pipe, t, "empty", texts.EMPTY),
        _run(pipe, t, "whitespace", texts.WHITESPACE),
        _run(pipe, t, "unicode", texts.UNICODE),
        _run(pipe, t, "short", texts.SHORT),
        _run(pipe, t, "long_truncated", texts.long_text(), tokenize_kwargs={"truncation": True}),
        _run(pipe, t, "batch", [texts.SHORT, texts.PERSONISH], batch_size=2),
    ]
    return cases


def sentence_embedding_cases(tokenizer, model) -> list[dict[str, Any]]:
    """Mean pooling over the attention mask then L2 normalisation (sentence-transformers' recipe)."""
    inputs = [texts.EMPTY, texts.SHORT, texts.UNICODE, texts.PERSONISH, texts.long_text()]
    enc = tokenizer(inputs, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    normalized = torch.nn.functional.normalize(pooled, p=2, dim=1)
    return [
        {
            "name": "mean_pooling",
            "task": "sentence-embedding",
            "call": {"inputs": inputs, "options": {"pooling": "mean", "normalize": False, "truncation": True}},
            "output": pooled,
        },
        {
            "name": "mean_pooling_normalized",
            "task": "sentence-embedding",
            "call": {"inputs": inputs, "options": {"pooling": "mean", "normalize": True, "truncation": True}},
            "output": normalized,
        },
    ]


def fill_mask_cases(fixture: TextFixture, pipe, _model) -> list[dict[str, Any]]:
    t = "fill-mask"
    mask = pipe.tokenizer.mask_token
    return [
        _run(pipe, t, "default_top_5", f"The meeting is on {mask} at noon."),
        _run(pipe, t, "top_k_3", f"Please {mask} this e-mail.", top_k=3),
        _run(pipe, t, "two_masks", f"{mask} from Acme flew to {mask}.", top_k=2),
        _run(pipe, t, "unicode", f"Crème brûlée 🍮 {mask} 東京", top_k=2),
        _run(pipe, t, "targets", f"The meeting is on {mask} at noon.", targets=["mon", "the", "spam"]),
        _run(pipe, t, "batch", [f"Hello {mask}.", f"{mask} is the answer to everything you asked for."], top_k=2, batch_size=2),
    ]


def qa_cases(fixture: TextFixture, tokenizer, model) -> list[dict[str, Any]]:
    context = texts.PERSONISH + " The flight left at 9 am and landed two hours later."
    long_context = texts.long_text()[:1500] + " " + context
    specs = [
        ("short", "Who flew to Berlin?", context, {}),
        ("top_k_3", "When did the flight leave?", context, {"top_k": 3}),
        ("max_answer_len_3", "Where did John fly?", context, {"top_k": 2, "max_answer_len": 3}),
        ("impossible_allowed", "What is the capital of Peru?", context, {"handle_impossible_answer": True}),
        ("unicode", "Who ate?", texts.UNICODE, {"top_k": 2}),
        ("long_context_stride", "Who flew to Berlin?", long_context, {"top_k": 2, "doc_stride": 16, "max_seq_len": 64}),
    ]
    cases = []
    for name, question, ctx, options in specs:
        result = qa_reference.answer(model, tokenizer, question, ctx, **options)
        cases.append(
            {
                "name": name,
                "task": "question-answering",
                "call": {"inputs": {"question": question, "context": ctx}, "options": options},
                "output": result["answers"],
                "raw": result["windows"],
            }
        )
    return cases


FIXTURE_LIST: list[TextFixture] = [
    TextFixture("bert-feature-extraction", "bert", "Model", "feature-extraction", None, ["last_hidden_state"], 101, feature_extraction_cases),
    TextFixture(
        "bert-text-classification", "bert", "ForSequenceClassification", "text-classification",
        ["ham", "spam", "newsletter", "personal"], ["logits"], 102, classification_cases,
        problem_type="single_label_classification",
    ),
    TextFixture(
        "bert-multi-label", "bert", "ForSequenceClassification", "text-classification",
        ["urgent", "finance", "travel", "tech", "social"], ["logits"], 103, classification_cases,
        problem_type="multi_label_classification",
    ),
    TextFixture("bert-token-classification", "bert", "ForTokenClassification", "token-classification", BIO_LABELS, ["logits"], 104, token_classification_cases),
    TextFixture("bert-question-answering", "bert", "ForQuestionAnswering", "question-answering", None, ["start_logits", "end_logits"], 105, qa_cases),
    TextFixture("bert-fill-mask", "bert", "ForMaskedLM", "fill-mask", None, ["logits"], 106, fill_mask_cases),
    TextFixture("bert-zero-shot", "bert", "ForSequenceClassification", "zero-shot-classification", NLI_LABELS, ["logits"], 107, zero_shot_cases),
    TextFixture(
        "bert-cross-encoder", "bert", "ForSequenceClassification", "text-classification", ["LABEL_0"], ["logits"], 108, cross_encoder_cases,
    ),
    TextFixture(
        "roberta-text-classification", "roberta", "ForSequenceClassification", "text-classification",
        ["negative", "neutral", "positive"], ["logits"], 109, classification_cases,
        problem_type="single_label_classification",
    ),
]


def build(fixture: TextFixture, tokenizer) -> dict[str, Any]:
    from transformers import AutoModel, AutoTokenizer, pipeline

    out_dir = FIXTURES / fixture.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    seed_everything(fixture.seed)
    config = _config(fixture, len(tokenizer), tokenizer)
    model = _model_class(fixture)(config).eval()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        save_tokenizer(tokenizer, source)
        # Goldens come from the files as saved, exactly what a user (or the ONNX folder) has.
        loaded_tok = AutoTokenizer.from_pretrained(source)
        loaded = _model_class(fixture).from_pretrained(source).eval()
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(source / name, out_dir / name)

        feeds = _parity_feeds(fixture, loaded_tok)
        example = {k: torch.from_numpy(v) for k, v in feeds[1].items()}
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(loaded, example, fixture.outputs, _dynamic_axes(fixture), onnx_path)

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                result = loaded(**{k: torch.from_numpy(v) for k, v in feed.items()})
            return {name: getattr(result, name).numpy() for name in fixture.outputs}

        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        if fixture.task == "question-answering":
            pipeline_cases = fixture.cases(fixture, loaded_tok, loaded)
            reference_impl = "kit/qa_reference.py (transformers 5 has no question-answering pipeline)"
        else:
            pipe = pipeline(fixture.task, model=str(source), tokenizer=str(source), device="cpu")
            pipeline_cases = fixture.cases(fixture, pipe, loaded)
            if fixture.task == "feature-extraction":
                pipeline_cases += sentence_embedding_cases(loaded_tok, loaded)
            reference_impl = "transformers.pipeline"

        # Raw tensors for one padded batch let a consumer test the session apart from postprocessing.
        raw_outputs = [{"inputs": feeds[0], "outputs": compact_raw(reference(feeds[0]))}]

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": fixture.name,
        "task": fixture.task,
        "reference": {"runtime": "torch", "implementation": reference_impl},
        "seed": fixture.seed,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": _input_names(fixture), "outputs": fixture.outputs, "parity": parity},
        "tokenization": tokenization_cases(loaded_tok),
        "pipeline": pipeline_cases,
        "raw": raw_outputs,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": fixture.name, "parity": parity}
