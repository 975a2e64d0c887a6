"""Tiny TAPAS table-question-answering models (one with the aggregation head, one without) with
goldens from transformers' table-question-answering pipeline, and TapasTokenizer's own encodings of
more tables (numbers, dates, text, empty cells, tables cut by drop_rows_to_fit) so that a consumer can
test its encoding apart from the model.

TapasTokenizer has no fast (Rust) version: the fixture carries its vocab.txt and tokenizer_config.json
(so transformers loads the folder as TAPAS) and a tokenizer.json of the same WordPiece vocabulary
(BertTokenizer's layout) for consumers that tokenize cells with the `tokenizers` library.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .tokenizer_kit import save as save_tokenizer

NAME = "tapas-table-question-answering"
NAME_NO_AGGREGATION = "tapas-table-question-answering-no-aggregation"
SEED = 419
# Short enough that a table of forty rows is cut by drop_rows_to_fit.
MAX_LENGTH = 128
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
AGGREGATION_LABELS = {0: "NONE", 1: "SUM", 2: "AVERAGE", 3: "COUNT"}

REPOSITORIES = {
    "Repository": ["Transformers", "Datasets", "Tokenizers"],
    "Stars": ["36542", "4512", "3934"],
    "Contributors": ["651", "77", "34"],
    "Programming language": ["Python", "Python", "Rust, Python and NodeJS"],
}
ACTORS = {
    "actors": ["brad pitt", "leonardo di caprio", "george clooney"],
    "age": ["56", "45", "59"],
    "number of movies": ["87", "53", "69"],
    "date of birth": ["7 february 1967", "10 june 1996", "28 november 1967"],
}
EVENTS = {
    "event": ["Launch", "Review", "Release", "Retro"],
    "date": ["2010-03-14", "March 2011", "june 5, 2012", "1999"],
    "year": ["1990s", "2001", "1987", "2015"],
    "day": ["first", "second", "3rd", "twelve"],
}
GAPS = {
    "city": ["Berlin", "", "Paris", "Lima"],
    "population": ["3,645,000", "n/a", "2,161,000", "?"],
    "area": ["891.8", "", "105.4", "2672"],
    "note": ["", "---", "capital", "EMPTY"],
}
UNICODE = {
    "Städte": ["München", "Zürich", "東京"],
    "Höhe (m)": ["519", "408", "40"],
    "Fläche": ["310,7 km²", "87.88 km²", "2194 km²"],
}


def _long_table(rows: int) -> dict[str, list[str]]:
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    return {
        "name": [f"{names[i % len(names)]} {i}" for i in range(rows)],
        "score": [str((i * 37) % 101) for i in range(rows)],
        "city": [["Berlin", "Paris", "Lima", "Oslo"][i % 4] for i in range(rows)],
    }


PIPELINE_CASES: list[tuple[str, dict[str, list[str]], str]] = [
    ("stars", REPOSITORIES, "How many stars does the transformers repository have?"),
    ("stars_comparison", REPOSITORIES, "Which repositories have more than 4000 stars?"),
    ("actors_age", ACTORS, "How old is george clooney?"),
    ("actors_born_before", ACTORS, "Who was born before 1970?"),
    ("events_dates", EVENTS, "What happened in march 2011?"),
    ("gaps_empty_cells", GAPS, "What is the population of Paris?"),
    ("unicode", UNICODE, "Welche Stadt liegt über 400 m?"),
    ("long_table_truncated", _long_table(40), "Which names have a score above 50?"),
    ("one_column", {"word": ["one", "two", "three"]}, "which one is two?"),
]

# Encodings only (no model): more shapes of table for TapasTokenizer parity.
ENCODING_CASES: list[tuple[str, dict[str, list[str]], str, dict[str, Any]]] = [
    *((name, table, query, {}) for name, table, query in PIPELINE_CASES),
    ("numbers_mixed", {"a": ["1", "2.5", "-3", "1,000", ".5"], "b": ["10th", "1e3", "twelve", "x", "7 apples"]}, "more than 2 or less than -1?", {}),
    ("dates_mixed", {"d": ["january", "may 2001", "2001-05", "12-25-1999", "25.12.1999"], "e": ["monday, jan 5", "sept 3", "feb 29", "1 jan 2000", "2024"]}, "after may 3 2001?", {}),
    ("years_vs_numbers", {"y": ["1990", "2000", "2010"], "z": ["2010", "2020", "2030"]}, "in 2000", {}),
    # TAPAS reads years 1700-2016 only as dates: "2020" stays a number and loses its rank in a date column.
    ("years_past_2016", {"when": ["may 2001", "2020", "june 2003", "july 1999"], "n": ["1", "2", "3", "4"]}, "after 2000?", {}),
    # Special tokens count only as whole white-space separated words.
    ("special_token_words", {"s": ["[CLS] x", "x[CLS]", "a [EMPTY] b", "[MASK]", "-[SEP]"], "t": ["1", "2", "3", "4", "5"]}, "[SEP] or [cls]?", {}),
    ("all_empty_column", {"name": ["a", "b"], "blank": ["", ""]}, "which?", {}),
    ("long_table_max_length_48", _long_table(12), "Which names have a score above 50?", {"max_length": 48}),
    ("long_cells_trimmed", {"text": ["a b c d e f g h i j k l m n o p q r s t", "u v w x y z"], "n": ["1", "2"]}, "letters?", {"max_length": 24}),
    ("question_number_words", {"n": ["3", "7", "12"]}, "is it the third, the seventh or twelve?", {}),
]


# TapasTokenizer's parse_text on texts the tables above do not reach (recorded as spans and values).
PARSE_TEXTS = [
    "1,234.5 and -3 or +7 and .5",
    "the 21st, 2nd and 3rd, 100th",
    "1e5 0x10 inf nan infinity 1_000",
    "one two twelve thirteen first twelfth zeroth",
    "٣٤ apples and 𝟏𝟐 pears",
    "january | may | sept | sep 3 | 1990s | 2016 | 2017 | 1699",
    "march 2011, mar 2011, 7 february 1967, february 7, 1967, feb 7, 2001",
    "12-25-1999 25.12.1999 1999-12-25 1999-12 2001-13 02-30-2001",
    "monday, jan 5 and friday, march 13",
    "feb 29, feb 29 2000, 29 february 1900, 30 june, 31 june",
    "   Mixed  CASE\tJune   5  ",
    "1,23,456 and 12,345,678.90 and 1.",
    "from 1999 to 2003 (4 years)",
]


def _parse_cases() -> list[dict[str, Any]]:
    from transformers.models.tapas.tokenization_tapas import normalize_for_match, parse_text

    def value(v):
        if v.float_value is not None:
            return {"number": v.float_value}
        return {"date": [v.date.year, v.date.month, v.date.day]}

    return [
        {"text": text, "spans": [{"begin": s.begin_index, "end": s.end_index, "values": [value(v) for v in s.values]} for s in parse_text(normalize_for_match(text))]}
        for text in PARSE_TEXTS
    ]


def _vocabulary(tokenizer) -> list[str]:
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    assert tokens == [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    # TAPAS marks an empty cell with its own token.
    return tokens + ["[EMPTY]"]


def _tokenizers(bert, folder: Path):
    """TapasTokenizer and a BertTokenizer (fast) over one vocabulary, both saved into folder."""
    from transformers import BertTokenizer, TapasTokenizer

    tokens = _vocabulary(bert)
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    tapas = TapasTokenizer(str(vocab_file), model_max_length=MAX_LENGTH)
    tapas.save_pretrained(folder)
    fast = BertTokenizer(
        vocab={t: i for i, t in enumerate(tokens)},
        do_lower_case=True,
        model_max_length=MAX_LENGTH,
        additional_special_tokens=["[EMPTY]"],
    )
    with tempfile.TemporaryDirectory() as tmp:
        save_tokenizer(fast, tmp)
        (folder / "tokenizer.json").write_bytes((Path(tmp) / "tokenizer.json").read_bytes())
    return tapas


@contextlib.contextmanager
def _exportable_segment_reduce():
    """TAPAS reduces over table cells with scatter_reduce(include_self=False) (the per-cell position
    restart in the embeddings, the cell and column averages of the single-column selection head),
    which ONNX cannot express. The same reductions written with include_self=True: a segment holding
    no token gives 0 as before, the others their sum, mean, minimum or maximum. Only the export runs
    under this; the parity reference is the stock model.
    """
    from transformers.models.tapas import modeling_tapas

    stock = modeling_tapas._segment_reduce

    def segment_reduce(values, index, segment_reduce_fn, name):
        flat_index = modeling_tapas.flatten(index)
        vector_shape = values.size()[len(index.indices.size()) :]
        flat_values = values.reshape([-1] + list(vector_shape)).float()
        indices = flat_index.indices.long()
        zeros = torch.zeros(flat_index.num_segments, dtype=torch.float, device=flat_values.device)
        count = zeros.scatter_add(0, indices, torch.ones_like(flat_values))
        if segment_reduce_fn == "sum":
            reduced = zeros.scatter_add(0, indices, flat_values)
        elif segment_reduce_fn == "mean":
            reduced = zeros.scatter_add(0, indices, flat_values) / torch.clamp(count, min=1.0)
        else:
            seed = 1e9 if segment_reduce_fn == "amin" else -1e9
            reduced = torch.full_like(zeros, seed).scatter_reduce(0, indices, flat_values, reduce=segment_reduce_fn, include_self=True)
            reduced = torch.where(count > 0, reduced, zeros)
        new_shape = list(index.batch_shape()) + [index.num_segments] + list(vector_shape)
        output_index = modeling_tapas.range_index_map(index.batch_shape(), index.num_segments, device=index.indices.device)
        return reduced.view(new_shape).to(values.dtype), output_index

    modeling_tapas._segment_reduce = segment_reduce
    try:
        yield
    finally:
        modeling_tapas._segment_reduce = stock


def _check_parity(path: Path, reference, feeds: list[dict[str, np.ndarray]]) -> dict[str, Any]:
    """check_parity at 1e-4 on every logit but those the single-column head pushed down by 10000
    (the cells outside the chosen column, never selected): float32 spaces values near -10000 by
    1e-3, so there ORT and torch differ by a unit in the last place. Those are held to 2e-3."""
    sess = onnx_export.session(path)
    worst, worst_far = 0.0, 0.0
    for feed in feeds:
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))
        for name, expected in reference(feed).items():
            diff = np.abs(got[name].astype(np.float64) - expected)
            far = np.abs(expected) > 1000
            worst = max(worst, float(np.max(np.where(far, 0, diff))))
            worst_far = max(worst_far, float(np.max(np.where(far, diff, 0))))
    if worst > 1e-4 or worst_far > 2e-3:
        raise onnx_export.ParityError(f"{path}: ONNX Runtime differs from torch by {worst:.3g} ({worst_far:.3g} near -10000)")
    return {"max_abs_diff": worst, "tolerance": 1e-4, "max_abs_diff_near_log_zero": worst_far, "batches": len(feeds)}


def _margins(tokenizer, encoding, logits: np.ndarray) -> float:
    """The closest any cell's mean probability comes to the 0.5 threshold, over the batch."""
    probabilities = 1 / (1 + np.exp(-np.maximum(logits, -88.7))) * encoding["attention_mask"].numpy()
    closest = 1.0
    for i in range(logits.shape[0]):
        types = encoding["token_type_ids"][i].numpy()
        cells = tokenizer._get_mean_cell_probs(probabilities[i].tolist(), types[:, 0].tolist(), types[:, 2].tolist(), types[:, 1].tolist())
        closest = min([closest, *(abs(p - 0.5) for p in cells.values())])
    return closest


