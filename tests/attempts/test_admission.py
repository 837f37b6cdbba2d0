"""Admission control for sandbox starts (no Docker): the start slots, the infra retries' backoff, the stop rule."""

import os
import random
import threading
import time

import pytest

from omnidr.attempts import AttemptReason, HostPolicy, RetryPolicy, StartBreaker, StartGate, retry_delay_s
from omnidr.attempts._admission import Cancelled, start_gate


def test_no_more_attempts_start_at_once_than_there_are_slots_and_every_one_gets_its_turn():
    gate = StartGate(2)
    lock = threading.Lock()
    inside, peak, order, waited = [0], [0], [], {}

    def attempt(n: int) -> None:
        with gate.slot() as waited_s:
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
                order.append(n)
                waited[n] = waited_s
            time.sleep(0.15)
            with lock:
                inside[0] -= 1

    threads = []
    for n in range(7):
        threads.append(threading.Thread(target=attempt, args=(n,)))
        threads[-1].start()
        time.sleep(0.02)  # arrivals in order
    for t in threads:
        t.join(10)
    assert peak[0] == 2
    assert sorted(order) == list(range(7))
    assert order == list(range(7))  # first come, first served: no attempt is passed over
    assert waited[0] < 0.05 and waited[6] > 0.25  # the last (in at 0.12 s) waited for two rounds of 0.15 s
    assert gate.busy == 0 and gate.waiting == 0


def test_a_ctrl_c_while_queued_ends_the_wait_and_loses_no_slot():
    gate = StartGate(1)
    cancel = threading.Event()
    held = threading.Event()
    release = threading.Event()
    outcome: list[str] = []

    def holder() -> None:
        with gate.slot():
            held.set()
            release.wait(10)

    def queued() -> None:
        try:
            with gate.slot(cancel):
                outcome.append("got a slot")
        except Cancelled:
            outcome.append("cancelled")

    first = threading.Thread(target=holder)
    first.start()
    held.wait(5)
    second = threading.Thread(target=queued)
    second.start()
    time.sleep(0.3)
    assert gate.waiting == 1
    cancel.set()
    second.join(5)
    assert outcome == ["cancelled"] and gate.waiting == 0
    release.set()
    first.join(5)
    t0 = time.monotonic()
    with gate.slot() as waited_s:  # the slot came back
        assert waited_s < 0.1
    assert time.monotonic() - t0 < 0.5 and gate.busy == 0


def test_infra_retries_back_off_exponentially_with_jitter_so_failed_attempts_do_not_return_together():
    rng = random.Random(41)
    for retry, full in ((1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0), (9, 60.0), (40, 60.0)):
        draws = [retry_delay_s(retry, 2.0, 60.0, rng) for _ in range(200)]
        assert all(full / 2 <= d <= full for d in draws), (retry, min(draws), max(draws))
        assert max(draws) - min(draws) > full / 4  # spread over the jittered half, not one value
    # ten attempts that failed at the same moment come back at ten different moments
    moments = sorted(retry_delay_s(1, 2.0, 60.0, rng) for _ in range(10))
    assert min(b - a for a, b in zip(moments, moments[1:], strict=False)) > 0
    assert retry_delay_s(0, 2.0, 60.0) == 0.0


def test_a_run_stops_after_so_many_failed_starts_in_a_row_but_not_for_failures_amid_successes():
    breaker = StartBreaker(3)
    for _ in range(10):  # a failure now and then: the count starts again at each good start
        breaker.failed("sandbox setup failed: gateway did not listen within 60 s")
        breaker.failed("sandbox setup failed: gateway did not listen within 60 s")
        breaker.started()
    assert not breaker.stopped
    for n in range(3):
        breaker.failed(f"sandbox setup failed: failure {n}")
    assert breaker.stopped
    assert breaker.reason is not None and breaker.reason.startswith("3 sandbox starts failed in a row (the last: "
                                                                     "sandbox setup failed: failure 2)")
    assert "\n" not in breaker.reason and "rerun the same command" in breaker.reason


def test_host_policy_defaults_follow_the_cores_and_the_stop_rule_follows_the_slots():
    cores = len(os.sched_getaffinity(0))
    policy = HostPolicy()
    assert policy.start_slots == max(2, 2 * cores)
    assert policy.failed_starts_limit == max(6, 2 * policy.start_slots)
    assert HostPolicy(max_starts=10).failed_starts_limit == 20
    assert HostPolicy(max_starts=1, max_failed_starts=2).failed_starts_limit == 2
    assert policy.stall_timeout_s == 900
    assert start_gate(3) is start_gate(3) and start_gate(3) is not start_gate(4)  # one gate per size per process
    with pytest.raises(ValueError):
        HostPolicy(max_starts=0)


def test_stalled_is_its_own_outcome_retried_whenever_timeouts_are():
    assert AttemptReason("stalled") is AttemptReason.stalled is not AttemptReason.timeout
    assert RetryPolicy().retries(AttemptReason.stalled)  # the default retries timeouts, so stalls too
    assert not RetryPolicy(retry_on=[AttemptReason.no_report]).retries(AttemptReason.stalled)
    assert RetryPolicy(retry_on=[AttemptReason.stalled]).retries(AttemptReason.stalled)
    assert not RetryPolicy(retry_on=[AttemptReason.stalled]).retries(AttemptReason.timeout)
    # run.json of a run started before `stalled` existed keeps its run id: the default policy dumps as before
    assert "stalled" not in RetryPolicy().model_dump_json()


def test_drivers_on_one_host_share_its_start_slots(tmp_path):
    """Two drivers (two gates of 2 slots on one slot folder, as two processes have) start at most 2 at once between
    them, not 2 each."""
    gates = [StartGate(2, tmp_path), StartGate(2, tmp_path)]
    lock = threading.Lock()
    inside, peak = [0], [0]

    def attempt(gate: StartGate) -> None:
        with gate.slot():
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.1)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=attempt, args=(gates[n % 2],)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert peak[0] == 2 and inside[0] == 0


def test_a_killed_driver_holds_no_start_slot(tmp_path):
    """Another process holds every slot of the host: this one waits; once that process is killed (no clean exit),
    the kernel drops its slots and this one starts."""
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fds = [os.open({str(tmp_path)!r} + f'/slot-{{k}}.lock', os.O_RDWR | os.O_CREAT) for k in range(2)]\n"
        "[fcntl.flock(fd, fcntl.LOCK_EX) for fd in fds]\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        gate = StartGate(2, tmp_path)
        got: list[float] = []
        waiter = threading.Thread(target=lambda: got.extend([_hold(gate)]))
        waiter.start()
        time.sleep(0.8)
        assert not got  # both of the host's slots are taken by the other process
        holder.kill()
        waiter.join(10)
        assert got and got[0] >= 0.8
    finally:
        holder.kill()
        holder.wait()


def _hold(gate: StartGate) -> float:
    with gate.slot() as waited_s:
        return waited_s


def test_a_slot_folder_that_cannot_be_made_leaves_the_process_slots_in_force(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the slot folder should be")
    gate = StartGate(1, blocked / "slots")
    with gate.slot() as waited_s:  # no error: the process's own slot alone
        assert waited_s < 0.5 and gate.busy == 1
    assert gate.busy == 0
