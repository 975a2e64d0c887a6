"""Tiny Wav2Vec2 audio classifier, synthetic audio files in four formats, and audio goldens.

The goldens prove the worker's audio front end step by step against the Python libraries:
decoding (libsndfile through soundfile), resampling (torchaudio, what transformers' audio
pipelines call), Wav2Vec2FeatureExtractor's normalisation, WhisperFeatureExtractor's log-mel
(for speech recognition), and the real `audio-classification` pipeline end to end.
"""
from __future__ import annotations

import base64
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .text_fixtures import compact_raw

NAME = "wav2vec2-audio-classification"
SEED = 401
LABELS = ["yes", "no", "up", "down", "left", "right"]
SAMPLING_RATE = 16_000
SECONDS = 0.2
# The signal the Whisper truncation case feeds: generated the same way by the test, not stored.
TRUNCATION_SECONDS = 31


def _f32(values: np.ndarray) -> dict[str, Any]:
    """A float32 array as base64 of its little-endian bytes: exact, and a fifth of JSON numbers."""
    array = np.ascontiguousarray(values, dtype="<f4")
    return {"dtype": "float32", "shape": list(array.shape), "base64": base64.b64encode(array.tobytes()).decode("ascii")}


def _signals() -> dict[str, tuple[np.ndarray, int, dict[str, str]]]:
    """Drawn from code (tones, a chirp, noise): reproducible and free of any licence."""
    rng = np.random.default_rng(SEED)

    def t(rate: int) -> np.ndarray:
        return np.arange(int(rate * SECONDS)) / rate

    tone = 0.5 * np.sin(2 * np.pi * 440 * t(16_000))
    r = 22_050
    chirp_l = 0.6 * np.sin(2 * np.pi * (300 * t(r) + 4000 * t(r) ** 2))
    chirp_r = 0.3 * np.sin(2 * np.pi * 1200 * t(r))
    noise = np.clip(rng.normal(0, 0.2, int(8_000 * SECONDS)), -1, 1)
    r = 44_100
    tones_l = 0.4 * np.sin(2 * np.pi * 523.25 * t(r)) + 0.2 * np.sin(2 * np.pi * 7000 * t(r))
    tones_r = 0.4 * np.sin(2 * np.pi * 659.25 * t(r))
    sweep = 0.7 * np.sin(2 * np.pi * (100 * t(48_000) + 20_000 * t(48_000) ** 2))
    return {
        "tone_16k_pcm16.wav": (tone, 16_000, {"format": "WAV", "subtype": "PCM_16"}),
        "chirp_22k_stereo.flac": (np.stack([chirp_l, chirp_r], 1), 22_050, {"format": "FLAC", "subtype": "PCM_16"}),
        "noise_8k.ogg": (noise, 8_000, {"format": "OGG", "subtype": "VORBIS"}),
        "tones_44k_stereo.mp3": (np.stack([tones_l, tones_r], 1), 44_100, {"format": "MP3", "subtype": "MPEG_LAYER_III"}),
        "sweep_48k_float.wav": (sweep, 48_000, {"format": "WAV", "subtype": "FLOAT"}),
    }


def read_mono(path: Path) -> tuple[np.ndarray, int, int]:
    """The reference decoding: libsndfile's float32 samples, channels averaged (ffmpeg's -ac 1)."""
    import soundfile as sf

    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return data.mean(axis=1, dtype=np.float32), rate, data.shape[1]


def truncation_signal() -> np.ndarray:
    n = np.arange(TRUNCATION_SECONDS * SAMPLING_RATE)
    x = 0.3 * np.sin(2 * np.pi * 440 * n / SAMPLING_RATE) + 0.2 * np.sin(2 * np.pi * 3000 * n / SAMPLING_RATE)
    return x.astype(np.float32)


