"""A tiny SpeechT5 text-to-speech model + HiFi-GAN vocoder in Optimum's layout, with goldens.

Files (Optimum's `optimum-cli export onnx --model microsoft/speecht5_tts --model-kwargs
'{"vocoder": "microsoft/speecht5_hifigan"}'` names and tensor names; batch 1, as Optimum exports it):
  encoder_model.onnx                input_ids [1, L] -> encoder_outputs [1, L, H], encoder_attention_mask [1, L]
  decoder_model.onnx                output_sequence [1, T, mel], speaker_embeddings [1, S], encoder_outputs,
                                    encoder_attention_mask -> output_sequence_out [1, T+1, mel],
                                    spectrum [r, mel], prob [r], present.{i}.decoder/encoder.key/value
  decoder_with_past_model.onnx      the same plus past_key_values.{i}.decoder/encoder.key/value; its
                                    presents are the self-attention (decoder) ones only
  decoder_postnet_and_vocoder.onnx  spectrogram [frames, mel] -> waveform [samples]
and merged/decoder_model_merged.onnx (the two decoders as Optimum merges them, loaded by a test
in their place), plus spm_char.model (the SentencePiece character model SpeechT5Tokenizer reads), tokenizer.json
(the same tokenizer converted for the `tokenizers` library; the goldens prove both give the same
ids), preprocessor_config.json (sampling_rate) and speaker_embeddings.npy (the default speaker).

Python's SpeechT5 applies the speech-decoder prenet's dropout (p=0.5) at inference too, so the
real pipeline's output changes from call to call and no golden could pin it (Optimum's export keeps
that randomness inside decoder_model.onnx). The fixture exports and runs the prenet without it: the
goldens are those of `pipeline("text-to-speech")` with `_consistent_dropout` made the identity.

The random stop head would stop every text at the first step (prob ~ 0.5 against threshold 0.5), so
the build steers it (_steer_stop_head): texts then stop on the threshold after about 14 steps
(28 frames), the empty text after 2, and the cases below add minlenratio (a later stop),
maxlenratio (runs to the max length), threshold, and the two inputs Python fails on (a text over max_text_positions; a spectrogram that outgrows
max_speech_positions).
"""
from __future__ import annotations

import io
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export, texts
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json

NAME = "speecht5-text-to-speech"
SEED = 505
MEL_BINS = 8
SPEAKER_DIM = 8
SAMPLING_RATE = 16_000
MAX_TEXT_POSITIONS = 64
MAX_SPEECH_POSITIONS = 256
# Stop on the threshold is decided by comparing a probability with it: no golden may sit this close.
STOP_MARGIN = 1e-3

INPUTS = [
    texts.SHORT,
    "Hello there.",
    "Click here to claim your FREE prize before Friday!",
    texts.UNICODE,
    "",
]


def _tokenizer(out_dir: Path):
    """A SentencePiece character model as microsoft/speecht5_tts ships one (ids 0-3: <s> <pad> </s> <unk>)."""
    import sentencepiece as spm
    from transformers import SpeechT5Tokenizer

    model = io.BytesIO()
    training = [t[:2000] for t in texts.training_texts()[:400]]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training), model_writer=model, model_type="char", vocab_size=64,
        character_coverage=1.0, bos_id=0, pad_id=1, eos_id=2, unk_id=3, minloglevel=2,
        num_threads=1,
    )
    (out_dir / "spm_char.model").write_bytes(model.getvalue())
    return SpeechT5Tokenizer(str(out_dir / "spm_char.model"), model_max_length=MAX_TEXT_POSITIONS)


def _tokenizer_json(tok, path: Path) -> None:
    """transformers has no converter for a SentencePiece *char* model; its pieces are single
    characters, so a Unigram model over them (with the model's own normalizer) splits the same way."""
    from tokenizers import Tokenizer, processors
    from tokenizers.models import Unigram
    from transformers.convert_slow_tokenizer import SpmConverter

    class CharConverter(SpmConverter):
        def tokenizer(self, proto):
            if proto.trainer_spec.model_type != 4:
                raise ValueError("expected a SentencePiece char model")
            return Tokenizer(Unigram(self.vocab(proto), unk_id=self.unk_id(proto), byte_fallback=False))

        def post_processor(self):
            # SpeechT5Tokenizer.build_inputs_with_special_tokens: the text, then </s>.
            return processors.TemplateProcessing(
                single="$A </s>", pair="$A $B </s>", special_tokens=[("</s>", tok.eos_token_id)]
            )

    CharConverter(tok).converted().save(str(path))


