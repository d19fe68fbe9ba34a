//! The wheel's unit and property tests.

use super::*;
use proptest::prelude::*;

/// Polls to `now` and returns what fired.
fn poll(wheel: &mut Wheel<u64>, now: u64) -> Vec<u64> {
    let mut out = Vec::new();
    wheel.poll_expired(Tick(now), &mut out);
    out
}

#[test]
fn constants_are_consistent() {
    assert_eq!(SLOTS_PER_LEVEL, 128);
    assert_eq!(MAX_DURATION_TICKS, 64u64.pow(NUM_LEVELS as u32) - 1);
    assert_eq!(level_for(Tick(0), Tick(MAX_DURATION_TICKS)), NUM_LEVELS - 1);
}

#[test]
fn level_for_from_zero() {
    // From 0, level `i` holds `when < 2 * 64^(i + 1)` (its current and next block).
    for when in 1..128 {
        assert_eq!(level_for(Tick(0), Tick(when)), 0, "when {when}");
    }
    for level in 1..NUM_LEVELS {
        let first = 2u64 << (level as u32 * LEVEL_BITS);
        assert_eq!(level_for(Tick(0), Tick(first)), level, "when {first}");
        assert_eq!(level_for(Tick(0), Tick(first - 1)), level - 1, "when {first}-1");
        assert_eq!(level_for(Tick(0), Tick(2 * first - 1)), level, "when 2*{first}-1");
    }
}

#[test]
fn level_for_table() {
    // (elapsed, when, expected level): the current-or-next block boundaries of each level.
    let table: &[(u64, u64, usize)] = &[
        (0, 1, 0),
        (0, 127, 0),
        (0, 128, 1),
        (0, 8_191, 1),
        (0, 8_192, 2),
        (0, (1 << 19) - 1, 2),
        (0, 1 << 19, 3),
        (0, (1 << 25) - 1, 3),
        (0, 1 << 25, 4),
        (0, (1 << 31) - 1, 4),
        (0, 1 << 31, 5),
        (0, MAX_DURATION_TICKS, 5),
        // Levels follow aligned blocks, not distances.
        (63, 64, 0),
        (63, 127, 0),
        (63, 128, 1),
        (64, 191, 0),
        (64, 192, 1),
        (4_095, 4_096, 0),
        (4_095, 4_160, 1),
        (12_345, 12_346, 0),
        (12_345, 12_415, 0),
        (12_345, 12_416, 1),
        (12_345, 20_479, 1),
        (12_345, 20_480, 2),
        (12_345, 12_345 + MAX_DURATION_TICKS, NUM_LEVELS - 1),
        (MAX_DURATION_TICKS, MAX_DURATION_TICKS + 1, 0),
    ];
    for &(elapsed, when, level) in table {
        assert_eq!(
            level_for(Tick(elapsed), Tick(when)),
            level,
            "elapsed {elapsed} when {when}"
        );
    }
}

#[test]
fn a_full_level_1_slot_cascades_one_64th_per_tick() {
    // 64 000 entries in level-1 slot 5 (ticks 320..384), filed at 0. The slot becomes the
    // next one at tick 256 and must be empty by the end of the poll at 319.
    const N: u64 = 64_000;
    let mut wheel = Wheel::new(Tick(0));
    for i in 0..N {
        wheel.insert(Tick(320 + i % 64), i);
    }
    let mut max_refiled = 0;
    let mut fired = 0;
    for now in 1..400u64 {
        let got = poll(&mut wheel, now);
        max_refiled = max_refiled.max(wheel.refiled_last_poll);
        if (256..320).contains(&now) {
            assert!(wheel.refiled_last_poll > 0, "tick {now} moved nothing");
        } else {
            assert_eq!(wheel.refiled_last_poll, 0, "tick {now} moved entries");
        }
        if (320..384).contains(&now) {
            let want: Vec<u64> = (0..N).filter(|i| 320 + i % 64 == now).collect();
            assert_eq!(got, want, "tick {now}: exact tick, insertion order");
        } else {
            assert!(got.is_empty(), "tick {now}");
        }
        fired += got.len() as u64;
    }
    assert_eq!(fired, N);
    assert!(max_refiled <= (N / 64 + 1) as usize, "a tick re-filed {max_refiled}");
}

