//! The fleet simulator (`mooncake-liveness simulate`): qualitative results on small fleets.

use mooncake_liveness::config::{CliOverrides, RawConfig};
use mooncake_liveness::sim::fleet::{
    parse_heartbeats, parse_policies, run, sweep, write_outputs, FalseOffboardCauses, HeartbeatEvent, Policy,
    PolicyReport, Scenario, SimOptions, SimReport, Traffic, Trouble,
};

/// A small fleet with light traffic (debug-mode tests).
fn small(seed: u64) -> SimOptions {
    SimOptions {
        clients: 200,
        duration_s: 150,
        seed,
        traffic: Traffic {
            puts_per_s: 40.0,
            gets_per_s: 80.0,
            max_objects: 3_000,
            ..Traffic::default()
        },
        ..SimOptions::default()
    }
}

fn policy(r: &SimReport, p: Policy) -> &PolicyReport {
    r.policies.iter().find(|x| x.policy == p).expect("policy ran")
}

fn healthy_lost(p: &PolicyReport) -> (u64, u64) {
    (
        p.healthy_falsely_offboarded.expect("ground truth"),
        p.objects_lost_to_false_offboarding.expect("ground truth"),
    )
}

/// Only client pauses, partitions, lost pings and crashes: no master-side stall.
fn no_master_stall() -> Trouble {
    Trouble {
        master_pauses: 0,
        heartbeat_blocks: 0,
        ..Trouble::default()
    }
}

fn causes(p: &PolicyReport) -> FalseOffboardCauses {
    p.false_offboard_causes.expect("ground truth")
}

#[test]
fn legacy_falsely_offboards_healthy_clients_that_rfc_keeps() {
    // No master-side stall: the difference is the TTLs alone (partitions of 12-20 s, pauses).
    let opts = SimOptions {
        trouble: Trouble {
            partition_fraction: 0.1,
            partition_min_s: 12.0,
            ..no_master_stall()
        },
        policies: vec![Policy::Legacy, Policy::Rfc],
        ..small(7)
    };
    let r = run(&opts, false);
    let (legacy, rfc) = (
        healthy_lost(policy(&r, Policy::Legacy)),
        healthy_lost(policy(&r, Policy::Rfc)),
    );
    assert!(legacy.0 >= 20, "both partitions outlast the legacy TTL: {}", r.table());
    assert!(legacy.1 > rfc.1, "rfc loses fewer objects: {}", r.table());
    assert_eq!(
        rfc.0,
        0,
        "every silence is shorter than active + suspicion: {}",
        r.table()
    );
    let l = policy(&r, Policy::Legacy);
    assert!(causes(l).partition >= 20, "{}", r.table());
    assert_eq!(causes(l).master_pause + causes(l).heartbeat_blocked, 0);
    assert_eq!(
        l.offboarded_then_heard_again, legacy.0,
        "every falsely offboarded client came back"
    );
    assert!(l.remounts >= legacy.0, "they remounted (main has no barrier)");
    assert!(l.reputs > 0, "the keys lost with them were recomputed");
    assert!(l.get_misses >= l.reputs, "a re-put follows a miss");
}

