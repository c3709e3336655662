"""A log's analysis without a model: counts, the most frequent errors, the time span, a hint."""

from __future__ import annotations

from overseer_reasoning.domain.log_analysis import analyse_log, classify, error_key, summarise_log

SAMPLE = """\
2024-05-01 10:00:00,001 INFO app started
2024-05-01 10:00:05,120 WARN cache miss ratio high: 0.82
2024-05-01 10:01:00,000 ERROR db: connection refused to 10.0.0.5:5432
2024-05-01 10:01:30,000 ERROR db: connection refused to 10.0.0.5:5432
2024-05-01 10:02:00,000 ERROR request timed out after 30s
Traceback (most recent call last):
  File "app.py", line 3, in <module>
ValueError: bad input 42
2024-05-01 10:03:00,000 ERROR db: connection refused to 10.0.0.6:5432
2024-05-01 10:04:00,000 WARNING disk usage 91%
2024-05-01 10:05:00,000 INFO shutting down
"""


def test_a_log_is_counted_by_level_with_its_time_span_and_tracebacks() -> None:
    summary = summarise_log(SAMPLE)
    assert (summary.lines, summary.errors, summary.warnings, summary.tracebacks) == (11, 5, 2, 1)
    assert summary.first_timestamp == "2024-05-01 10:00:00,001"
    assert summary.last_timestamp == "2024-05-01 10:05:00,000"
    assert summary.first_error_line == 3


def test_the_same_error_with_different_numbers_groups_and_ties_go_to_the_one_seen_first() -> None:
    assert summarise_log(SAMPLE).top_errors == (
        ("db: connection refused to <n>:<n>", 3),
        ("request timed out after 30s", 1),
        ("ValueError: bad input <n>", 1),
    )


def test_the_most_frequent_error_gives_a_hint() -> None:
    hint = summarise_log(SAMPLE).hint
    assert hint is not None
    assert "not listening" in hint[0]
    assert "没有运行" in hint[1]


def test_the_english_analysis_names_counts_span_top_errors_and_the_hint() -> None:
    text = analyse_log("logs/app.log", SAMPLE, "en")
    assert text.startswith("Analysis of logs/app.log (11 lines): 5 error(s), 2 warning(s).")
    assert "2024-05-01 10:00:00,001 to 2024-05-01 10:05:00,000" in text
    assert "3× db: connection refused to <n>:<n>" in text
    assert "line 3" in text
    assert "Suggestion:" in text


def test_the_chinese_analysis_says_the_same_in_chinese() -> None:
    text = analyse_log("logs/app.log", SAMPLE, "zh")
    assert text.startswith("logs/app.log 的分析（共 11 行）：5 个错误，2 个警告。")
    assert "3 次  db: connection refused to <n>:<n>" in text
    assert "第 3 行" in text
    assert "建议：" in text


def test_a_clean_log_says_nothing_looks_wrong() -> None:
    assert analyse_log("a.log", "INFO ok\nINFO still ok\n", "en").endswith("Nothing in it looks wrong.")
    assert analyse_log("a.log", "", "zh").endswith("没有发现异常。")


def test_levels_are_words_not_parts_of_words() -> None:
    assert classify("[error] disk failed") == ("error", "disk failed")
    assert classify("level=warn retrying") == ("warning", "retrying")
    assert classify("0 errors, 0 warnings") is None
    assert classify("KeyError: 'x'") == ("error", "KeyError: 'x'")


def test_syslog_timestamps_are_found_too() -> None:
    summary = summarise_log("May  1 10:00:00 host app: ERROR a\nMay  1 11:00:00 host app: ERROR a\n")
    assert (summary.first_timestamp, summary.last_timestamp) == ("May  1 10:00:00", "May  1 11:00:00")


def test_error_keys_mask_ids_and_hex() -> None:
    assert (
        error_key(" job 0x1f for 123e4567-e89b-12d3-a456-426614174000 failed") == "job <hex> for <id> failed"
    )


def test_the_analysis_is_deterministic() -> None:
    assert analyse_log("x", SAMPLE, "en") == analyse_log("x", SAMPLE, "en")