#[test]
fn a_level_2_slot_is_spread_over_4096_ticks() {
    // 40 960 entries in level-2 slot 3 (ticks 12 288..16 384), filed at 0; the slot is next
    // from tick 8 192. Later they pass through level 1, 1/64 of a level-1 slot per tick.
    const N: u64 = 40_960;
    let mut wheel = Wheel::new(Tick(0));
    for i in 0..N {
        wheel.insert(Tick(12_288 + (i * 97) % 4_096), i);
    }
    let (mut max_refiled, mut fired) = (0, 0);
    for now in 1..16_400u64 {
        let got = poll(&mut wheel, now);
        max_refiled = max_refiled.max(wheel.refiled_last_poll);
        assert!(got.iter().all(|i| 12_288 + (i * 97) % 4_096 == now), "tick {now}");
        fired += got.len() as u64;
    }
    assert_eq!(fired, N);
    // Level 2 → 1: 10 per tick; level 1 → 0: 640 per level-1 slot / 64 = 10 per tick.
    assert!(
        max_refiled <= 2 * ((N / 4_096) as usize + 1),
        "a tick re-filed {max_refiled}"
    );
}

const STARTS: [u64; 6] = [0, 1, 63, 12_345, MAX_DURATION_TICKS, 1 << 40];
const DISTANCES: [u64; 14] = [
    1,
    2,
    63,
    64,
    65,
    4_095,
    4_096,
    4_097,
    262_143,
    262_144,
    16_777_216,
    1_073_741_825,
    MAX_DURATION_TICKS - 1,
    MAX_DURATION_TICKS,
];

#[test]
fn fires_exactly_at_when() {
    for start in STARTS {
        for distance in DISTANCES {
            let when = start + distance;
            let mut wheel = Wheel::new(Tick(start));
            wheel.insert(Tick(when), when);
            assert!(poll(&mut wheel, when - 1).is_empty(), "{start}+{distance} early");
            assert_eq!(wheel.len(), 1);
            assert_eq!(poll(&mut wheel, when), vec![when], "{start}+{distance}");
            assert!(wheel.is_empty());
            assert_eq!(wheel.next_expiration(), None);
        }
    }
}

#[test]
fn fires_exactly_at_when_stepping_by_next_expiration() {
    for start in STARTS {
        for distance in DISTANCES {
            let when = start + distance;
            let mut wheel = Wheel::new(Tick(start));
            wheel.insert(Tick(when), when);
            let mut steps = 0;
            loop {
                let next = wheel.next_expiration().expect("entry lost").0;
                assert!(next <= when, "{start}+{distance}: hint {next} late");
                let fired = poll(&mut wheel, next);
                if !fired.is_empty() {
                    assert_eq!((fired, next), (vec![when], when), "{start}+{distance}");
                    break;
                }
                steps += 1;
                assert!(steps <= NUM_LEVELS, "{start}+{distance}: too many steps");
            }
        }
    }
}

#[test]
fn fires_exactly_at_when_stepping_one_tick() {
    for start in [0, 1, 63, 12_345] {
        for distance in [1, 63, 64, 65, 4_095, 4_096, 4_097] {
            let when = start + distance;
            let mut wheel = Wheel::new(Tick(start));
            wheel.insert(Tick(when), when);
            for now in start + 1..when {
                assert!(poll(&mut wheel, now).is_empty(), "{start}+{distance} at {now}");
            }
            assert_eq!(poll(&mut wheel, when), vec![when], "{start}+{distance}");
        }
    }
}

#[test]
fn later_entries_of_a_reached_slot_cascade_instead_of_firing() {
    let mut wheel = Wheel::new(Tick(0));
    // Level-1 slot [64, 128) and level-2 slot [4096, 8192).
    for when in [64, 100, 127, 4_096, 5_000] {
        wheel.insert(Tick(when), when);
    }
    assert_eq!(poll(&mut wheel, 80), vec![64]);
    assert_eq!(wheel.len(), 4);
    assert_eq!(poll(&mut wheel, 4_500), vec![100, 127, 4_096]);
    assert_eq!(poll(&mut wheel, 4_999), Vec::<u64>::new());
    assert_eq!(poll(&mut wheel, 5_000), vec![5_000]);
}

