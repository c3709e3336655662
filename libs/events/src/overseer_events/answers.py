"""Whether a person's free-text answer authorises what the agent asked permission for.

The gateway decides with it whether an answer carries a grant, and the firewall checks the
answer again before it records one; whoever else reads a person's consent should read it here. A permission
widens what the agent may touch, so the reading is strict, and it fails closed:

* any refusal wins over any consent ("yes, but don't" refuses; "不要授权" refuses);
* a question is not consent ("ok?", "可以吗" authorise nothing);
* a refusal word is found as a word in English ("no" in "no thanks", not in "know"; any
  "…n't") and anywhere in Chinese, where negation is written into the word: "不" in "不好",
  "不要", "不行", "不可以";
* a consent word must stand on its own: an English word ("ok", "allow", "authorize and
  retry"), a Chinese phrase of two or more characters anywhere ("授权并重试", "允许", "同意"),
  and a one-character Chinese answer ("好", "是", "行", "嗯") only as the whole answer, give or
  take a closing particle ("好的", "好吧", "是的"), since those characters occur in many
  words that consent to nothing ("是什么", "好像").
"""

from __future__ import annotations

import re
import unicodedata

# English: matched as whole words (or word sequences), case-insensitive.
_CONSENT_EN = (
    "yes", "yeah", "yep", "y", "ok", "okay", "sure", "allow", "allowed", "grant", "granted",
    "authorize", "authorise", "authorized", "authorised", "approve", "approved", "confirm",
    "confirmed", "retry", "go ahead", "do it", "please do", "fine",
)  # fmt: skip
_REFUSAL_EN = (
    "no", "nope", "nah", "not", "never", "don't", "dont", "cancel", "cancelled", "canceled", "deny",
    "denied", "refuse", "refused", "reject", "rejected", "decline", "declined", "stop", "abort",
    "unauthorized", "unauthorised", "disallow",
)  # fmt: skip

# Chinese: refusals anywhere (negation is part of the word), consent phrases anywhere, and
# one-character consent only as the whole answer.
_REFUSAL_ZH = ("不", "别", "拒绝", "否", "取消", "停止", "算了", "禁止", "撤销", "没有", "未授权")
_CONSENT_ZH = ("授权", "允许", "同意", "批准", "可以", "确认", "重试", "继续", "没问题", "准许")
_CONSENT_ZH_ALONE = ("好", "是", "行", "嗯", "对", "要")
_PARTICLES = "的吧啊呀嘛哦了呢哈"

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_CJK = re.compile(r"[\u3400-\u9fff]")
_QUESTION = ("?", "？")
_QUESTION_ZH = "吗"


def _normalised(answer: str) -> str:
    """NFKC (full-width letters and punctuation folded), lower case, curly apostrophes straightened."""
    text = unicodedata.normalize("NFKC", answer).lower()
    return text.replace("\u2019", "'").replace("\u2018", "'").strip()


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _says_en(words: list[str], phrases: tuple[str, ...]) -> bool:
    joined = " " + " ".join(words) + " "
    return any(f" {phrase} " in joined for phrase in phrases)


def _refuses(text: str, words: list[str]) -> bool:
    if any(word.endswith("n't") for word in words) or _says_en(words, _REFUSAL_EN):
        return True
    return any(word in text for word in _REFUSAL_ZH)


def _consents(text: str, words: list[str]) -> bool:
    if _says_en(words, _CONSENT_EN) or any(phrase in text for phrase in _CONSENT_ZH):
        return True
    chinese = "".join(_CJK.findall(text))
    core = chinese.rstrip(_PARTICLES) or chinese
    # The whole answer is one consent character (a closing particle aside) and no other word.
    return core in _CONSENT_ZH_ALONE and not words


def authorises(answer: str) -> bool:
    """Whether ``answer`` authorises the permission asked for; anything unclear does not."""
    text = _normalised(answer)
    if not text or text.endswith(_QUESTION) or _QUESTION_ZH in text:
        return False
    words = _words(text)
    if _refuses(text, words):
        return False
    return _consents(text, words)


def refuses(answer: str) -> bool:
    """Whether ``answer`` says no (a refusal word, as :func:`authorises` reads them)."""
    text = _normalised(answer)
    return bool(text) and _refuses(text, _words(text))
