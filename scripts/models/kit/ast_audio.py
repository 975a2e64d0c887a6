"""Tiny Audio Spectrogram Transformer classifier (ASTForAudioClassification) with ASTFeatureExtractor
goldens: the extractor's Kaldi fbank features per clip (torchaudio.compliance.kaldi.fbank, the path
transformers takes when torchaudio is installed), and the real `audio-classification` pipeline.

The clips are the Wav2Vec2 fixture's (kit/audio.py draws them from code) over a -34 dB white-noise
floor, written into this folder so it stands alone. The floor is there as in any recording: over pure
synthetic tones most mel bins hold only float32 round-off (energies near 1e-7, where the log is
steep), and there torch's float32 fbank and a float64 one part by more than 1e-4. Two more signals
are only in the goldens' feature cases (one longer than max_length frames, cut; one just over a
frame). The feature goldens carry each clip's 16 kHz input as the pipeline resampled it, so the
fbank is checked on Python's own input, apart from the resampler's 1e-5.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export
from .audio import SAMPLING_RATE, _f32, _signals, read_mono
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .text_fixtures import compact_raw

NAME = "ast-audio-classification"
SEED = 402
LABELS = ["speech", "music", "dog", "siren", "rain"]
MEL_BINS = 32
MAX_LENGTH = 24  # frames: the 0.2 s clips (18 frames) are padded, the 0.5 s signal is cut


NOISE_FLOOR = 0.02


def _clips() -> dict[str, tuple[np.ndarray, int, dict[str, str]]]:
    rng = np.random.default_rng(SEED)
    clips = {}
    for name, (signal, rate, kind) in _signals().items():
        noise = rng.normal(0, NOISE_FLOOR, signal.shape)
        clips[name] = (np.clip(signal + noise, -1, 1), rate, kind)
    return clips


def feature_signals() -> dict[str, np.ndarray]:
    """Signals only the feature cases take (stored in the goldens), over the same noise floor."""
    rng = np.random.default_rng(SEED + 1)
    n = np.arange(int(0.5 * SAMPLING_RATE))
    long = 0.3 * np.sin(2 * np.pi * 440 * n / SAMPLING_RATE) + 0.2 * np.sin(2 * np.pi * 3000 * n / SAMPLING_RATE)
    m = np.arange(410)
    short = 0.5 * np.sin(2 * np.pi * 1000 * m / SAMPLING_RATE)
    return {name: (x + rng.normal(0, NOISE_FLOOR, x.shape)).astype(np.float32)
            for name, x in (("long_0.5s_cut", long), ("short_410_samples", short))}


def _kaldi_mel_banks() -> dict[str, Any]:
    """torchaudio's Kaldi mel banks for the extractor's settings (vtln off), [mel][bin] over the
    padded window's first half; fbank appends a zero column for the Nyquist bin."""
    from torchaudio.compliance.kaldi import get_mel_banks

    banks, _ = get_mel_banks(MEL_BINS, 512, float(SAMPLING_RATE), 20.0, 0.0, 100.0, -500.0, 1.0)
    return {"num_bins": MEL_BINS, "padded_window_size": 512, "sample_frequency": SAMPLING_RATE,
            "low_freq": 20.0, "high_freq": 0.0, "banks": _f32(banks.numpy())}