#[test]
fn big_jump_fires_everything_due_and_nothing_else() {
    let now = 1u64 << 40;
    let start = now - (1 << 35) - 3;
    let mut wheel = Wheel::new(Tick(start));
    let mut due: Vec<u64> = DISTANCES.iter().map(|d| start + d).filter(|&w| w <= now).collect();
    due.extend([start - 1, start, now - 1, now]);
    let later = [now + 1, now + 64, now + 1_000_000, start + MAX_DURATION_TICKS];
    for when in due.iter().chain(&later) {
        wheel.insert(Tick(*when), *when);
    }
    due.sort_unstable();
    assert_eq!(poll(&mut wheel, now), due);
    assert_eq!(wheel.elapsed(), Tick(now));
    assert_eq!(wheel.len(), later.len());
    assert_eq!(poll(&mut wheel, now + MAX_DURATION_TICKS), later.to_vec());
}

#[test]
fn insert_at_or_before_elapsed_fires_on_next_poll() {
    let mut wheel = Wheel::new(Tick(1_000));
    wheel.insert(Tick(1_000), 1_000);
    wheel.insert(Tick(3), 3);
    wheel.insert(Tick(0), 0);
    wheel.insert(Tick(3), 33);
    wheel.insert(Tick(1_001), 1_001);
    assert_eq!(wheel.next_expiration(), Some(Tick(0)));
    // Polling at or before `elapsed` does not move time but returns the due items.
    assert_eq!(poll(&mut wheel, 10), vec![0, 3, 33, 1_000]);
    assert_eq!(wheel.elapsed(), Tick(1_000));
    assert_eq!(poll(&mut wheel, 1_000), Vec::<u64>::new());
    assert_eq!(poll(&mut wheel, 1_001), vec![1_001]);
}

#[test]
fn fires_in_nondecreasing_when_order_ties_in_insertion_order() {
    let mut wheel = Wheel::new(Tick(5));
    let whens = [900_000, 70, 64, 4_200, 6, 70, 300_000, 64, 70, 5_000_000, 6];
    for (seq, when) in whens.iter().enumerate() {
        wheel.insert(Tick(*when), (*when << 8) | seq as u64);
    }
    let fired = poll(&mut wheel, 10_000_000);
    let mut expected: Vec<u64> = whens
        .iter()
        .enumerate()
        .map(|(seq, when)| (when << 8) | seq as u64)
        .collect();
    expected.sort_unstable();
    assert_eq!(fired, expected);
}

#[test]
fn far_future_is_clamped_to_range_end_never_late() {
    for start in [0, 12_345, (1 << 36) - 1, u64::MAX - 10] {
        let mut wheel = Wheel::new(Tick(start));
        let range_end = start.saturating_add(MAX_DURATION_TICKS);
        wheel.insert(Tick(u64::MAX), 1);
        wheel.insert(Tick(start.saturating_add(5 * MAX_DURATION_TICKS)), 2);
        if range_end > start + 1 {
            assert!(poll(&mut wheel, range_end - 1).is_empty(), "start {start}");
        }
        assert_eq!(poll(&mut wheel, range_end), vec![1, 2], "start {start}");
    }
}

#[test]
fn next_expiration_is_a_lower_bound() {
    let mut wheel = Wheel::new(Tick(0));
    assert_eq!(wheel.next_expiration(), None);
    wheel.insert(Tick(200), 200); // level-1 slot 3, which starts at 192
    assert_eq!(wheel.next_expiration(), Some(Tick(192)));
    wheel.insert(Tick(10), 10);
    assert_eq!(wheel.next_expiration(), Some(Tick(10)));
    assert_eq!(poll(&mut wheel, 70), vec![10]);
    assert_eq!(wheel.next_expiration(), Some(Tick(192)));
    assert_eq!(poll(&mut wheel, 191), Vec::<u64>::new()); // cascaded by now
    assert_eq!(wheel.next_expiration(), Some(Tick(200)));
}

