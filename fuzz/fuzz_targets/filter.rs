//! Any JSON filter: compiling never panics; when it compiles, the bloom test
//! and the exact test never panic on any document, and the exact test never
//! accepts a row the bloom test rejects (the bloom test is a superset).
#![no_main]
use alerts_core::bloom::bloom;
use alerts_core::filter::Filter;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // first line: the filter; the rest: a document
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let Ok(filter) = serde_json::from_slice::<Value>(&data[..split]) else {
        return;
    };
    let Ok(f) = Filter::compile(&filter) else {
        return;
    };
    let _ = Filter::single_mask(&filter);
    let doc = serde_json::from_slice::<Value>(data.get(split + 1..).unwrap_or_default())
        .unwrap_or(Value::Null);
    let Ok(bitmap) = bloom(&doc) else {
        return;
    };
    if f.exact_match(&doc) == Ok(true) {
        assert!(
            f.bloom_match(&bitmap.0),
            "exact but not bloom: {filter} on {doc}"
        );
    }
});