def build() -> dict[str, Any]:
    import soundfile as sf
    from torchaudio import functional as F
    from transformers import ASTConfig, ASTFeatureExtractor, ASTForAudioClassification, pipeline

    out_dir = FIXTURES / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "audio").mkdir(parents=True)
    seed_everything(SEED)
    paths = []
    for name, (signal, rate, kind) in _clips().items():
        path = out_dir / "audio" / name
        sf.write(str(path), signal.astype(np.float32), rate, **kind)
        paths.append(path)

    config = ASTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=48,
        patch_size=16,
        frequency_stride=8,
        time_stride=8,
        max_length=MAX_LENGTH,
        num_mel_bins=MEL_BINS,
        initializer_range=0.2,
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    model = ASTForAudioClassification(config).eval()
    extractor = ASTFeatureExtractor(
        sampling_rate=SAMPLING_RATE, num_mel_bins=MEL_BINS, max_length=MAX_LENGTH, do_normalize=True
    )
    decoded = {p.name: read_mono(p) for p in paths}

    def at_16k(name: str) -> np.ndarray:
        audio, rate, _ = decoded[name]
        if rate == SAMPLING_RATE:
            return audio
        return F.resample(torch.from_numpy(audio), rate, SAMPLING_RATE).numpy()

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        extractor.save_pretrained(source)
        loaded = ASTForAudioClassification.from_pretrained(source).eval()
        loaded_extractor = ASTFeatureExtractor.from_pretrained(source)
        for name in ("config.json", "preprocessor_config.json"):
            shutil.copy(source / name, out_dir / name)

        def features(audio: np.ndarray) -> np.ndarray:
            return loaded_extractor(audio, sampling_rate=SAMPLING_RATE, return_tensors="np")["input_values"]

        values = {p.name: features(at_16k(p.name)) for p in paths}
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(
            loaded,
            {"input_values": torch.from_numpy(np.concatenate([values[paths[0].name], values[paths[1].name]]))},
            ["logits"],
            {"input_values": {0: "batch_size"}, "logits": {0: "batch_size"}},
            onnx_path,
        )

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                return {"logits": loaded(input_values=torch.from_numpy(feed["input_values"])).logits.numpy()}

        feeds = [{"input_values": v} for v in values.values()]
        feeds.append({"input_values": np.concatenate(list(values.values()))})
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("audio-classification", model=str(source), device="cpu")
        assert isinstance(pipe.feature_extractor, ASTFeatureExtractor)

        def python_input(rel: str) -> dict[str, Any]:
            audio, rate, _ = decoded[Path(rel).name]
            return {"raw": audio, "sampling_rate": rate}

        rel = [f"audio/{p.name}" for p in paths]
        cases = []
        for name, inputs, options in [
            ("wav_16k_default", rel[0], {}),
            ("flac_22k_stereo_top_2", rel[1], {"top_k": 2}),
            ("ogg_8k_upsampled_top_3", rel[2], {"top_k": 3}),
            ("mp3_44k_stereo", rel[3], {}),
            ("float_wav_48k_sigmoid", rel[4], {"function_to_apply": "sigmoid"}),
            ("batch", rel, {"top_k": 2}),
        ]:
            actual = [python_input(r) for r in inputs] if isinstance(inputs, list) else python_input(inputs)
            cases.append({"name": name, "task": "audio-classification",
                          "call": {"inputs": inputs, "options": options}, "output": pipe(actual, **options)})

    feature_cases = [
        {"name": f"audio/{p.name}", "audio": f"audio/{p.name}", "input_16k": _f32(at_16k(p.name)),
         "input_values": _f32(values[p.name][0])}
        for p in paths
    ]
    for name, signal in feature_signals().items():
        feature_cases.append({"name": name, "input_16k": _f32(signal), "input_values": _f32(features(signal)[0])})

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "audio-classification",
        "reference": {
            "runtime": "torch",
            "implementation": "transformers.pipeline",
            "features": "ASTFeatureExtractor with torchaudio installed: torchaudio.compliance.kaldi.fbank",
            "decoding": "soundfile (libsndfile) float32, channels averaged; passed as {raw, sampling_rate}",
            "resampling": "torchaudio.functional.resample (the pipeline's own call)",
        },
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["input_values"], "outputs": ["logits"], "parity": parity},
        "feature_extractor": loaded_extractor.to_dict(),
        "kaldi_mel_banks": _kaldi_mel_banks(),
        "ast_features": feature_cases,
        "pipeline": cases,
        "raw": [{"inputs": {"audio": rel[0]}, "outputs": compact_raw(reference(feeds[0]))}],
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