#[test]
fn default_trouble_tells_the_story_on_a_small_fleet() {
    // The stress trouble, with the heartbeat block and the master pause apart.
    let opts = SimOptions {
        trouble: Trouble {
            heartbeat_block_at_s: Some(40.0),
            master_pause_at_s: Some(90.0),
            ..Trouble::default()
        },
        ..small(11)
    };
    let r = run(&opts, false);
    let (legacy, rfc, brakes) = (
        healthy_lost(policy(&r, Policy::Legacy)),
        healthy_lost(policy(&r, Policy::Rfc)),
        healthy_lost(policy(&r, Policy::RfcBrakes)),
    );
    assert!(legacy.0 > rfc.0 && rfc.0 >= brakes.0, "{}", r.table());
    assert!(legacy.1 > rfc.1, "{}", r.table());
    let (l, b) = (policy(&r, Policy::Legacy), policy(&r, Policy::RfcBrakes));
    assert!(
        causes(l).heartbeat_blocked > 100,
        "the 13.8 s block expires the fleet: {}",
        r.table()
    );
    for p in &r.policies {
        // The real master expired no one over an 8-20 s SIGSTOP: buffered pings win the race.
        assert_eq!(causes(p).master_pause, 0, "{}: {}", p.policy, r.table());
        assert_eq!(p.states.len(), 150, "one sample per simulated second");
    }
    assert_eq!(b.stalls_credited, 1, "the master pause makes the next tick late");
    assert!(
        b.mass_suspicion_brake_engagements >= 1,
        "the heartbeat block suspects the fleet: {}",
        r.table()
    );
    assert!(l.get_misses > b.get_misses, "{}", r.table());
    assert!(l.incident_miss_rate > l.miss_rate, "misses concentrate in incidents");
    let table = r.table();
    for name in [
        "legacy@30s",
        "legacy@60s",
        "rfc+brakes",
        "by heartbeat_blocked",
        "by master_pause",
        "Get misses, incident windows",
        "Brakes fired",
        "crash -> Offline",
    ] {
        assert!(table.contains(name), "{table}");
    }
}

#[test]
fn every_policy_detects_every_real_crash_within_its_ttls() {
    let opts = SimOptions {
        trouble: Trouble {
            crash_fraction: 0.05,
            heartbeat_blocks: 0,
            ..Trouble::default()
        },
        ..small(3)
    };
    let r = run(&opts, false);
    let pause = r.workload.master_pauses[0];
    let (pause_from, pause_ms) = ((pause.at_s * 1000.0) as u64, (pause.duration_s * 1000.0) as u64 + 1_000);
    for p in &r.policies {
        assert_eq!(p.crashes, Some(10));
        assert_eq!(
            p.crashes_offline,
            Some(10),
            "{}: every crash detected: {}",
            p.policy,
            r.table()
        );
        let tick = if p.policy.is_legacy() { 1_000 } else { 100 };
        let ttl = ((p.active_ttl_s + p.suspicion_ttl_s) * 1000.0) as u64;
        for d in &p.crash_detections {
            let offline = d.offline_ms.expect("detected");
            // A master pause delays (no tick runs) or extends (rfc+brakes: credited) detection
            // only when it overlaps the detection window.
            let credit = if pause_from < offline && pause_from + pause_ms > d.last_ping_ms {
                pause_ms
            } else {
                0
            };
            let bound = d.last_ping_ms + ttl + tick + credit;
            assert!(offline <= bound, "{}: {d:?} offline after {bound}", p.policy);
            assert!(offline >= d.last_ping_ms + ttl, "{}: {d:?} offline early", p.policy);
            assert!(d.suspected_ms.unwrap() <= offline);
        }
    }
    let (l, b) = (policy(&r, Policy::Legacy), policy(&r, Policy::RfcBrakes));
    assert!(l.crash_to_offline.unwrap().median_s < b.crash_to_offline.unwrap().median_s);
}

fn master_pause_only(ticks_first: bool) -> SimOptions {
    SimOptions {
        clients: 200,
        duration_s: 120,
        trouble: Trouble {
            master_pauses: 1,
            master_pause_min_s: 12.0,
            master_pause_max_s: 12.0,
            master_pause_at_s: Some(50.0),
            master_pause_ticks_first: ticks_first,
            ..Trouble::none()
        },
        ..small(5)
    }
}

#[test]
fn a_master_pause_expires_no_one_when_the_buffered_pings_win() {
    // As the real master did over 8-20 s SIGSTOPs: pings buffered, applied before the check.
    let r = run(&master_pause_only(false), false);
    for p in &r.policies {
        assert_eq!(healthy_lost(p), (0, 0), "{}: {}", p.policy, r.table());
        assert_eq!(p.suspicions, 0, "{}: nobody is even suspected", p.policy);
    }
    let b = policy(&r, Policy::RfcBrakes);
    assert_eq!(b.stalls_credited, 1, "the stall brake sees the late tick");
    assert_eq!(policy(&r, Policy::Rfc).stalls_credited, 0);
}

