//! Integration tests for `rtlat switch`.
