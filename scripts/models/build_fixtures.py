"""Builds every committed tiny model fixture and its goldens: `npm run models:build`."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import texts, tokenizer_kit  # noqa: E402
from kit.common import threads_for_determinism  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", help="fixture names to build (default: all)")
    args = parser.parse_args()
    threads_for_determinism()
    wanted = set(args.only or [])

    def want(name: str) -> bool:
        return not wanted or name in wanted

    started = time.time()
    training = texts.training_texts()
    from kit import text_fixtures

    tokenizers = {}
    for fixture in text_fixtures.FIXTURE_LIST:
        if not want(fixture.name):
            continue
        if fixture.family not in tokenizers:
            train = tokenizer_kit.wordpiece if fixture.family == "bert" else tokenizer_kit.byte_level_bpe
            tokenizers[fixture.family] = train(training)
        result = text_fixtures.build(fixture, tokenizers[fixture.family])
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("llama-causal-lm"):
        from kit import causal_lm

        result = causal_lm.build(tokenizer_kit.sentencepiece_bpe(training))
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    from kit import seq2seq

    for fixture in seq2seq.FIXTURE_LIST:
        if want(fixture.name):
            result = seq2seq.build(fixture, training)
            print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("vit-image-classification"):
        from kit import vision

        result = vision.build()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    from kit import tabular

    for result in tabular.build_all(want):
        print(f"{result['name']}: onnxruntime vs scikit-learn max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("detr-object-detection") or want("yolos-object-detection"):
        from kit import detection

        for result in detection.build():
            print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("vit-image-features") or want("clip-vision-image-features"):
        from kit import image_features

        for result in image_features.build():
            print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("glpn-depth-estimation"):
        from kit import depth

        result = depth.build()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("wav2vec2-audio-classification"):
        from kit import audio

        result = audio.build()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("segformer-semantic-segmentation"):
        from kit import segmentation

        result = segmentation.build_semantic()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("segformer-background-removal"):
        from kit import segmentation

        result = segmentation.build_background()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("sam-mask-generation"):
        from kit import sam

        result = sam.build()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("clip-zero-shot-image-classification"):
        from kit import clip

        result = clip.build(training)
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("owlvit-zero-shot-object-detection"):
        from kit import owlvit

        result = owlvit.build(training)
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("vilt-visual-question-answering"):
        from kit import vilt

        result = vilt.build(tokenizer_kit.wordpiece(training))
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("llava-image-text-to-text"):
        from kit import llava

        result = llava.build(training)
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("layoutlm-document-question-answering"):
        from kit import layoutlm

        result = layoutlm.build(tokenizer_kit.wordpiece(training))
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("vit-gpt2-image-to-text"):
        from kit import image_to_text

        result = image_to_text.build(training)
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("ast-audio-classification"):
        from kit import ast_audio

        result = ast_audio.build()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("speecht5-text-to-speech"):
        from kit import speecht5

        result = speecht5.build()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("whisper-speech-recognition"):
        from kit import whisper

        result = whisper.build()
        print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}", flush=True)

    if want("tapas-table-question-answering") or want("tapas-table-question-answering-no-aggregation"):
        from kit import tapas

        for result in tapas.build(tokenizer_kit.wordpiece(training), want):
            print(f"{result['name']}: parity max |diff| {result['parity']['max_abs_diff']:.2e}, "
                  f"cell threshold margin {result['margin']:.2e}", flush=True)

    if want("all-MiniLM-L6-v2-int8"):
        import tempfile

        from kit import minilm
        from kit.common import DEFAULT_MODELS

        with tempfile.TemporaryDirectory() as work:
            result = minilm.build_default(DEFAULT_MODELS / "all-MiniLM-L6-v2-int8", Path(work))
        print(f"{result['name']}: fp32 parity {result['parity']['max_abs_diff']:.2e}, "
              f"int8 min cosine to fp32 {result['min_cosine_vs_fp32']:.4f}", flush=True)

    print(f"fixtures built in {time.time() - started:.0f}s")


if __name__ == "__main__":
    main()