#[test]
fn a_master_pause_whose_check_beats_the_pings_costs_legacy_the_clients_not_yet_queued() {
    // The race lost: the first check after the pause runs before the buffered pings. Main's
    // tick drains its queue before expiring, and the queue holds the pings that arrived since
    // the last tick before the pause: a pause starting half-way through main's 1 s tick expires
    // about the half of the fleet whose ping was still to come.
    let mut opts = master_pause_only(true);
    opts.trouble.master_pause_at_s = Some(50.5);
    let r = run(&opts, false);
    let l = policy(&r, Policy::Legacy);
    let lost = healthy_lost(l).0;
    assert!((60..=140).contains(&lost), "{}", r.table());
    assert_eq!(causes(l).master_pause, lost);
    assert_eq!(healthy_lost(policy(&r, Policy::Legacy30)), (0, 0), "12 s < 30 s");
    let rfc = policy(&r, Policy::Rfc);
    assert_eq!(healthy_lost(rfc), (0, 0), "the suspicion window absorbs it");
    assert!(
        rfc.suspected_then_recovered >= 180,
        "but the fleet was suspected: {}",
        r.table()
    );
    let b = policy(&r, Policy::RfcBrakes);
    assert_eq!(healthy_lost(b), (0, 0));
    assert_eq!(
        (b.suspicions, b.stalls_credited),
        (0, 1),
        "credited before anyone is suspected"
    );
    assert_eq!(b.get_misses, 0);
    // A pause that starts right at a tick: the queue holds a whole second of pings.
    let r = run(&master_pause_only(true), false);
    assert!(healthy_lost(policy(&r, Policy::Legacy)).0 <= 20, "{}", r.table());
}

fn heartbeat_block(fraction: f64) -> SimOptions {
    SimOptions {
        clients: 200,
        duration_s: 150,
        trouble: Trouble {
            heartbeat_blocks: 1,
            heartbeat_block_min_s: 50.0,
            heartbeat_block_max_s: 50.0,
            heartbeat_block_at_s: Some(40.0),
            heartbeat_block_fraction: fraction,
            ..Trouble::none()
        },
        ..small(6)
    }
}

#[test]
fn a_blocked_heartbeat_path_offboards_no_healthy_client_under_rfc_with_brakes() {
    // The Ping path blocked for 50 s (longer than 10 + 20 s) while the monitor runs on time.
    let r = run(&heartbeat_block(1.0), false);
    let b = policy(&r, Policy::RfcBrakes);
    assert_eq!(healthy_lost(b), (0, 0), "{}", r.table());
    assert_eq!(b.stalls_credited, 0, "the stall brake cannot see it: ticks are on time");
    assert!(
        b.mass_suspicion_brake_engagements >= 1,
        "the mass-suspicion brake holds it"
    );
    for p in [Policy::Legacy, Policy::Legacy30, Policy::Rfc] {
        let x = policy(&r, p);
        assert_eq!(healthy_lost(x).0, 200, "{p}: {}", r.table());
        assert_eq!(causes(x).heartbeat_blocked, 200);
    }
    assert_eq!(healthy_lost(policy(&r, Policy::Legacy60)).0, 0, "50 s < 60 s");
}

#[test]
fn a_blocked_heartbeat_path_for_a_minority_is_seen_by_no_brake() {
    // A known limit (core/src/docs/limitations.rs): 30 % of the fleet blocked is below the
    // mass-suspicion threshold and the monitor is on time.
    let r = run(&heartbeat_block(0.3), false);
    let b = policy(&r, Policy::RfcBrakes);
    assert_eq!(healthy_lost(b).0, 60, "{}", r.table());
    assert_eq!((b.stalls_credited, b.mass_suspicion_brake_engagements), (0, 0));
}

#[test]
fn scenarios_parse_and_label_the_report() {
    for s in Scenario::ALL {
        assert_eq!(s.name().parse::<Scenario>(), Ok(s));
        let opts = SimOptions {
            clients: 20,
            duration_s: 30,
            trouble: s.trouble(),
            policies: vec![Policy::Legacy],
            ..small(1)
        };
        assert_eq!(run(&opts, false).scenario, s.name());
    }
    assert_eq!(Scenario::default(), Scenario::Stress);
    assert!("calm".parse::<Scenario>().unwrap_err().contains("join-storm"));
}

