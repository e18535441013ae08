"""Seq, epoch and catch-up rules: pure inputs, pure outputs."""

from __future__ import annotations

import pytest

from relay import seq as s
from relay.errors import BadRequest, Conflict


def numbering(last: int = 0, oldest: int = 1, epoch: str = "e1") -> s.SessionSeq:
    return s.SessionSeq(epoch=epoch, last_seq=last, oldest_seq=oldest)


def test_numbers_continue_without_gap_and_prune_to_kept() -> None:
    seqs, after = s.number(numbering(), 3, kept=1000)
    assert list(seqs) == [1, 2, 3]
    seqs, after = s.number(after, 2, kept=1000)
    assert list(seqs) == [4, 5]
    assert (after.last_seq, after.oldest_seq) == (5, 1)
    seqs, after = s.number(after, 10, kept=4)
    assert list(seqs) == list(range(6, 16))
    assert (after.last_seq, after.oldest_seq) == (15, 12)  # only 12..15 kept


def test_numbering_nothing_changes_nothing() -> None:
    seqs, after = s.number(numbering(7, 1), 0, kept=1000)
    assert list(seqs) == []
    assert after == numbering(7, 1)


def test_new_epochs_are_unique() -> None:
    assert len({s.new_epoch() for _ in range(200)}) == 200


def test_reconcile_unknown_session_starts_new_epoch_after_macs_seq() -> None:
    out = s.reconcile(None, mac_last_seq=40, mac_epoch="old")
    assert out.new_epoch
    assert out.seq.last_seq == 40 and out.seq.oldest_seq == 41
    assert out.seq.epoch != "old"
    assert out.send_after is None


def test_reconcile_mac_ahead_of_relay_means_relay_lost_state() -> None:
    out = s.reconcile(numbering(10), mac_last_seq=25, mac_epoch="e1")
    assert out.new_epoch and out.seq.epoch != "e1"
    # Numbering goes on after the highest seq anyone saw: no seq is ever given twice.
    assert out.seq.last_seq == 25


def test_reconcile_mac_behind_gets_missed_events() -> None:
    out = s.reconcile(numbering(30), mac_last_seq=22, mac_epoch="e1")
    assert not out.new_epoch
    assert out.send_after == 22
    assert s.reconcile(numbering(30), 30, "e1").send_after is None


def test_page_after_reads_oldest_first_and_flags_more() -> None:
    page = s.page_after(numbering(1200, oldest=201), after=700, limit=500, client_epoch=None)
    assert (page.first, page.last, page.has_more, page.from_mac) == (701, 1200, False, None)
    page = s.page_after(numbering(1200, oldest=201), after=0, limit=500, client_epoch="e1")
    assert (page.first, page.last, page.has_more) == (1, 500, True)
    assert page.from_mac == (1, 200)  # 1..200 are only on the Mac


def test_page_before_reads_newest_before_and_flags_older() -> None:
    page = s.page_before(numbering(1200, oldest=201), before=1000, limit=500, client_epoch=None)
    assert (page.first, page.last, page.has_more, page.from_mac) == (500, 999, True, None)
    page = s.page_before(numbering(1200, oldest=201), before=300, limit=500, client_epoch=None)
    assert (page.first, page.last, page.has_more, page.from_mac) == (1, 299, False, (1, 200))


@pytest.mark.parametrize(
    ("after", "epoch", "code"),
    [(-1, None, "bad_after"), (51, None, "after_beyond_last"), (10, "other", "epoch_mismatch")],
)
def test_bad_positions_are_clear_errors(after: int, epoch: str | None, code: str) -> None:
    with pytest.raises((BadRequest, Conflict)) as info:
        s.page_after(numbering(50), after=after, limit=10, client_epoch=epoch)
    assert info.value.code == code


@pytest.mark.parametrize("limit", [0, -3, 501])
def test_limit_outside_page_is_refused(limit: int) -> None:
    with pytest.raises(BadRequest) as info:
        s.check_limit(limit, 500)
    assert info.value.code == "bad_limit"


def test_limit_defaults_to_a_full_page() -> None:
    assert s.check_limit(None, 500) == 500
    assert s.check_limit(20, 500) == 20
