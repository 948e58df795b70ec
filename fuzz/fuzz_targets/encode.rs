//! Any JSON document: bloom() and element_count() never panic, and every
//! filter built from the document's own scalar attributes passes both the
//! bloom test (no false negative) and the exact test.
#![no_main]
use alerts_core::bloom::{bloom, element_count};
use alerts_core::filter::Filter;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (Ok(bitmap), Ok(n)) = (bloom(&doc), element_count(&doc)) else {
        return;
    };
    assert!(bitmap.count_ones() as usize <= 7 * n.max(1) || n == 0 && bitmap.count_ones() == 0);
    let Value::Object(attrs) = &doc else {
        panic!("bloom accepted a non-object");
    };
    // One filter per attribute (its whole value), then all of them at once.
    let mut all = Map::new();
    for (k, v) in attrs {
        if v.is_null()
            || v.as_array()
                .is_some_and(|a| a.is_empty() || a.iter().any(|x| x.is_null()))
        {
            continue;
        }
        let single: Value = Value::Object([(k.clone(), v.clone())].into_iter().collect());
        check(&single, &doc, &bitmap);
        all.insert(k.clone(), v.clone());
    }
    check(&Value::Object(all), &doc, &bitmap);
});

fn check(filter: &Value, doc: &Value, bitmap: &alerts_core::Bitmap) {
    let Ok(f) = Filter::compile(filter) else {
        return; // e.g. an array inside a one-of array
    };
    assert!(
        f.bloom_match(&bitmap.0),
        "false negative: {filter} on {doc}"
    );
    assert_eq!(
        f.exact_match(doc).ok(),
        Some(true),
        "exact test rejects {filter} on {doc}"
    );
}