#[test]
fn jump_over_a_billion_empty_ticks_visits_few_slots() {
    let mut wheel = Wheel::new(Tick(3));
    assert!(poll(&mut wheel, 1_000_000_000).is_empty());
    assert_eq!(wheel.slots_visited, 0);
    let whens = [1_000_000_005, 1_000_070_000, 1_900_000_000, 1_000_000_000 + (1 << 35)];
    for when in whens {
        wheel.insert(Tick(when), when);
    }
    // Each entry is fired once and cascaded at most NUM_LEVELS - 1 times; each poll looks up
    // at most one slot it does not process. Walking the ticks would take ~10^9 steps.
    let polls = [2_000_000_000, 1 << 40, 1 << 60];
    let bound = (whens.len() * NUM_LEVELS + polls.len()) as u64;
    assert_eq!(poll(&mut wheel, polls[0]), whens[..3].to_vec());
    assert!(wheel.slots_visited <= bound, "{}", wheel.slots_visited);
    assert_eq!(poll(&mut wheel, polls[1]), whens[3..].to_vec());
    assert!(poll(&mut wheel, polls[2]).is_empty());
    assert!(wheel.slots_visited <= bound, "{}", wheel.slots_visited);
}

#[derive(Clone, Debug)]
enum Op {
    /// Insert at `elapsed + delta` (`delta <= 0`: in the past).
    Insert(i64),
    /// Poll at `elapsed + delta` (`delta < 0`: backwards, a no-op apart from due items).
    Poll(i64),
}

fn delta() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -3i64..200,
        2 => -5_000i64..300_000,
        1 => -1_000i64..=MAX_DURATION_TICKS as i64,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => delta().prop_map(Op::Insert),
        2 => delta().prop_map(Op::Poll),
    ]
}

/// Reference: every `(when, seq)` still pending; a poll at `now` fires all `when <= now`
/// sorted by `(when, seq)`.
fn reference_poll(pending: &mut Vec<(u64, u64)>, now: u64) -> Vec<u64> {
    // `now` here is already max(poll tick, elapsed): due items fire on any poll.
    let (mut fired, rest): (Vec<_>, Vec<_>) = pending.iter().partition(|(w, _)| *w <= now);
    *pending = rest;
    fired.sort_unstable();
    fired.into_iter().map(|(_, seq)| seq).collect()
}

fn at(elapsed: u64, delta: i64) -> u64 {
    elapsed.saturating_add_signed(delta)
}

proptest! {
    #[test]
    fn matches_reference_model(
        start in prop_oneof![0u64..200, 0u64..(1 << 40)],
        ops in prop::collection::vec(op(), 1..200),
    ) {
        let mut wheel = Wheel::new(Tick(start));
        let mut pending = Vec::new();
        for (seq, op) in ops.into_iter().enumerate() {
            let elapsed = wheel.elapsed().0;
            match op {
                Op::Insert(d) => {
                    wheel.insert(Tick(at(elapsed, d)), seq as u64);
                    pending.push((at(elapsed, d), seq as u64));
                }
                Op::Poll(d) => {
                    let now = at(elapsed, d);
                    let fired = poll(&mut wheel, now);
                    prop_assert_eq!(fired, reference_poll(&mut pending, now.max(elapsed)));
                    prop_assert_eq!(wheel.elapsed().0, now.max(elapsed));
                }
            }
            prop_assert_eq!(wheel.len(), pending.len());
            let earliest = pending.iter().map(|(w, _)| *w).min();
            let hint = wheel.next_expiration().map(|t| t.0);
            prop_assert_eq!(hint.is_some(), earliest.is_some());
            prop_assert!(hint <= earliest, "hint {:?} after {:?}", hint, earliest);
        }
        let fired = poll(&mut wheel, u64::MAX);
        prop_assert_eq!(fired, reference_poll(&mut pending, u64::MAX));
    }
}

