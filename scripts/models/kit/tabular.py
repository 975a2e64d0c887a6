"""scikit-learn models exported with skl2onnx, for the tabular pipeline, with predict/predict_proba goldens.

Each model is trained on a dataset scikit-learn ships (no download), on a seeded split; the goldens
are scikit-learn's own predict / predict_proba on the held-out rows. The ONNX files are converted
with `zipmap=False`, so a classifier's outputs are two tensors (`label` int64 [n], `probabilities`
float32 [n, classes]) rather than a sequence of maps; a regressor's is `variable` float32 [n, 1].

Beside model.onnx the kit writes a small config.json: `feature_names` (a row may be an object keyed
by them), `id2label` (class index -> name), `classes` (what `predict` returns for each index, which
is what the ONNX `label` output holds) and `problem_type`. It is what the model store reads from every
folder, so a tabular folder loads like any other.
"""
from __future__ import annotations

import platform
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .common import FIXTURES, GOLDENS_SCHEMA, PARITY_TOLERANCE, write_json

SEED = 1801
# Conservative opsets: TreeEnsembleClassifier/Regressor v3 and LinearClassifier run on every
# onnxruntime release of the last years, not only the newest.
TARGET_OPSET = {"": 17, "ai.onnx.ml": 3}
INPUT_NAME = "input"


@dataclass(frozen=True)
class Spec:
    name: str
    dataset: str
    estimator: Callable[[], Any]
    description: str


def _specs() -> list[Spec]:
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    return [
        Spec(
            "sklearn-decision-tree-iris",
            "iris",
            lambda: DecisionTreeClassifier(max_depth=3, random_state=SEED),
            "DecisionTreeClassifier(max_depth=3), 3 classes",
        ),
        Spec(
            "sklearn-random-forest-breast-cancer",
            "breast_cancer",
            lambda: RandomForestClassifier(n_estimators=5, max_depth=3, random_state=SEED),
            "RandomForestClassifier(n_estimators=5, max_depth=3), binary",
        ),
        Spec(
            "sklearn-gradient-boosting-wine",
            "wine",
            lambda: GradientBoostingClassifier(n_estimators=8, max_depth=2, random_state=SEED),
            "GradientBoostingClassifier(n_estimators=8, max_depth=2), 3 classes (24 trees)",
        ),
        Spec(
            "sklearn-logistic-regression-breast-cancer",
            "breast_cancer",
            # Scaled first, as one would in practice; skl2onnx converts the whole Pipeline.
            lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
            "StandardScaler + LogisticRegression, binary",
        ),
        Spec(
            "sklearn-random-forest-regressor-diabetes",
            "diabetes",
            lambda: RandomForestRegressor(n_estimators=4, max_depth=3, random_state=SEED),
            "RandomForestRegressor(n_estimators=4, max_depth=3), disease progression",
        ),
    ]


# Where each dataset comes from, for the goldens and the manifest.
DATASETS = {
    "iris": "Iris (Fisher 1936), UCI ML repository, CC BY 4.0",
    "wine": "Wine recognition, UCI ML repository, CC BY 4.0",
    "breast_cancer": "Breast Cancer Wisconsin (Diagnostic), UCI ML repository, CC BY 4.0",
    "diabetes": "Diabetes (Efron et al. 2004), as shipped by scikit-learn (BSD-3-Clause)",
}


def versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import skl2onnx
    import sklearn

    return {
        "python": platform.python_version(),
        "scikit-learn": sklearn.__version__,
        "skl2onnx": skl2onnx.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "numpy": np.__version__,
    }


def _load(dataset: str):
    from sklearn import datasets

    loader = getattr(datasets, f"load_{dataset}")
    return loader()


def _session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _convert(model: Any, name: str, n_features: int, is_classifier: bool, path: Path) -> None:
    import onnx
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType

    options = {id(model): {"zipmap": False}} if is_classifier else None
    onx = convert_sklearn(
        model,
        initial_types=[(INPUT_NAME, FloatTensorType([None, n_features]))],
        target_opset=TARGET_OPSET,
        options=options,
        # Without a name skl2onnx gives the graph a random uuid, and no two builds would match.
        name=name,
    )
    # skl2onnx collects the opsets in a set, so their order follows Python's string hashing (and
    # can list a domain twice): one entry per domain, in a fixed order, keeps rebuilds identical.
    versions_by_domain: dict[str, int] = {}
    for entry in onx.opset_import:
        versions_by_domain[entry.domain] = max(entry.version, versions_by_domain.get(entry.domain, 0))
    del onx.opset_import[:]
    for domain in sorted(versions_by_domain):
        onx.opset_import.add(domain=domain, version=versions_by_domain[domain])
    onnx.checker.check_model(onx)
    path.write_bytes(onx.SerializeToString())


def _ranked(proba: np.ndarray, labels: list[str], top_k: int | None) -> list[dict[str, Any]]:
    """Best first, ties by class index: the order the TypeScript pipeline promises."""
    order = np.argsort(-proba, kind="stable")
    k = len(order) if top_k is None else min(top_k, len(order))
    return [{"label": labels[i], "score": float(proba[i])} for i in order[:k]]


def _classification(index: int, proba: np.ndarray, labels: list[str], top_k: int | None) -> dict[str, Any]:
    return {"label": labels[index], "score": float(proba[index]), "scores": _ranked(proba, labels, top_k)}


