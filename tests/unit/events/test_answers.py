"""authorises: a person's free-text answer to a permission request, read strictly and failing closed."""

from __future__ import annotations

import pytest

from overseer_events.answers import authorises, refuses


@pytest.mark.parametrize(
    "answer",
    [
        "authorized",
        "Authorized.",
        "authorize and retry",
        "Authorise and retry",
        "yes",
        "Yes!",
        "ok",
        "OK",
        "okay, go ahead",
        "allow",
        "sure",
        "approve",
        "retry",
        "ＯＫ",  # full width
        "授权并重试",
        "授权",
        "已授权",
        "允许",
        "同意",
        "批准",
        "可以",
        "好",
        "好的",
        "好吧",
        "好！",
        "是",
        "是的",
        "行",
        "没问题",
        "  重试  ",
    ],
)
def test_consent_in_english_or_chinese_authorises(answer: str) -> None:
    assert authorises(answer) is True


@pytest.mark.parametrize(
    "answer",
    [
        "no",
        "No.",
        "nope",
        "cancel",
        "deny",
        "reject",
        "stop",
        "don't",
        "do not",
        "取消",
        "不",
        "不要",
        "不好",
        "不是",
        "不行",
        "不可以",
        "不允许",
        "不同意",
        "拒绝",
        "否",
        "算了",
        "没有",
        "不要授权",
        "取消授权",
        "未授权",
    ],
)
def test_a_refusal_does_not_authorise(answer: str) -> None:
    assert authorises(answer) is False


@pytest.mark.parametrize(
    "answer",
    [
        "yes, but don't touch anything else",
        "ok, no",
        "I can't allow that",
        "allow? no",
        "好，不过还是取消吧",
        "unauthorized",
    ],
)
def test_a_refusal_wins_over_consent_in_the_same_answer(answer: str) -> None:
    assert authorises(answer) is False


@pytest.mark.parametrize("answer", ["ok?", "可以吗？", "可以吗", "authorize what?", "是吗"])
def test_a_question_is_not_consent(answer: str) -> None:
    assert authorises(answer) is False


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "what is this file",
        "I know",  # "no" inside a word is no refusal, and no consent either
        "这是什么",  # "是" inside a sentence is not "yes"
        "好像有问题",  # nor "好" inside a word
        "是 whatever",
        "the report from last week",
    ],
)
def test_words_that_merely_contain_a_consent_character_or_nothing_clear_do_not_authorise(answer: str) -> None:
    assert authorises(answer) is False


@pytest.mark.parametrize("answer", ["no", "cancel", "不要授权", "取消", "don't", "不好"])
def test_a_refusal_refuses_and_never_authorises(answer: str) -> None:
    assert refuses(answer)
    assert not authorises(answer)


@pytest.mark.parametrize("answer", ["授权并重试", "yes", "use the other file", "", "   "])
def test_consent_and_other_words_are_no_refusal(answer: str) -> None:
    assert not refuses(answer)