#[test]
fn a_seed_determines_the_run() {
    let a = run(&small(9), false).to_json();
    let b = run(&small(9), false).to_json();
    assert_eq!(a, b);
    let c = run(&small(10), false).to_json();
    assert_ne!(a, c);
}

fn log_line(t_ms: u64, client: &str) -> String {
    format!(r#"{{"t_ms": {t_ms}, "client": "{client}"}}"#)
}

#[test]
fn heartbeat_logs_parse_and_errors_name_the_line() {
    let good = format!(
        "# recorded\n{}\n\n{}\n",
        log_line(1_700_000_000_000, "a"),
        r#"{"t_ms": 1700000001000, "client": "b", "status": "OK"}"#
    );
    let events = parse_heartbeats(&good).unwrap();
    assert_eq!(
        events,
        vec![
            HeartbeatEvent {
                t_ms: 1_700_000_000_000,
                client: "a".into()
            },
            HeartbeatEvent {
                t_ms: 1_700_000_001_000,
                client: "b".into()
            }
        ]
    );
    let bad = format!(
        "{}\n{}\n{{\"t_ms\": \"soon\", \"client\": \"b\"}}\n",
        log_line(0, "a"),
        log_line(1, "a")
    );
    let err = parse_heartbeats(&bad).unwrap_err();
    assert!(err.starts_with("line 3:"), "{err}");
    let err = parse_heartbeats(&format!("{}\n{{\"t_ms\": 5}}", log_line(0, "a"))).unwrap_err();
    assert!(err.starts_with("line 2:") && err.contains("client"), "{err}");
    assert!(parse_heartbeats("\n# nothing\n").is_err());
}

#[test]
fn heartbeat_mode_reports_what_happened_without_ground_truth() {
    // a: steady; b: silent 30-45 s (15 s), then back; c: gone at 50 s.
    let mut lines = Vec::new();
    for s in 0..120u64 {
        let t = 1_000_000 + s * 1_000;
        lines.push(log_line(t, "a"));
        if !(30..45).contains(&s) {
            lines.push(log_line(t + 300, "b"));
        }
        if s < 50 {
            lines.push(log_line(t + 600, "c"));
        }
    }
    let opts = SimOptions {
        heartbeats: Some(parse_heartbeats(&lines.join("\n")).unwrap()),
        policies: vec![Policy::Legacy, Policy::Rfc],
        ..small(1)
    };
    let r = run(&opts, false);
    assert_eq!(r.mode, "heartbeats");
    assert_eq!(r.clients, 3);
    let (l, rfc) = (policy(&r, Policy::Legacy), policy(&r, Policy::Rfc));
    assert_eq!(l.healthy_falsely_offboarded, None);
    assert_eq!(l.gets_to_unreachable, None);
    assert_eq!(
        (l.offboarded_clients, l.offboarded_then_heard_again),
        (2, 1),
        "{}",
        r.table()
    );
    assert_eq!(
        (rfc.offboarded_clients, rfc.offboarded_then_heard_again),
        (1, 0),
        "{}",
        r.table()
    );
    assert_eq!(rfc.suspected_then_recovered, 1);
    assert!(r.table().contains("n/a"));
}

#[test]
fn sweep_has_one_row_per_cell() {
    let opts = SimOptions {
        clients: 100,
        duration_s: 120,
        ..small(2)
    };
    let s = sweep(&opts, &[5.0, 10.0], &[10.0, 20.0], false);
    let cells: Vec<(f64, f64)> = s.cells.iter().map(|c| (c.active_ttl_s, c.suspicion_ttl_s)).collect();
    assert_eq!(cells, vec![(5.0, 10.0), (5.0, 20.0), (10.0, 10.0), (10.0, 20.0)]);
    let table = s.table();
    for label in ["5 + 10 s", "5 + 20 s", "10 + 10 s", "10 + 20 s"] {
        assert_eq!(table.lines().filter(|l| l.starts_with(label)).count(), 1, "{table}");
    }
    assert!(s.to_json().contains("\"cells\""));
}

#[test]
fn write_outputs_writes_markdown_json_and_svg() {
    let opts = SimOptions {
        clients: 50,
        duration_s: 60,
        ..small(4)
    };
    let r = run(&opts, false);
    let dir = std::env::temp_dir().join(format!("sim_simulate_outputs_{}", std::process::id()));
    write_outputs(&r, &dir).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.starts_with("# ") && md.contains("| rfc+brakes |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["policies"].as_array().unwrap().len(), 5);
    let svg = std::fs::read_to_string(dir.join("states.svg")).unwrap();
    assert!(
        svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
    assert!(svg.contains("rfc+brakes") && svg.contains("Suspected"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn policies_have_names() {
    for p in Policy::ALL {
        assert_eq!(p.name().parse::<Policy>(), Ok(p));
        assert_eq!(p.to_string(), p.name());
    }
    assert_eq!(
        parse_policies("rfc+brakes,legacy").unwrap(),
        vec![Policy::RfcBrakes, Policy::Legacy]
    );
    assert!("fast".parse::<Policy>().is_err());
    let o = SimOptions::default();
    let ttls: Vec<_> = Policy::ALL.iter().map(|p| p.legacy_ttl_ms(&o)).collect();
    assert_eq!(ttls, [Some(10_000), Some(30_000), Some(60_000), None, None]);
    let legacy = Policy::Legacy.config(&o);
    assert!(
        !legacy.stall_brake && !legacy.mass_suspicion_brake,
        "main's monitor decides"
    );
    let rfc = Policy::Rfc.config(&SimOptions::default());
    assert_eq!((rfc.active_ttl_ms, rfc.suspicion_ttl_ms), (10_000, 20_000));
    assert!(!rfc.stall_brake && !rfc.mass_suspicion_brake);
    let b = Policy::RfcBrakes.config(&SimOptions::default());
    assert!(b.stall_brake && b.mass_suspicion_brake);
}

#[test]
fn invalid_options_are_rejected() {
    let bad = SimOptions {
        config_flags: CliOverrides {
            client_active_ttl_sec: Some(-1.0),
            ..CliOverrides::default()
        },
        ..SimOptions::default()
    };
    assert_eq!(
        bad.validate().unwrap_err(),
        "--client_active_ttl_sec must be > 0, got -1"
    );
    let typo = SimOptions {
        config_file: Some(RawConfig::from_yaml_str("client_suspicion_ttl_sec: .nan").unwrap()),
        ..SimOptions::default()
    };
    assert_eq!(
        typo.validate().unwrap_err(),
        "client_suspicion_ttl_sec must be a finite number, got NaN"
    );
    assert!(SimOptions::default().validate().is_ok());
}

/// The built-in `stress` scenario (release: `cargo test --release --test sim_simulate -- --ignored`).
#[test]
#[ignore = "the full 2,000-client scenario; run in release"]
fn default_scenario() {
    let started = std::time::Instant::now();
    let r = run(&SimOptions::default(), false);
    eprintln!("{}\nwall time: {:?}", r.table(), started.elapsed());
    let (l, b) = (policy(&r, Policy::Legacy), policy(&r, Policy::RfcBrakes));
    assert!(causes(l).heartbeat_blocked > 1_000, "{}", r.table());
    assert_eq!(healthy_lost(b), (0, 0));
    for p in &r.policies {
        assert_eq!(causes(p).master_pause, 0, "{}", p.policy);
    }
    assert_eq!((b.stalls_credited, b.mass_suspicion_brake_engagements), (1, 1));
    // The README shows this run's table: it must be what the binary prints now, line for line
    // (it had drifted: 21,035 objects shown, 21,016 printed).
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let shown = readme
        .split("```text\n")
        .find(|block| block.starts_with("scenario stress"))
        .and_then(|block| block.split("```").next())
        .expect("README.md shows the stress scenario's table in a ```text block");
    assert_eq!(
        shown.trim_end(),
        r.table().trim_end(),
        "README.md's simulate table differs from what `simulate` prints now: regenerate it with \
         `cargo run --release -- simulate`"
    );
}
