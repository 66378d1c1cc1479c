//! Typed `details` of each benchmark's result: the figures that are not
//! latency series (lost wakes, packet counts, stretch …). In the file they
//! are the `details` object (schema version 1); each benchmark's type writes
//! it with [`Details::to_map`] and readers get it back with
//! [`Details::of`], so a renamed field is a compile error, not a silent gap.

pub mod cruncher;
pub mod irq;
pub mod net;
pub mod noise;
pub mod switch;
pub mod watch;

use super::RunResult;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// A benchmark's details record.
pub trait Details: Serialize + DeserializeOwned {
    /// The record as the result's `details` object.
    fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// The record of a result, if its `details` hold one.
    fn of(result: &RunResult) -> Option<Self> {
        serde_json::from_value(Value::Object(result.details.clone())).ok()
    }
}

/// A record's keys in its map, sorted, after checking that the map reads back as the record.
#[cfg(test)]
pub(crate) fn keys_read_back<D: Details + PartialEq + std::fmt::Debug>(d: &D) -> Vec<String> {
    let m = d.to_map();
    let mut keys: Vec<String> = m.keys().cloned().collect();
    keys.sort_unstable();
    let back: D = serde_json::from_value(Value::Object(m)).expect("reads back");
    assert_eq!(&back, d);
    keys
}
