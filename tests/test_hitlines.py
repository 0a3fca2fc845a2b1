"""Joining the lines of hits that generated bpftrace scripts print in parts
(the live test of real bpftrace output is tests/test_bpftrace.py)."""

from probegen.runtime.trace import HitJoiner


def test_parts_join_by_thread_between_other_lines():
    lines = [
        "Tracing 3 probes (long). Hit Ctrl-C to end.",
        "1.000001: add_listener [tid 7 1/3] subnqn=abc trtype=TCP traddr=xx",
        "1.000002: add_listener [tid 8 1/2] subnqn=q",
        "1.000001: create subnqn=z",
        "1.000001: add_listener [tid 7 2/3] +xxxx",
        "1.000002: add_listener [tid 8 2/2] + trtype=RDMA",
        "1.000001: add_listener [tid 7 3/3] +x trsvcid=4420",
    ]
    joiner = HitJoiner()
    assert [shown for line in lines for shown in joiner.feed(line)] + joiner.finish() == [
        "Tracing 3 probes (long). Hit Ctrl-C to end.",
        "1.000001: create subnqn=z",
        "1.000002: add_listener subnqn=q trtype=RDMA",
        "1.000001: add_listener subnqn=abc trtype=TCP traddr=xxxxxxx trsvcid=4420",
    ]


def test_parts_without_their_first_line_or_their_last_are_shown_as_they_came():
    joiner = HitJoiner()
    lost_first = "2.000000: p [tid 1 2/2] + b=2"
    assert joiner.feed(lost_first) == [lost_first]
    unfinished = "3.000000: p [tid 1 1/2] a=1"
    assert joiner.feed(unfinished) == []
    assert joiner.finish() == [unfinished]
    assert joiner.finish() == []


def test_a_new_first_line_gives_back_an_unfinished_hit_of_the_same_key():
    joiner = HitJoiner()
    first = "4.000000: p [tid 1 1/2] a=1"
    assert joiner.feed(first) == []
    assert joiner.feed(first) == [first]
    assert joiner.feed("4.000000: p [tid 1 2/2] + b=2") == ["4.000000: p a=1 b=2"]
