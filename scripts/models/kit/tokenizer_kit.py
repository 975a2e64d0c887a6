"""Trains the three small tokenizer families and wraps them in transformers tokenizers.

Each trained vocabulary is handed to the transformers class's own constructor (vocab + merges),
so the saved tokenizer.json has exactly the normalizer / pre-tokenizer / post-processor layout that
a hub checkpoint of that family has, not one we assembled by hand.
"""
from __future__ import annotations

import json
from typing import Any

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

MAX_LENGTH = 64
VOCAB_SIZE = 2000

# ChatML-style turns: a later issue renders chat messages with this template.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def _bpe_parts(tokenizer: Tokenizer) -> tuple[dict[str, int], list[Any]]:
    model = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]]
    return model["vocab"], merges


def wordpiece(texts: list[str]):
    from transformers import BertTokenizer

    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None, handle_chinese_chars=True)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    # The WordPiece trainer finds the same token set every run but numbers some tokens differently
    # (hash-map order). WordPiece has no merges, so renumbering in a fixed order is harmless and makes
    # rebuilds byte-identical.
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    rest = sorted((t for t in raw.get_vocab() if t not in specials), key=lambda t: (t.startswith("##"), t))
    vocab = {token: i for i, token in enumerate(specials + rest)}
    return BertTokenizer(vocab=vocab, do_lower_case=True, model_max_length=MAX_LENGTH)


def byte_level_bpe(texts: list[str]):
    from transformers import RobertaTokenizer

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    vocab, merges = _bpe_parts(raw)
    return RobertaTokenizer(vocab=vocab, merges=merges, model_max_length=MAX_LENGTH)


def clip_bpe(texts: list[str], vocab_size: int = 1000, pad_token: str = "<|endoftext|>"):
    """CLIP-style: lower-cased, split on CLIP's regex, byte-level BPE whose word-final pieces end in </w>.

    OWL-ViT's checkpoints pad with "!" instead of the end-of-text token.
    """
    from tokenizers import Regex
    from transformers import CLIPTokenizer

    raw = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    raw.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Lowercase()]
    )
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(
                Regex(r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""),
                behavior="removed",
                invert=True,
            ),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=["<|startoftext|>", "<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        end_of_word_suffix="</w>",
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    trained, merges = _bpe_parts(raw)
    # The trainer numbers the word-final symbols in hash-map order, so ids are renumbered in a
    # fixed order (ids are only names to BPE: merges refer to strings), the layout of CLIP's own
    # vocabulary: every byte symbol inside a word, then word-final (CLIP's vocabulary holds both;
    # the trainer only adds the word-final ones it saw), merge results in merge order, and the two
    # special tokens last. Models rely on that: OWL-ViT pools the text at the largest id (the end
    # of text) and treats a query whose first id is 0 as padding.
    specials = ["<|startoftext|>", "<|endoftext|>"]
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    symbols = alphabet + [a + "</w>" for a in alphabet]
    merged = [a + b for a, b in merges]
    order = list(dict.fromkeys(symbols + merged + specials))
    assert set(trained) <= set(order), "a trained token is neither a symbol nor a merge result"
    vocab = {token: i for i, token in enumerate(order)}
    return CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=32, pad_token=pad_token)


def sentencepiece_bpe(texts: list[str], vocab_size: int = VOCAB_SIZE):
    """Llama-style: metaspace pre-tokenization and byte fallback instead of an unknown token."""
    from transformers import LlamaTokenizer

    raw = Tokenizer(models.BPE(byte_fallback=True, fuse_unk=True, unk_token="<unk>"))
    # Splitting on the metaspace while training keeps merges inside words (as SentencePiece does);
    # the Llama tokenizer itself then runs unsplit, like hub Llama checkpoints.
    raw.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", *byte_tokens],
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    vocab, merges = _bpe_parts(raw)
    tok = LlamaTokenizer(
        vocab=vocab,
        merges=merges,
        model_max_length=128,
        pad_token="</s>",
        add_bos_token=True,
        add_eos_token=False,
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def save(tokenizer, folder) -> None:
    """save_pretrained plus the files transformers 5 no longer writes but Optimum folders carry."""
    from pathlib import Path

    folder = Path(folder)
    tokenizer.save_pretrained(folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    jinja = folder / "chat_template.jinja"
    if jinja.exists():
        # One source of truth, in the place most exporters (and our TS loader) look first.
        config["chat_template"] = jinja.read_text(encoding="utf-8")
        jinja.unlink()
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    special = {}
    for name in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        value = getattr(tokenizer, name, None)
        if value is not None:
            special[name] = str(value)
    extra = [str(t) for t in getattr(tokenizer, "extra_special_tokens", []) or []]
    if extra:
        special["additional_special_tokens"] = extra
    (folder / "special_tokens_map.json").write_text(
        json.dumps(special, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )


def t5_unigram(texts: list[str], vocab_size: int = 1000, extra_ids: int = 16):
    """T5-style: a SentencePiece-like Unigram model (metaspace, no byte fallback) with sentinel
    tokens, handed to T5Tokenizer's own constructor as (piece, score) pairs."""
    from transformers import T5Tokenizer

    raw = Tokenizer(models.Unigram())
    raw.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size,
        # T5's fixed ids: <pad>=0 (also the decoder start), </s>=1, <unk>=2.
        special_tokens=["<pad>", "</s>", "<unk>"],
        unk_token="<unk>",
        show_progress=False,
    )
    # The Unigram trainer is slow on the whole corpus (minutes); every 8th text gives the same kind
    # of vocabulary in seconds.
    raw.train_from_iterator(texts[::8], trainer)
    pieces = [(piece, float(score)) for piece, score in json.loads(raw.to_str())["model"]["vocab"]]
    # Sentinels close the vocabulary in reverse order, as in t5-small (<extra_id_0> is the last id).
    pieces += [(f"<extra_id_{i}>", 0.0) for i in range(extra_ids - 1, -1, -1)]
    return T5Tokenizer(vocab=pieces, extra_ids=extra_ids, model_max_length=MAX_LENGTH)


def bart_bpe(texts: list[str], vocab_size: int = 1000):
    """BART: the byte-level BPE of RoBERTa, under BartTokenizer's own constructor."""
    from transformers import BartTokenizer

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    vocab, merges = _bpe_parts(raw)
    return BartTokenizer(vocab=vocab, merges=merges, model_max_length=MAX_LENGTH)
