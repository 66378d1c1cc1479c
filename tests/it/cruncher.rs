//! Integration tests for `rtlat cruncher`.
