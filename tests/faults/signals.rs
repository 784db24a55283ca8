//! Faults: signals.
