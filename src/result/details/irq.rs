//! Details of a `irq` result (filled in by the irq benchmark).
