//! Details of a `cruncher` result (filled in by the cruncher benchmark).