def _whisper_case(name: str, extractor: Any, audio: np.ndarray, source: str) -> dict[str, Any]:
    features = extractor(audio, sampling_rate=SAMPLING_RATE, return_tensors="np")["input_features"][0]
    hop = extractor.hop_length
    # Frames past the audio and half a window see only padding: all at the floor (max - 8 + 4) / 4.
    # A long input keeps only its first frames here; last_frames holds the end.
    head = min(features.shape[1], len(audio) // hop + 4, 40)
    rest = features[:, head:]
    return {
        "name": name,
        "source": source,
        "config": extractor.to_dict(),
        "shape": list(features.shape),
        "head_frames": head,
        "head": _f32(features[:, :head]),
        "last_frames": _f32(features[:, -8:]),
        "rest_min": float(rest.min()) if rest.size else None,
        "rest_max": float(rest.max()) if rest.size else None,
    }


def build() -> dict[str, Any]:
    import soundfile as sf
    from torchaudio import functional as F
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForSequenceClassification,
        WhisperFeatureExtractor,
        pipeline,
    )

    out_dir = FIXTURES / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "audio").mkdir(parents=True)
    seed_everything(SEED)

    paths = []
    for name, (signal, rate, kind) in _signals().items():
        path = out_dir / "audio" / name
        sf.write(str(path), signal.astype(np.float32), rate, **kind)
        paths.append(path)

    config = Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=48,
        conv_dim=(32, 32, 32),
        conv_stride=(5, 2, 2),
        conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        feat_extract_norm="group",
        do_stable_layer_norm=False,
        classifier_proj_size=16,
        vocab_size=8,
        initializer_range=0.2,
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    model = Wav2Vec2ForSequenceClassification(config).eval()
    # The random init leaves the conv stack tiny next to the classifier; spread the weights so the
    # scores differ between inputs and the ranking is a real test.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(3.0)
    extractor = Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=SAMPLING_RATE, padding_value=0.0, do_normalize=True, return_attention_mask=False
    )

    decoded = {p.name: read_mono(p) for p in paths}
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        extractor.save_pretrained(source)
        loaded = Wav2Vec2ForSequenceClassification.from_pretrained(source).eval()
        for name in ("config.json", "preprocessor_config.json"):
            shutil.copy(source / name, out_dir / name)

        def at_16k(name: str) -> np.ndarray:
            audio, rate, _ = decoded[name]
            if rate == SAMPLING_RATE:
                return audio
            return F.resample(torch.from_numpy(audio), rate, SAMPLING_RATE).numpy()

        values = {p.name: extractor(at_16k(p.name), sampling_rate=SAMPLING_RATE, return_tensors="np")["input_values"] for p in paths}
        example = torch.from_numpy(values[paths[0].name])
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(
            loaded,
            {"input_values": example},
            ["logits"],
            {"input_values": {0: "batch_size", 1: "sequence_length"}, "logits": {0: "batch_size"}},
            onnx_path,
        )

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                return {"logits": loaded(input_values=torch.from_numpy(feed["input_values"])).logits.numpy()}

        feeds = [{"input_values": v} for v in values.values()]
        feeds.append({"input_values": np.concatenate([values[paths[0].name], values[paths[0].name] * 0.5])})
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("audio-classification", model=str(source), device="cpu")

        def python_input(rel: str) -> dict[str, Any]:
            audio, rate, _ = decoded[Path(rel).name]
            return {"raw": audio, "sampling_rate": rate}

        rel = [f"audio/{p.name}" for p in paths]
        cases = []
        for name, inputs, options in [
            ("wav_16k_default_top_5", rel[0], {}),
            ("flac_22k_stereo_top_2", rel[1], {"top_k": 2}),
            ("ogg_8k_upsampled_top_3", rel[2], {"top_k": 3}),
            ("mp3_44k_stereo", rel[3], {}),
            ("float_wav_48k_all_labels", rel[4], {"top_k": None}),
            ("sigmoid", rel[1], {"function_to_apply": "sigmoid"}),
            ("none", rel[3], {"function_to_apply": "none", "top_k": 3}),
            ("batch", rel, {"top_k": 1}),
        ]:
            actual = [python_input(r) for r in inputs] if isinstance(inputs, list) else python_input(inputs)
            cases.append({"name": name, "task": "audio-classification", "call": {"inputs": inputs, "options": options}, "output": pipe(actual, **options)})

    whisper = []
    for mels, name, audio_name in [(80, "whisper_80_mels_chirp", paths[1].name), (128, "whisper_128_mels_noise", paths[2].name)]:
        fe = WhisperFeatureExtractor(feature_size=mels)
        whisper.append(_whisper_case(name, fe, at_16k(audio_name), f"audio/{audio_name}"))
    whisper.append(_whisper_case("whisper_80_mels_wav", WhisperFeatureExtractor(feature_size=80), at_16k(paths[0].name), f"audio/{paths[0].name}"))
    whisper.append(_whisper_case("whisper_80_mels_truncated_31s", WhisperFeatureExtractor(feature_size=80), truncation_signal(), "truncation_signal"))

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "audio-classification",
        "reference": {
            "runtime": "torch",
            "implementation": "transformers.pipeline",
            "decoding": "soundfile (libsndfile) float32, channels averaged; passed as {raw, sampling_rate}",
            "resampling": "torchaudio.functional.resample (the pipeline's own call)",
        },
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["input_values"], "outputs": ["logits"], "parity": parity},
        "decoding": [
            {
                "audio": f"audio/{p.name}",
                "sampling_rate": decoded[p.name][1],
                "channels": decoded[p.name][2],
                "frames": len(decoded[p.name][0]),
                "mono": _f32(decoded[p.name][0]),
            }
            for p in paths
        ],
        "resampling": [
            {"audio": f"audio/{p.name}", "from": decoded[p.name][1], "to": SAMPLING_RATE, "output": _f32(at_16k(p.name))}
            for p in paths
            if decoded[p.name][1] != SAMPLING_RATE
        ],
        "wav2vec2_features": [
            {"audio": f"audio/{p.name}", "config": extractor.to_dict(), "input_values": _f32(values[p.name][0])}
            for p in paths[:2]
        ],
        "whisper_features": whisper,
        "pipeline": cases,
        "raw": [{"inputs": {"audio": rel[0]}, "outputs": compact_raw(reference(feeds[0]))}],
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
