//! Faults: applied.
