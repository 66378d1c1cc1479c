//! Integration tests for `rtlat load`.