proptest! {
    /// Stepping one tick at a time with inserts in between: every entry fires exactly at its
    /// tick (never late, never early), and no poll re-files more than 1/64 of what the wheel
    /// holds (plus rounding per level) — the pacing bound for slots that became "next" while
    /// the wheel was being stepped tick by tick.
    #[test]
    fn stepping_one_tick_fires_on_time_and_paces_cascades(
        block in 0u64..1_000,
        batches in prop::collection::vec(
            (0u64..200, prop::collection::vec(1u64..8_000, 0..300)),
            1..12,
        ),
    ) {
        let start = block << 12; // aligned to a level-2 slot: every slot gets its full pace
        let mut wheel = Wheel::new(Tick(start));
        let mut pending: Vec<u64> = Vec::new(); // whens
        let mut now = start;
        for (ticks, distances) in batches {
            for d in distances {
                wheel.insert(Tick(now + d), now + d);
                pending.push(now + d);
            }
            for _ in 0..ticks {
                now += 1;
                let held = wheel.len();
                let fired = poll(&mut wheel, now);
                prop_assert!(fired.iter().all(|&w| w == now), "tick {}: {:?}", now, fired);
                let due = pending.iter().filter(|&&w| w == now).count();
                prop_assert_eq!(fired.len(), due, "tick {}", now);
                pending.retain(|&w| w != now);
                let bound = held / 64 + NUM_LEVELS;
                prop_assert!(wheel.refiled_last_poll <= bound,
                    "tick {} re-filed {} of {}", now, wheel.refiled_last_poll, held);
            }
        }
        prop_assert_eq!(wheel.len(), pending.len());
    }
}

#[test]
fn pull_in_makes_later_entries_due_at_the_limit_and_keeps_earlier_ones() {
    let mut wheel = Wheel::new(Tick(10));
    // Entries in levels 0, 1, 2 and 3, plus one already due.
    for when in [12u64, 50, 300, 5_000, 400_000, 5] {
        wheel.insert(Tick(when), when);
    }
    wheel.pull_in(Tick(100));
    assert_eq!(wheel.len(), 6);
    assert_eq!(poll(&mut wheel, 11), [5], "the due entry still fires at once");
    assert_eq!(poll(&mut wheel, 12), [12]);
    assert_eq!(poll(&mut wheel, 50), [50]);
    assert!(
        poll(&mut wheel, 99).is_empty(),
        "nothing pulled in fires before the limit"
    );
    assert_eq!(
        poll(&mut wheel, 100),
        [300, 5_000, 400_000],
        "insertion order at the limit"
    );
    assert!(wheel.is_empty());
    // A limit at or before `elapsed` makes everything due at the next poll.
    wheel.insert(Tick(500), 500);
    wheel.pull_in(Tick(100));
    assert_eq!(poll(&mut wheel, 100), [500]);
}

#[test]
fn len_and_is_empty_follow_inserts_and_fires() {
    let mut wheel = Wheel::new(Tick(0));
    assert!(wheel.is_empty());
    wheel.insert(Tick(5), 5);
    wheel.insert(Tick(0), 0); // due at once
    assert_eq!(wheel.len(), 2);
    assert!(!wheel.is_empty());
    assert_eq!(poll(&mut wheel, 4), [0]);
    assert_eq!(wheel.len(), 1);
    assert!(!wheel.is_empty());
    assert_eq!(poll(&mut wheel, 5), [5]);
    assert!(wheel.is_empty());
}

#[test]
fn slots_visited_counts_every_slot_looked_up() {
    let mut wheel = Wheel::new(Tick(0));
    wheel.insert(Tick(5), 5);
    assert!(poll(&mut wheel, 3).is_empty());
    assert_eq!(wheel.slots_visited, 1, "slot 5 looked up, due after `now`");
    assert_eq!(poll(&mut wheel, 5), [5]);
    assert_eq!(
        wheel.slots_visited, 2,
        "slot 5 looked up and fired; then the wheel is empty"
    );
}

#[test]
fn debug_shows_time_length_due_list_and_next_expiration() {
    let mut wheel = Wheel::new(Tick(10));
    wheel.insert(Tick(200), 200);
    wheel.insert(Tick(3), 3);
    assert_eq!(
        format!("{wheel:?}"),
        "Wheel { elapsed: Tick(10), len: 2, due: 1, next_expiration: Some(Tick(3)), .. }"
    );
}
