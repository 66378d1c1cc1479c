//! Details of a `switch` result (filled in by the switch benchmark).
