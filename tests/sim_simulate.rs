//! The fleet simulator (`mooncake-liveness simulate`): qualitative results on small fleets.

use mooncake_liveness::sim::fleet::{
    parse_heartbeats, parse_policies, run, sweep, write_outputs, HeartbeatEvent, Policy, PolicyReport, SimOptions,
    SimReport, Traffic, Trouble,
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

#[test]
fn legacy_falsely_offboards_healthy_clients_that_rfc_keeps() {
    // No master stall: the difference is the TTLs alone (partitions of 12-20 s, GC pauses).
    let opts = SimOptions {
        trouble: Trouble {
            stall_s: 0.0,
            partition_fraction: 0.1,
            partition_min_s: 12.0,
            ..Trouble::default()
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
    assert!(legacy.0 > rfc.0, "{}", r.table());
    assert!(legacy.1 > rfc.1, "rfc loses fewer objects: {}", r.table());
    assert_eq!(
        rfc.0,
        0,
        "every silence is shorter than active + suspicion: {}",
        r.table()
    );
    let l = policy(&r, Policy::Legacy);
    assert_eq!(
        l.offboarded_then_heard_again, legacy.0,
        "every falsely offboarded client came back"
    );
    assert!(l.remounts >= legacy.0, "they remounted as new incarnations");
}

#[test]
fn default_trouble_tells_the_story_on_a_small_fleet() {
    let r = run(&small(11), false);
    let (legacy, rfc, brakes) = (
        healthy_lost(policy(&r, Policy::Legacy)),
        healthy_lost(policy(&r, Policy::Rfc)),
        healthy_lost(policy(&r, Policy::RfcBrakes)),
    );
    assert!(legacy.0 > rfc.0 && rfc.0 >= brakes.0, "{}", r.table());
    assert!(legacy.1 > rfc.1, "{}", r.table());
    let b = policy(&r, Policy::RfcBrakes);
    assert_eq!(b.false_offboard_causes.unwrap().master_stall, 0, "{}", r.table());
    assert_eq!(b.stalls_credited, 1);
    let l = policy(&r, Policy::Legacy);
    assert!(l.false_offboard_causes.unwrap().master_stall > 0, "{}", r.table());
    assert!(l.gets_failed > b.gets_failed, "{}", r.table());
    for p in &r.policies {
        assert_eq!(p.states.len(), 150, "one sample per simulated second");
    }
    let table = r.table();
    for name in [
        "legacy",
        "rfc",
        "rfc+brakes",
        "Healthy clients falsely offboarded",
        "crash -> Offline",
    ] {
        assert!(table.contains(name), "{table}");
    }
}

#[test]
fn rfc_detects_every_real_crash_within_its_ttls() {
    let opts = SimOptions {
        trouble: Trouble {
            crash_fraction: 0.05,
            ..Trouble::default()
        },
        ..small(3)
    };
    let r = run(&opts, false);
    let stall = r.workload.stall.expect("a stall");
    let (stall_from, stall_ms) = ((stall.at_s * 1000.0) as u64, (stall.duration_s * 1000.0) as u64 + 100);
    for p in &r.policies {
        assert_eq!(p.crashes, Some(10));
        assert_eq!(
            p.crashes_offline,
            Some(10),
            "{}: every crash detected: {}",
            p.policy,
            r.table()
        );
        let tick = 100;
        let ttl = ((p.active_ttl_s + p.suspicion_ttl_s) * 1000.0) as u64;
        for d in &p.crash_detections {
            let offline = d.offline_ms.expect("detected");
            // The stall delays (rfc: no tick runs) or extends (rfc+brakes: credited) detection
            // only when it overlaps the detection window.
            let credit = if stall_from < offline && stall_from + stall_ms > d.last_ping_ms {
                stall_ms
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

#[test]
fn rfc_with_brakes_loses_nothing_to_a_master_stall() {
    // Nothing but a 12 s master stall: legacy offboards most of the fleet for it.
    let opts = SimOptions {
        clients: 200,
        duration_s: 120,
        trouble: Trouble {
            stall_s: 12.0,
            stall_at_s: Some(50.0),
            ..Trouble::none()
        },
        ..small(5)
    };
    let r = run(&opts, false);
    let l = policy(&r, Policy::Legacy);
    let legacy = healthy_lost(l);
    assert!(legacy.0 >= 100, "the stall alone offboards under legacy: {}", r.table());
    assert_eq!(l.false_offboard_causes.unwrap().master_stall, legacy.0);
    assert!(legacy.1 > 0);
    let b = policy(&r, Policy::RfcBrakes);
    assert_eq!(healthy_lost(b), (0, 0), "{}", r.table());
    assert_eq!(b.suspicions, 0, "the stall is credited, nobody is even suspected");
    assert_eq!(b.stalls_credited, 1);
    assert_eq!(b.gets_failed, 0);
    let rfc = policy(&r, Policy::Rfc);
    assert_eq!(
        healthy_lost(rfc),
        (0, 0),
        "the suspicion window absorbs it: {}",
        r.table()
    );
    assert!(
        rfc.suspected_then_recovered >= 100,
        "but without the brake the fleet was suspected"
    );
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
    assert_eq!(json["policies"].as_array().unwrap().len(), 3);
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
    let legacy = Policy::Legacy.config(&SimOptions::default());
    assert_eq!(
        (legacy.active_ttl_ms, legacy.suspicion_ttl_ms),
        (10_000, legacy.monitor_tick_ms)
    );
    assert!(!legacy.stall_brake && !legacy.mass_suspicion_brake);
    let rfc = Policy::Rfc.config(&SimOptions::default());
    assert_eq!((rfc.active_ttl_ms, rfc.suspicion_ttl_ms), (10_000, 20_000));
    assert!(!rfc.stall_brake && !rfc.mass_suspicion_brake);
    let b = Policy::RfcBrakes.config(&SimOptions::default());
    assert!(b.stall_brake && b.mass_suspicion_brake);
}

#[test]
fn invalid_options_are_rejected() {
    let bad = SimOptions {
        active_ttl_s: Some(-1.0),
        ..SimOptions::default()
    };
    assert!(bad.validate().unwrap_err().contains("active TTL"));
    assert!(SimOptions::default().validate().is_ok());
}

/// The built-in scenario (release: `cargo test --release --test sim_simulate -- --ignored`).
#[test]
#[ignore = "the full 2,000-client scenario; run in release"]
fn default_scenario() {
    let started = std::time::Instant::now();
    let r = run(&SimOptions::default(), false);
    eprintln!("{}\nwall time: {:?}", r.table(), started.elapsed());
    let (l, b) = (policy(&r, Policy::Legacy), policy(&r, Policy::RfcBrakes));
    assert!(healthy_lost(l).0 > 1_000 && healthy_lost(b) == (0, 0));
}
