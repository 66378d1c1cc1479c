//! Details of a `net` result (filled in by the net benchmark).