def build_one(bert, name: str, aggregation: bool) -> dict[str, Any]:
    import pandas as pd
    from transformers import TapasConfig, TapasForQuestionAnswering, TapasTokenizer, pipeline

    out_dir = FIXTURES / name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    seed_everything(SEED + (0 if aggregation else 1))
    tokens = _vocabulary(bert)
    extra: dict[str, Any] = (
        {"num_aggregation_labels": 4, "aggregation_labels": AGGREGATION_LABELS, "no_aggregation_label_index": 0}
        if aggregation
        else {"num_aggregation_labels": 0}
    )
    config = TapasConfig(
        vocab_size=len(tokens),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=MAX_LENGTH,
        initializer_range=0.2,
        **extra,
    )
    model = TapasForQuestionAnswering(config).eval()
    outputs = ["logits", "logits_aggregation"] if aggregation else ["logits"]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        source.mkdir()
        model.save_pretrained(source)
        tokenizer = _tokenizers(bert, source)
        for file in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
            (out_dir / file).write_bytes((source / file).read_bytes())
        loaded = TapasForQuestionAnswering.from_pretrained(source).eval()
        tokenizer = TapasTokenizer.from_pretrained(source)
        pipe = pipeline("table-question-answering", model=str(source), tokenizer=str(source), device="cpu")

        def encode(table: dict[str, list[str]], query, **options) -> Any:
            return tokenizer(pd.DataFrame(table), query, return_tensors="pt", truncation="drop_rows_to_fit", padding=True, **options)

        single = [encode(table, query) for _, table, query in PIPELINE_CASES]
        batch = encode(REPOSITORIES, [q for n, t, q in PIPELINE_CASES if t is REPOSITORIES] + ["Who has the fewest contributors?"])
        feeds = [{k: e[k].numpy().astype(np.int64) for k in INPUTS} for e in [*single, batch]]
        onnx_path = out_dir / "model.onnx"
        axes: dict[str, dict[int, str]] = {k: {0: "batch_size", 1: "sequence_length"} for k in INPUTS + ["logits"]}
        if aggregation:
            axes["logits_aggregation"] = {0: "batch_size"}
        with _exportable_segment_reduce():
            onnx_export.export(loaded, {k: torch.from_numpy(v) for k, v in feeds[-1].items()}, outputs, axes, onnx_path)

        def reference(f: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                out = loaded(**{k: torch.from_numpy(v) for k, v in f.items()})
            return {o: getattr(out, o).numpy() for o in outputs}

        parity = _check_parity(onnx_path, reference, feeds)
        margin = min(_margins(tokenizer, e, reference({k: e[k].numpy() for k in INPUTS})["logits"]) for e in [*single, batch])

        cases = []
        for case_name, table, query in PIPELINE_CASES:
            output = pipe(table=pd.DataFrame(table), query=query)
            cases.append({"name": case_name, "task": "table-question-answering", "call": {"inputs": {"table": table, "query": query}, "options": {}}, "output": output})
        # One table, several questions at once: batched, and sequentially (each question's prev_labels
        # from the answer to the one before, as the SQA models read them).
        queries = ["Which repositories are written in Python?", "How many stars do they have?", "And contributors?"]
        for sequential in (False, True):
            output = pipe(table=pd.DataFrame(REPOSITORIES), query=queries, sequential=sequential)
            options = {"sequential": True} if sequential else {}
            case = {"name": f"query_list{'_sequential' if sequential else ''}", "task": "table-question-answering", "call": {"inputs": {"table": REPOSITORIES, "query": queries}, "options": options}, "output": output}
            if sequential:
                # The prev_labels each query was fed (sequential_inference writes them into the
                # batch's token_type_ids in place), unpadded, so that a consumer can check its own.
                fed = encode(REPOSITORIES, queries)
                pipe.sequential_inference(**{k: fed[k] for k in INPUTS})
                lengths = fed["attention_mask"].sum(dim=1).tolist()
                case["prev_labels"] = [fed["token_type_ids"][i, : lengths[i], 3].tolist() for i in range(len(queries))]
            cases.append(case)

        encodings = []
        for case_name, table, query, options in ENCODING_CASES:
            e = tokenizer(pd.DataFrame(table), query, truncation="drop_rows_to_fit", **options)
            encodings.append({"name": case_name, "table": table, "query": query, "options": options, "input_ids": e["input_ids"], "token_type_ids": e["token_type_ids"]})

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": name,
        "task": "table-question-answering",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline + TapasTokenizer"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": INPUTS, "outputs": outputs, "parity": parity},
        "cell_threshold_margin": margin,
        "pipeline": cases,
        "encodings": encodings,
        "parse_text": _parse_cases(),
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": name, "parity": parity, "margin": margin}


def build(bert, want) -> list[dict[str, Any]]:
    results = []
    if want(NAME):
        results.append(build_one(bert, NAME, aggregation=True))
    if want(NAME_NO_AGGREGATION):
        results.append(build_one(bert, NAME_NO_AGGREGATION, aggregation=False))
    return results
