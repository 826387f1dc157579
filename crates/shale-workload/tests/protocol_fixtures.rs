//! The shared request fixtures of `peers/testdata/protocol/`, which the Go
//! and C++ harnesses' tests also read: every request parses into the typed
//! [`Request`] of its op and writes back the same JSON, and the op list of
//! `info.reply-fields.json` is the protocol's.

use std::path::{Path, PathBuf};

use serde_json::Value;
use shale_workload::protocol::{InfoReply, Op, Request, YcsbPhase, PROTOCOL_VERSION};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/testdata/protocol")
}

fn read_json(name: &str) -> Value {
    let path = fixtures().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ops of the protocol, in the order `info` lists them.
fn protocol_ops() -> Vec<String> {
    let fields = read_json("info.reply-fields.json");
    fields["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .map(|o| o.as_str().expect("an op name").to_string())
        .collect()
}

#[test]
fn every_request_fixture_is_a_typed_request_of_its_op() {
    let ops = protocol_ops();
    assert!(!ops.is_empty());
    for op in &ops {
        let name = format!("{op}.request.json");
        let json = read_json(&name);
        let request: Request = serde_json::from_value(json.clone())
            .unwrap_or_else(|e| panic!("{name} is not a typed request: {e}"));
        assert_eq!(request.protocol, PROTOCOL_VERSION, "{name}");
        assert_eq!(request.op.name(), op, "{name}");
        // Nothing in the fixture is lost or added by the Rust types.
        let back = serde_json::to_value(&request).expect("encodes");
        assert_eq!(back, json, "{name} does not round-trip");
        if let Op::Ycsb(r) = &request.op {
            assert_eq!(r.phase, YcsbPhase::Run, "{name}");
        }
    }
}

#[test]
fn the_fixture_op_list_is_the_protocols() {
    assert_eq!(
        protocol_ops(),
        ["info", "load", "inspect", "read", "dbbench", "ycsb"]
    );
    let fields = read_json("info.reply-fields.json");
    let always: Vec<String> = fields["always_served"]
        .as_array()
        .expect("always_served")
        .iter()
        .map(|o| o.as_str().expect("an op name").to_string())
        .collect();
    assert_eq!(always, InfoReply::required_ops());
    // An info reply has exactly the fixture's fields.
    let info = InfoReply {
        engine: "x".into(),
        version: "1".into(),
        configs: vec!["default".into()],
        direct_io: false,
        ops: InfoReply::required_ops(),
    };
    let v = serde_json::to_value(&info).expect("encodes");
    let mut have: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    let mut want: Vec<&str> = fields["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    have.sort_unstable();
    want.sort_unstable();
    assert_eq!(have, want);
    assert!(info.serves("read") && !info.serves("ycsb"));
}

#[test]
fn reply_fixtures_name_the_fields_of_the_typed_replies() {
    let ycsb = read_json("ycsb.reply-fields.json");
    let names = |v: &Value| -> Vec<String> {
        let mut n: Vec<String> = v
            .as_array()
            .expect("a list")
            .iter()
            .map(|s| s.as_str().expect("a name").to_string())
            .collect();
        n.sort();
        n
    };
    let run: Value = serde_json::to_value(shale_workload::protocol::YcsbReply {
        engine: String::new(),
        operations: 0,
        seconds: 0.0,
        ops_per_sec: 0.0,
        ops: Default::default(),
        pending_compaction_bytes_max: None,
        stall_count: None,
        stall_micros: None,
        gets: None,
        block_reads: None,
        level_lookups: None,
        level_misses: None,
        settings_ignored: Vec::new(),
    })
    .expect("encodes");
    let mut keys: Vec<String> = run.as_object().expect("object").keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, names(&ycsb["run"]["fields"]));
    let load: Value = serde_json::to_value(shale_workload::protocol::YcsbLoadReply {
        engine: String::new(),
        seconds: 0.0,
        settings_ignored: Vec::new(),
    })
    .expect("encodes");
    let mut keys: Vec<String> = load.as_object().expect("object").keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, names(&ycsb["load"]["fields"]));

    let dbbench = read_json("dbbench.reply-fields.json");
    let reply: Value = serde_json::to_value(shale_workload::protocol::DbBenchReply {
        engine: String::new(),
        results: Vec::new(),
        settle_seconds: 0.0,
    })
    .expect("encodes");
    let mut keys: Vec<String> = reply.as_object().expect("object").keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, names(&dbbench["fields"]));
}
