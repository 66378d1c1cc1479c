//! Integration tests for `rtlat report`.
