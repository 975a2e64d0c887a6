"""Input texts shared by tokenizer training and golden cases."""
from __future__ import annotations

from .common import CORPUS_JSONL, SAMPLE_JSONL, read_jsonl

# Written for this project so the vocabularies see accents, CJK and emoji at least a few times;
# the mail corpus is mostly ASCII English.
SUPPLEMENT = [
    "Crème brûlée, naïve café, façade, jalapeño, Zürich, São Paulo, Ærøskøbing.",
    "東京で寿司を食べました。北京欢迎你。서울은 아름답다。",
    "Emoji check: 🤗 🚀 👍🏽 ❤️ 🇫🇷 — done.",
    "Mañana iremos a la playa con Åsa y Björn.",
    "The quick brown fox jumps over the lazy dog near Kraków.",
]

EMPTY = ""
WHITESPACE = " \t \n  "
UNICODE = "Crème brûlée 🍮 和 寿司 — naïve façade, 東京 🚀"
SHORT = "Meeting moved to Thursday at noon."
PERSONISH = "John Smith from Acme Corp flew to Berlin on Monday with Maria Garcia."


def corpus_texts() -> list[str]:
    return [record["text"] for record in read_jsonl(CORPUS_JSONL)]


def training_texts() -> list[str]:
    # Capping each mail keeps training quick; merges come from the frequent words anyway.
    return [t[:2000] for t in corpus_texts()] + SUPPLEMENT * 20


def sample_texts() -> list[str]:
    return [record["text"] for record in read_jsonl(SAMPLE_JSONL)]


def long_text() -> str:
    """A real mail far longer than any tiny model's max length, to force truncation."""
    return max(sample_texts(), key=len)[:6000]


def medium_texts(count: int) -> list[str]:
    mids = [t for t in sample_texts() if 60 <= len(t) <= 600]
    return mids[:count]
