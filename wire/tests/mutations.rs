//! Every captured body with every byte changed (to 0x00, 0xff and its value with the low bit
//! flipped), and every prefix of it, goes through its RPC's decoders: none panics, and whatever
//! still decodes survives encode → decode unchanged (the fuzz body's check, `fuzzing::decode_as`).
//! A deterministic neighbour of the fuzz target, run by `cargo test --features fuzzing`.

use mooncake_liveness_wire::frame::{split_request, REQUEST_HEADER_LEN, RESPONSE_HEADER_LEN};
use mooncake_liveness_wire::fuzzing::{decode_as, wire_decode};
use mooncake_liveness_wire::rpc::Function;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn mutated_and_truncated_captures_never_panic() {
    let mut bodies = 0;
    for line in include_str!("data/exchanges.jsonl").lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let request = hex(v["request"].as_str().unwrap());
        let Ok(Some(split)) = split_request(&request, 1 << 30) else {
            continue;
        };
        let Some(f) = Function::from_id(split.header.function_id) else {
            continue;
        };
        let reply = hex(v["reply"].as_str().unwrap());
        for body in [
            &request[REQUEST_HEADER_LEN..],
            reply.get(RESPONSE_HEADER_LEN..).unwrap_or(&[]),
        ] {
            bodies += 1;
            for cut in 0..body.len() {
                decode_as(f, &body[..cut]);
            }
            let mut m = body.to_vec();
            for i in 0..m.len() {
                let orig = m[i];
                for b in [0x00, 0xff, orig ^ 1] {
                    m[i] = b;
                    decode_as(f, &m);
                }
                m[i] = orig;
            }
        }
        // Whole frames too, and two of them back to back.
        let mut two = request.clone();
        two.extend_from_slice(&request);
        wire_decode(&two);
    }
    assert!(bodies >= 70, "{bodies}");
}
