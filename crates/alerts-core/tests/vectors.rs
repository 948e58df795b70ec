//! The core against the golden vectors the server computed
//! (`tests/vectors/v1.jsonl`, shared with the client encoders' tests): every
//! bitmap and mask the server returned, at each width, from the input's
//! JSON text. The server's refusals are not checked here: some come from
//! jsonb's own input rules (`\u0000`, lone surrogates), before the core.

use alerts_core::bloom::bloom;
use alerts_core::Filter;

#[test]
fn every_vector_the_server_answered() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/v1.jsonl");
    let text = std::fs::read_to_string(path).expect("tests/vectors/v1.jsonl");
    let (mut checked, mut skipped) = (0, 0);
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let (Some(fun), Some(output)) = (row["fn"].as_str(), row["output"].as_str()) else {
            continue;
        };
        if fun == "ulid_floor" {
            let ms = row["ms"].as_i64().expect("ms").max(0) as u64; // before 1970: zeros
            let got = alerts_core::ulid::floor(ms);
            assert_eq!(std::str::from_utf8(&got).unwrap(), output, "{line}");
            checked += 1;
            continue;
        }
        let input = row["input"].as_str().expect("input");
        let bits = row["bits"].as_u64().expect("bits") as usize;
        // The server reads a row's values one by one from the jsonb; parsed
        // here whole, a value nested to the limit inside a top-level array
        // (or object) is one level deeper than serde_json's limit: those few are the
        // SQL test's and the clients' to check.
        let Ok(value) = serde_json::from_str::<serde_json::Value>(input) else {
            skipped += 1;
            continue;
        };
        let bitmap = match fun {
            "bloom" => bloom(&value).expect("the server took it"),
            _ => Filter::single_mask(&value).expect("the server took it"),
        };
        let got: String = bitmap
            .folded(bits)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, output, "{line}");
        checked += 1;
    }
    assert!(checked > 150, "only {checked} vectors");
    assert!(
        skipped <= 12,
        "{skipped} vectors the core could not parse (4 inputs, 3 widths)"
    );
}