def build(spec: Spec) -> dict[str, Any]:
    from sklearn.base import is_classifier as sk_is_classifier
    from sklearn.model_selection import train_test_split

    out_dir = FIXTURES / spec.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)

    data = _load(spec.dataset)
    x = np.asarray(data.data, dtype=np.float64)
    y = np.asarray(data.target)
    feature_names = [str(n) for n in data.feature_names]
    model = spec.estimator()
    classifier = sk_is_classifier(model)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, random_state=SEED, stratify=y if classifier else None
    )
    model.fit(x_train, y_train)
    # The rows as the ONNX model and the TypeScript pipeline receive them: float32. scikit-learn is
    # given the same float32 values (widened), so both sides see one input.
    rows32 = x_test.astype(np.float32)
    rows = rows32.astype(np.float64)

    onnx_path = out_dir / "model.onnx"
    _convert(model, spec.name, x.shape[1], classifier, onnx_path)
    session = _session(onnx_path)
    outputs = [o.name for o in session.get_outputs()]

    config: dict[str, Any] = {
        "model_type": "sklearn",
        "architectures": [type(model).__name__ if not hasattr(model, "steps") else "+".join(type(s).__name__ for _, s in model.steps)],
        "feature_names": feature_names,
        "converter": {"skl2onnx": versions()["skl2onnx"], "zipmap": False, "target_opset": TARGET_OPSET},
    }
    cases: list[dict[str, Any]] = []
    dataset_info: dict[str, Any] = {
        "name": spec.dataset,
        "loader": f"sklearn.datasets.load_{spec.dataset}",
        "licence": DATASETS[spec.dataset],
        "rows": int(x.shape[0]),
        "features": int(x.shape[1]),
        "train_rows": int(x_train.shape[0]),
        "held_out_rows": int(x_test.shape[0]),
        "split": {"test_size": 0.25, "random_state": SEED, "stratified": classifier},
    }
    inputs_json = rows32.tolist()

    if classifier:
        classes = [int(c) for c in model.classes_]
        names = [str(n) for n in data.target_names]
        labels = [names[c] for c in classes]
        config.update(
            {
                "problem_type": "single_label_classification",
                "id2label": {str(i): label for i, label in enumerate(labels)},
                "label2id": {label: i for i, label in enumerate(labels)},
                "classes": classes,
            }
        )
        predicted = model.predict(rows)
        proba = model.predict_proba(rows)
        indices = [classes.index(int(p)) for p in predicted]
        onnx_label, onnx_proba = session.run(["label", "probabilities"], {INPUT_NAME: rows32})
        max_diff = float(np.max(np.abs(onnx_proba.astype(np.float64) - proba)))
        if max_diff > PARITY_TOLERANCE or not np.array_equal(onnx_label, predicted):
            raise RuntimeError(f"{spec.name}: onnxruntime differs from scikit-learn (max |diff| {max_diff:.2e})")
        dataset_info["held_out_accuracy"] = float(np.mean(predicted == y_test))
        expected = [_classification(i, p, labels, None) for i, p in zip(indices, proba)]
        cases.append({"name": "held_out_batch", "task": "tabular", "call": {"inputs": inputs_json, "options": {}}, "output": expected})
        as_object = {name: float(v) for name, v in zip(feature_names, rows32[0])}
        cases.append({"name": "row_as_object", "task": "tabular", "call": {"inputs": as_object, "options": {}}, "output": expected[0]})
        cases.append(
            {
                "name": "top_k_1",
                "task": "tabular",
                "call": {"inputs": inputs_json[:5], "options": {"top_k": 1}},
                "output": [_classification(i, p, labels, 1) for i, p in zip(indices[:5], proba[:5])],
            }
        )
        raw = {"predict": predicted, "predict_proba": proba}
        reference = f"{config['architectures'][0]}.predict + predict_proba"
    else:
        config["problem_type"] = "regression"
        predicted = model.predict(rows)
        (onnx_value,) = session.run(["variable"], {INPUT_NAME: rows32})
        max_diff = float(np.max(np.abs(onnx_value[:, 0].astype(np.float64) - predicted)))
        if max_diff > PARITY_TOLERANCE:
            raise RuntimeError(f"{spec.name}: onnxruntime differs from scikit-learn (max |diff| {max_diff:.2e})")
        dataset_info["held_out_r2"] = float(model.score(rows, y_test))
        expected = [{"value": float(v)} for v in predicted]
        cases.append({"name": "held_out_batch", "task": "tabular", "call": {"inputs": inputs_json, "options": {}}, "output": expected})
        as_object = {name: float(v) for name, v in zip(feature_names, rows32[0])}
        cases.append({"name": "row_as_object", "task": "tabular", "call": {"inputs": as_object, "options": {}}, "output": expected[0]})
        raw = {"predict": predicted}
        reference = f"{config['architectures'][0]}.predict"

    write_json(out_dir / "config.json", config)
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": spec.name,
        "task": "tabular",
        "reference": {"runtime": "scikit-learn", "implementation": reference},
        "seed": SEED,
        "estimator": spec.description,
        "dataset": dataset_info,
        "versions": versions(),
        "onnx": {
            "file": "model.onnx",
            "inputs": [INPUT_NAME],
            "outputs": outputs,
            "parity": {"max_abs_diff": max_diff, "tolerance": PARITY_TOLERANCE, "batches": 1, "against": "scikit-learn"},
        },
        "pipeline": cases,
        # The inputs are those of the held_out_batch case, not repeated.
        "raw": [{"inputs": {"case": "held_out_batch"}, "outputs": raw}],
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": spec.name, "parity": {"max_abs_diff": max_diff}}


def build_all(want: Callable[[str], bool]) -> list[dict[str, Any]]:
    return [build(spec) for spec in _specs() if want(spec.name)]
