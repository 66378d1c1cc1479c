//! Integration tests for `rtlat net`.
