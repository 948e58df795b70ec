//! Property tests of the bloom design, with fixed seeds so a failure repeats.

use alerts_core::bloom::{bloom, expected_fp_rate, positions, words_of};
use alerts_core::encoding::write_element;
use alerts_core::Filter;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

const KEYS: [&str; 8] = [
    "team", "service", "feature", "env", "region", "owner", "a:b", "ключ",
];

fn random_value(rng: &mut StdRng) -> Value {
    match rng.gen_range(0..10) {
        0 => json!(rng.gen_range(0..50)),
        1 => json!(rng.gen_bool(0.5)),
        2 => json!(format!("{}", rng.gen_range(0..50))),
        _ => json!(format!("v{}", rng.gen_range(0..200))),
    }
}

fn random_attrs(rng: &mut StdRng) -> Value {
    let mut m = Map::new();
    let count = rng.gen_range(0..=KEYS.len());
    let keys: Vec<&str> = KEYS.choose_multiple(rng, count).copied().collect();
    for k in keys {
        let v = if rng.gen_bool(0.3) {
            Value::Array(
                (0..rng.gen_range(0..4))
                    .map(|_| random_value(rng))
                    .collect(),
            )
        } else if rng.gen_bool(0.02) {
            Value::Null
        } else {
            random_value(rng)
        };
        m.insert(k.to_string(), v);
    }
    Value::Object(m)
}

/// A filter drawn from the row itself (so it must match), with random extra
/// one-of alternatives, or an unrelated random filter.
fn filter_from(rng: &mut StdRng, attrs: &Value) -> (Value, bool) {
    let obj = attrs.as_object().unwrap();
    let mut f = Map::new();
    let mut drawn = true;
    for (k, v) in obj {
        if !rng.gen_bool(0.5) {
            continue;
        }
        let picked = match v {
            Value::Array(items) if !items.is_empty() => items.choose(rng).unwrap().clone(),
            Value::Array(_) | Value::Null => {
                drawn = false;
                random_value(rng)
            }
            other => other.clone(),
        };
        if rng.gen_bool(0.4) {
            let mut alts: Vec<Value> = (0..rng.gen_range(0..3))
                .map(|_| random_value(rng))
                .collect();
            alts.push(picked);
            alts.shuffle(rng);
            f.insert(k.clone(), Value::Array(alts));
        } else {
            f.insert(k.clone(), picked);
        }
    }
    (Value::Object(f), drawn)
}

#[test]
fn no_false_negatives_on_a_million_rows() {
    let mut rng = StdRng::seed_from_u64(42);
    let mut exact_hits = 0u32;
    for i in 0..1_000_000 {
        let attrs = random_attrs(&mut rng);
        let bm = bloom(&attrs).unwrap();
        let (filter, drawn) = if i % 4 == 3 {
            (Value::Object(Map::new()), true)
        } else if i % 4 == 2 {
            // An unrelated filter: may or may not match; the bloom must never
            // reject what the exact test accepts.
            let other = random_attrs(&mut rng);
            filter_from(&mut rng, &other)
        } else {
            filter_from(&mut rng, &attrs)
        };
        let f = Filter::compile(&filter).unwrap();
        let exact = f.exact_match(&attrs).unwrap();
        if i % 4 != 2 && drawn {
            assert!(
                exact,
                "a filter drawn from the row must match: {attrs} {filter}"
            );
        }
        if exact {
            exact_hits += 1;
            assert!(f.bloom_match(&bm.0), "false negative: {attrs} {filter}");
        }
    }
    assert!(
        exact_hits > 500_000,
        "the generator should mostly draw matching filters, got {exact_hits}"
    );
}

/// Measured false-positive rate of single-value tests at n elements per row,
/// against (1 - e^(-kn/m))^k.
fn measured_fp_rate(n: usize, rows: usize, probes: usize, seed: u64) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut buf = Vec::new();
    let (mut hits, mut total) = (0u64, 0u64);
    for r in 0..rows {
        let mut m = Map::new();
        for e in 0..n {
            m.insert(
                format!("k{e}"),
                json!(format!("row{r}-{}", rng.gen::<u32>())),
            );
        }
        let bm = bloom(&Value::Object(m)).unwrap();
        let w = words_of(&bm.0);
        let keys: Vec<String> = (0..n).map(|e| format!("k{e}")).collect();
        let mut value = *b"probe-rrrr-pppp";
        value[6..10].copy_from_slice(&(r as u32).to_le_bytes());
        for p in 0..probes {
            // A value no row holds ("probe" prefix), on a key the row has.
            value[11..15].copy_from_slice(&(p as u32).to_le_bytes());
            write_element(&mut buf, &keys[p % n], b's', &value);
            let mut mask = [0u8; 64];
            for pos in positions(&buf) {
                mask[pos as usize / 8] |= 0x80 >> (pos % 8);
            }
            let mw = words_of(&mask);
            total += 1;
            if (0..8).all(|i| w[i] & mw[i] == mw[i]) {
                hits += 1;
            }
        }
    }
    hits as f64 / total as f64
}

#[test]
fn false_positive_rate_matches_the_formula() {
    for (n, rows, probes) in [
        (53usize, 2_000usize, 2_000usize),
        (30, 2_000, 20_000),
        (10, 4_000, 50_000),
    ] {
        let measured = measured_fp_rate(n, rows, probes, 7 + n as u64);
        let formula = expected_fp_rate(n as f64, 512);
        let ratio = measured / formula;
        println!("n={n}: measured {measured:.3e}, formula {formula:.3e}, ratio {ratio:.2}");
        assert!(
            (1.0 / 1.5..=1.5).contains(&ratio),
            "n={n}: measured {measured:.3e} vs formula {formula:.3e}"
        );
    }
}