def _config(vocab_size: int):
    from transformers import SpeechT5Config, SpeechT5HifiGanConfig

    config = SpeechT5Config(
        vocab_size=vocab_size, hidden_size=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_layers=2, decoder_attention_heads=2, decoder_ffn_dim=32, num_mel_bins=MEL_BINS, reduction_factor=2,
        speech_decoder_prenet_units=16, speech_decoder_prenet_layers=2, speaker_embedding_dim=SPEAKER_DIM,
        speech_decoder_postnet_layers=2, speech_decoder_postnet_units=16, speech_decoder_postnet_kernel=5,
        max_text_positions=MAX_TEXT_POSITIONS, max_speech_positions=MAX_SPEECH_POSITIONS,
        encoder_max_relative_position=16, hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        positional_dropout=0.0, speech_decoder_postnet_dropout=0.0, initializer_range=0.2,
    )
    vocoder = SpeechT5HifiGanConfig(
        model_in_dim=MEL_BINS, sampling_rate=SAMPLING_RATE, upsample_initial_channel=16, upsample_rates=[2, 2],
        upsample_kernel_sizes=[4, 4], resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1, 3]],
        initializer_range=0.15,
    )
    return config, vocoder


def _no_prenet_dropout() -> None:
    from transformers.models.speecht5 import modeling_speecht5

    modeling_speecht5.SpeechT5SpeechDecoderPrenet._consistent_dropout = lambda self, inputs_embeds, p: inputs_embeds


def _steer_stop_head(model) -> dict[str, float]:
    """The first stop logit is pushed far below zero and the second sharpened, so the summed stop
    probability is low at first and crosses 0.5 on the decoder's state after some steps."""
    head = model.speech_decoder_postnet.prob_out
    with torch.no_grad():
        head.bias[0] = -9.0
        head.weight[1].mul_(10.0)
        head.bias[1] = -2.0
    return {"bias0": -9.0, "weight1_scale": 10.0, "bias1": -2.0}


# --- export -----------------------------------------------------------------------------------


def _past_names(layers: int, prefix: str, kinds=("decoder", "encoder")) -> list[str]:
    return [f"{prefix}.{i}.{part}.{kv}" for i in range(layers) for part in kinds for kv in ("key", "value")]


class Encoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        mask = torch.ones_like(input_ids)
        out = self.model.speecht5.encoder(input_values=input_ids, attention_mask=mask)
        return out.last_hidden_state, mask


class Decoder(torch.nn.Module):
    """One step of _generate_speech: the prenet over the whole output sequence, the decoder layers
    on its last position, the spectrum (reduction_factor frames), the stop probability."""

    def __init__(self, model, with_past: bool):
        super().__init__()
        self.model = model
        self.with_past = with_past

    def forward(self, output_sequence, speaker_embeddings, encoder_outputs, encoder_attention_mask, *past):
        from transformers import DynamicCache, EncoderDecoderCache

        model, config = self.model, self.model.config
        cache = None
        if self.with_past:
            layers = config.decoder_layers
            cache = EncoderDecoderCache(
                DynamicCache(ddp_cache_data=[(past[4 * i], past[4 * i + 1]) for i in range(layers)]),
                DynamicCache(ddp_cache_data=[(past[4 * i + 2], past[4 * i + 3]) for i in range(layers)]),
            )
        hidden = model.speecht5.decoder.prenet(output_sequence, speaker_embeddings)
        out = model.speecht5.decoder.wrapped_decoder(
            hidden_states=hidden[:, -1:], attention_mask=None, encoder_hidden_states=encoder_outputs,
            encoder_attention_mask=encoder_attention_mask, past_key_values=cache, use_cache=True,
        )
        last = out.last_hidden_state[0, -1]
        spectrum = model.speech_decoder_postnet.feat_out(last).view(config.reduction_factor, config.num_mel_bins)
        sequence = torch.cat((output_sequence, spectrum[-1].view(1, 1, config.num_mel_bins)), dim=1)
        prob = torch.sigmoid(model.speech_decoder_postnet.prob_out(last))
        flat = []
        for self_layer, cross_layer in zip(out.past_key_values.self_attention_cache.layers,
                                           out.past_key_values.cross_attention_cache.layers):
            flat += [self_layer.keys, self_layer.values]
            if not self.with_past:
                flat += [cross_layer.keys, cross_layer.values]
        return (sequence, spectrum, prob, *flat)


class PostnetAndVocoder(torch.nn.Module):
    def __init__(self, model, vocoder):
        super().__init__()
        self.model = model
        self.vocoder = vocoder

    def forward(self, spectrogram):
        refined = self.model.speech_decoder_postnet.postnet(spectrogram.unsqueeze(0)).squeeze(0)
        return self.vocoder(refined)


def _export(wrapper, feed: dict[str, np.ndarray], output_names, dynamic, path: Path) -> None:
    import onnx

    with torch.no_grad():
        torch.onnx.export(
            wrapper.eval(), tuple(torch.from_numpy(v) for v in feed.values()), str(path),
            input_names=list(feed.keys()), output_names=output_names, dynamic_axes=dynamic,
            opset_version=onnx_export.OPSET, do_constant_folding=True, dynamo=False,
        )
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    model.doc_string = ""
    onnx.save_model(model, str(path), save_as_external_data=False)


def _run(wrapper, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = wrapper(*[torch.from_numpy(v) for v in feed.values()])
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


def export_all(model, vocoder, tok, speaker: np.ndarray, out_dir: Path) -> dict[str, Any]:
    layers = model.config.decoder_layers
    encoder, first, later = Encoder(model).eval(), Decoder(model, False).eval(), Decoder(model, True).eval()
    post = PostnetAndVocoder(model, vocoder).eval()
    ids = tok(texts.SHORT, return_tensors="np")["input_ids"].astype(np.int64)
    enc_feed = {"input_ids": ids}
    _export(encoder, enc_feed, ["encoder_outputs", "encoder_attention_mask"],
            {"input_ids": {1: "encoder_sequence_length"}, "encoder_outputs": {1: "encoder_sequence_length"},
             "encoder_attention_mask": {1: "encoder_sequence_length"}}, out_dir / "encoder_model.onnx")
    hidden, mask = _run(encoder, enc_feed)
    # Two frames on the traced step, so the output sequence's length stays symbolic.
    dec_feed = {"output_sequence": np.random.default_rng(SEED).standard_normal((1, 2, MEL_BINS)).astype(np.float32),
                "speaker_embeddings": speaker, "encoder_outputs": hidden, "encoder_attention_mask": mask}
    present_all = _past_names(layers, "present")
    present_self = _past_names(layers, "present", ("decoder",))
    past_all = _past_names(layers, "past_key_values")
    common = {"output_sequence": {1: "decoder_sequence_length"}, "encoder_outputs": {1: "encoder_sequence_length"},
              "encoder_attention_mask": {1: "encoder_sequence_length"},
              "output_sequence_out": {1: "decoder_sequence_length + 1"}}
    dynamic = dict(common)
    for name in present_all:
        dynamic[name] = {2: "encoder_sequence_length" if ".encoder." in name else "past_decoder_sequence_length + 1"}
    outputs = ["output_sequence_out", "spectrum", "prob"]
    _export(first, dec_feed, outputs + present_all, dynamic, out_dir / "decoder_model.onnx")
    outs = _run(first, dec_feed)
    past_feed = {**dec_feed, "output_sequence": outs[0], **dict(zip(past_all, outs[3:]))}
    dynamic = dict(common)
    for name in past_all:
        dynamic[name] = {2: "encoder_sequence_length" if ".encoder." in name else "past_decoder_sequence_length"}
    for name in present_self:
        dynamic[name] = {2: "past_decoder_sequence_length + 1"}
    _export(later, past_feed, outputs + present_self, dynamic, out_dir / "decoder_with_past_model.onnx")
    spec_feed = {"spectrogram": np.random.default_rng(SEED + 1).standard_normal((6, MEL_BINS)).astype(np.float32)}
    _export(post, spec_feed, ["waveform"],
            {"spectrogram": {0: "n_spectrums x reduction_factor"}, "waveform": {0: "n_samples"}},
            out_dir / "decoder_postnet_and_vocoder.onnx")

    def named(wrapper, names):
        return lambda feed: dict(zip(names, _run(wrapper, feed)))

    long_spec = {"spectrogram": np.random.default_rng(SEED + 2).standard_normal((40, MEL_BINS)).astype(np.float32)}
    parity = {
        "encoder_model.onnx": onnx_export.check_parity(
            out_dir / "encoder_model.onnx", named(encoder, ["encoder_outputs", "encoder_attention_mask"]),
            [enc_feed, {"input_ids": tok("Hi", return_tensors="np")["input_ids"].astype(np.int64)}]),
        "decoder_model.onnx": onnx_export.check_parity(
            out_dir / "decoder_model.onnx", named(first, outputs + present_all), [dec_feed]),
        "decoder_with_past_model.onnx": onnx_export.check_parity(
            out_dir / "decoder_with_past_model.onnx", named(later, outputs + present_self), [past_feed]),
        "decoder_postnet_and_vocoder.onnx": onnx_export.check_parity(
            out_dir / "decoder_postnet_and_vocoder.onnx", named(post, ["waveform"]), [spec_feed, long_spec]),
    }
    parity["max_abs_diff"] = max(p["max_abs_diff"] for p in parity.values())
    return parity


def merge_decoders(out_dir: Path, target: Path, config) -> dict[str, Any]:
    """decoder_model + decoder_with_past_model as one graph switched by `use_cache_branch`, the
    layout of Optimum's decoder_model_merged.onnx (what most published SpeechT5 exports ship):
    an If node whose else branch is the first step and whose then branch the later ones, which
    hands the cross-attention cache it was given back as its encoder presents."""
    import copy

    import onnx
    from onnx import TensorProto, helper

    first = onnx.load(str(out_dir / "decoder_model.onnx"))
    later = onnx.load(str(out_dir / "decoder_with_past_model.onnx"))
    outputs = [o.name for o in first.graph.output]

    def branch(model, prefix: str, passthrough: bool):
        graph = copy.deepcopy(model.graph)
        made = {i.name for i in graph.initializer} | {o for n in graph.node for o in n.output}
        rename = {name: prefix + name for name in made}
        for init in graph.initializer:
            init.name = rename[init.name]
        for node in graph.node:
            node.name = prefix + node.name
            node.input[:] = [rename.get(x, x) for x in node.input]
            node.output[:] = [rename.get(x, x) for x in node.output]
        for info in graph.value_info:
            info.name = rename.get(info.name, info.name)
        if passthrough:
            for name in outputs:
                if ".encoder." in name:
                    past = name.replace("present.", "past_key_values.")
                    graph.node.append(helper.make_node("Identity", [past], [prefix + name], name=prefix + name))
        by_name = {o.name: o for o in first.graph.output}
        del graph.output[:]
        for name in outputs:
            out = copy.deepcopy(by_name[name])
            out.name = rename.get(name, prefix + name)
            graph.output.append(out)
        del graph.input[:]
        graph.name = prefix.strip("/")
        return graph

    cond = helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1])
    node = helper.make_node("If", ["use_cache_branch"], outputs, name="optimum::if",
                            then_branch=branch(later, "with_past/", True), else_branch=branch(first, "first/", False))
    graph = helper.make_graph([node], "decoder_model_merged", [*later.graph.input, cond],
                              list(first.graph.output))
    merged = helper.make_model(graph, opset_imports=first.opset_import, ir_version=first.ir_version)
    onnx.checker.check_model(merged)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(merged, str(target), save_as_external_data=False)

    # The merged graph must answer as the two it merges, on both branches.
    sessions = {n: onnx_export.session(out_dir / f"{n}.onnx") for n in ("encoder_model", "decoder_model",
                                                                          "decoder_with_past_model")}
    merged_session = onnx_export.session(target)
    hidden, mask = sessions["encoder_model"].run(None, {"input_ids": np.array([[5, 6, 7, 8, 2]], np.int64)})
    feed = {"output_sequence": np.zeros((1, 1, MEL_BINS), np.float32),
            "speaker_embeddings": np.ones((1, SPEAKER_DIM), np.float32),
            "encoder_outputs": hidden, "encoder_attention_mask": mask}
    past_names = _past_names(config.decoder_layers, "past_key_values")
    heads = config.decoder_attention_heads
    empty = {n: np.zeros((1, heads, 0, config.hidden_size // heads), np.float32) for n in past_names}
    want_first = sessions["decoder_model"].run(None, feed)
    got_first = merged_session.run(None, {**feed, **empty, "use_cache_branch": np.array([False])})
    past = dict(zip(past_names, want_first[3:]))
    step = {**feed, "output_sequence": want_first[0], **past}
    want_later = sessions["decoder_with_past_model"].run(None, step)
    got_later = merged_session.run(None, {**step, "use_cache_branch": np.array([True])})
    later_names = [o.name for o in sessions["decoder_with_past_model"].get_outputs()]
    worst = max(float(np.max(np.abs(a - b))) for a, b in zip(got_first, want_first))
    for name, value in zip(later_names, want_later):
        worst = max(worst, float(np.max(np.abs(got_later[outputs.index(name)] - value))))
    if worst > 0:
        raise onnx_export.ParityError(f"{target}: the merged decoder differs from its parts by {worst}")
    return {"max_abs_diff": worst, "branches": 2}


# --- goldens ----------------------------------------------------------------------------------


def _f32(values) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float32).reshape(-1)]


def _stop_margin(model, tok, text: str, speaker: torch.Tensor, options: dict[str, Any]) -> float | None:
    """How close the summed stop probability came to the threshold on a step where it was checked."""
    sums: list[float] = []
    handle = model.speech_decoder_postnet.prob_out.register_forward_hook(
        lambda _m, _i, out: sums.append(float(torch.sigmoid(out).sum())))
    try:
        ids = tok(text, return_tensors="pt")
        model.generate(ids["input_ids"], speaker_embeddings=speaker, **options)
    except Exception:  # noqa: BLE001 - the error cases are recorded elsewhere
        pass
    finally:
        handle.remove()
    threshold = options.get("threshold", 0.5)
    return min((abs(s - threshold) for s in sums), default=None)


def _pipeline_cases(pipe, model, tok, speaker: torch.Tensor, other: torch.Tensor) -> list[dict[str, Any]]:
    specs: list[tuple[str, list[str], dict[str, Any], torch.Tensor | None]] = [
        ("defaults", INPUTS, {}, None),
        ("minlenratio", INPUTS[:2], {"minlenratio": 2.0}, None),
        ("maxlenratio", INPUTS[:2], {"maxlenratio": 0.5}, None),
        ("threshold", INPUTS[:2], {"threshold": 0.9}, None),
        ("other_speaker", INPUTS[:2], {}, other),
    ]
    cases = []
    for name, inputs, options, spk in specs:
        chosen = speaker if spk is None else spk
        outputs = []
        for text in inputs:
            margin = _stop_margin(model, tok, text, chosen, options)
            if margin is not None and margin < STOP_MARGIN:
                raise RuntimeError(f"{name}: stop probability within {margin:.1e} of the threshold for {text!r}")
            out = pipe(text, forward_params={"speaker_embeddings": chosen, **options})
            outputs.append({"audio": _f32(out["audio"]), "sampling_rate": out["sampling_rate"]})
        cases.append({
            "name": name, "task": "textToSpeech",
            "call": {"inputs": inputs, "options": options,
                     "speaker_embeddings": None if spk is None else _f32(spk)},
            "output": outputs,
        })
    return cases


def _error_cases(pipe, tok, speaker: torch.Tensor) -> list[dict[str, Any]]:
    """Inputs on which Python's pipeline raises: the message is recorded, the test dead-letters them."""
    too_long = (texts.SHORT + " ") * 3
    specs = [
        ("text_over_max_text_positions", too_long, {}),
        # The stop probability (at most 2) never reaches 2.5, so the loop runs to maxlen = 10 x the
        # text's tokens, past max_speech_positions.
        ("speech_over_max_speech_positions", texts.SHORT, {"threshold": 2.5}),
    ]
    cases = []
    for name, text, options in specs:
        try:
            pipe(text, forward_params={"speaker_embeddings": speaker, **options})
        except Exception as error:  # noqa: BLE001 - the message is the golden
            cases.append({"name": name, "call": {"inputs": text, "options": options},
                          "tokens": len(tok(text)["input_ids"]), "error": f"{type(error).__name__}: {error}"})
            continue
        raise RuntimeError(f"{name}: Python's pipeline did not fail")
    return cases


def _batch_cases(pipe, model, tok, speaker: torch.Tensor) -> list[dict[str, Any]]:
    """What Python does with several texts in one forward pass (pipeline batch_size=2): generate()
    right-pads the texts, takes maxlen and minlen from the *padded* length, stops each row on its
    own threshold, pads the spectrograms and runs the vocoder over the padded batch, so every
    waveform comes back as long as the longest. Recorded to document why rows run alone here."""
    inputs = INPUTS[:2]
    enc = tok(inputs, padding=True, return_tensors="pt")
    cases = []
    for options in ({}, {"maxlenratio": 0.5}):
        with torch.no_grad():
            _, lengths = model.generate(enc["input_ids"], attention_mask=enc["attention_mask"],
                                        speaker_embeddings=speaker, return_output_lengths=True, **options)
        alone = []
        for text in inputs:
            ids = tok(text, return_tensors="pt")
            with torch.no_grad():
                alone.append(int(model.generate(ids["input_ids"], speaker_embeddings=speaker, **options).shape[0]))
        batched = pipe(inputs, batch_size=2, forward_params={"speaker_embeddings": speaker, **options})
        cases.append({
            "inputs": inputs, "options": options,
            "frames_alone": alone,
            "frames_batched": [int(n) for n in lengths],
            "pipeline_batch_size_2_audio_lengths": [int(np.asarray(o["audio"]).size) for o in batched],
        })
    return cases


def _spectrogram_cases(model, tok, speaker: torch.Tensor) -> list[dict[str, Any]]:
    cases = []
    for text in INPUTS[:2]:
        ids = tok(text, return_tensors="pt")
        with torch.no_grad():
            spectrogram = model.generate(ids["input_ids"], speaker_embeddings=speaker)
        cases.append({"inputs": text, "frames": int(spectrogram.shape[0]), "spectrogram": _f32(spectrogram)})
    return cases


def _tokenization_cases(tok) -> list[dict[str, Any]]:
    cases = INPUTS + [texts.WHITESPACE, texts.PERSONISH, "  two  spaces ", "ＡＢＣ ﬁ tab\there", *texts.SUPPLEMENT]
    return [{"text": t, "input_ids": tok(t)["input_ids"]} for t in cases]


def build() -> dict[str, Any]:
    from transformers import SpeechT5FeatureExtractor, SpeechT5ForTextToSpeech, SpeechT5HifiGan, pipeline

    _no_prenet_dropout()
    out_dir = FIXTURES / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    tok = _tokenizer(out_dir)
    seed_everything(SEED)
    config, vocoder_config = _config(len(tok))
    model = SpeechT5ForTextToSpeech(config).eval()
    stop_head = _steer_stop_head(model)
    vocoder = SpeechT5HifiGan(vocoder_config).eval()
    speaker = torch.randn(1, SPEAKER_DIM)
    other = torch.randn(1, SPEAKER_DIM)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        vocoder.save_pretrained(Path(tmp) / "vocoder")
        loaded = SpeechT5ForTextToSpeech.from_pretrained(source).eval()
        loaded_vocoder = SpeechT5HifiGan.from_pretrained(Path(tmp) / "vocoder").eval()
        shutil.copy(source / "config.json", out_dir / "config.json")
    tok.save_pretrained(out_dir)
    _tokenizer_json(tok, out_dir / "tokenizer.json")
    SpeechT5FeatureExtractor(sampling_rate=SAMPLING_RATE, num_mel_bins=MEL_BINS).save_pretrained(out_dir)
    np.save(out_dir / "speaker_embeddings.npy", speaker.numpy().reshape(-1).astype(np.float32))
    parity = export_all(loaded, loaded_vocoder, tok, speaker.numpy(), out_dir)
    # Kept apart, so the folder loads decoder + decoder-with-past; the parity test swaps it in.
    parity["merged/decoder_model_merged.onnx"] = merge_decoders(
        out_dir, out_dir / "merged" / "decoder_model_merged.onnx", config)
    pipe = pipeline("text-to-speech", model=loaded, tokenizer=tok, vocoder=loaded_vocoder)
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "textToSpeech",
        "reference": {
            "runtime": "torch",
            "implementation": 'transformers pipeline("text-to-speech", vocoder=SpeechT5HifiGan) with '
            "forward_params={speaker_embeddings, threshold, minlenratio, maxlenratio}; the speech-decoder "
            "prenet's inference-time dropout made the identity (kit/speecht5.py)",
        },
        "seed": SEED,
        "stop_head": stop_head,
        "versions": tool_versions(),
        "speaker_embeddings": _f32(speaker),
        "onnx": {
            "files": ["encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx",
                      "decoder_postnet_and_vocoder.onnx"],
            "parity": parity,
        },
        # Not "tokenization": that key holds the tokenizer-parity cases every model shares (call + offsets).
        "tokenizer_ids": _tokenization_cases(tok),
        "spectrograms": _spectrogram_cases(loaded, tok, speaker),
        "pipeline": _pipeline_cases(pipe, loaded, tok, speaker, other),
        "errors": _error_cases(pipe, tok, speaker),
        "batch": _batch_cases(pipe, loaded, tok, speaker),
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
